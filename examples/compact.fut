-- Stream compaction: keep the elements of an array that satisfy a
-- predicate (here: the positive i32s), in their original order.  `main`
-- uses the prelude's `filter`; `by_scatter` builds the same result the way
-- GPU code does: an inclusive scan of 0/1 flags gives every kept element its
-- position in the output, the last prefix sum is the output's length, and
-- `scatter` writes each kept element to its position (dropped elements get
-- position -1, which `scatter` ignores).  Both entry points run on the same
-- cases; with nothing to keep, or no input, the result is empty.
-- ==
-- entry: main by_scatter
-- input { [3, -1, 4, -1, -5, 9, 2, -6] }
-- output { [3, 4, 9, 2] }
-- input { [-1, -2, 0] }
-- output { empty([0]i32) }
-- input { [1, 2, 3] }
-- output { [1, 2, 3] }
-- input { [0, 7] }
-- output { [7] }
-- input { empty([0]i32) }
-- output { empty([0]i32) }
-- random input { [10000]i32 }

entry main [n] (xs: [n]i32) : []i32 =
  filter (> 0) xs

entry by_scatter [n] (xs: [n]i32) : []i32 =
  let keep = map (> 0) xs
  let offsets = scan (+) 0 (map i64.bool keep)
  let m = if n == 0 then 0 else offsets[n - 1]
  let positions = map2 (\k o -> if k then o - 1 else -1) keep offsets
  in scatter (replicate m 0) positions xs
