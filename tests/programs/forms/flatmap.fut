-- `flatmap` and `flatmap'`: each element's array may have its own length;
-- the results are Futhark's segmented layout (lengths, a flag starting
-- each nonempty segment, offsets, the arrays one after another) and the
-- other results.
-- ==
-- entry: ranges
-- input { [3i64, 0i64, 2i64] }
-- output { [3i64, 0i64, 2i64] [true, false, false, true, false] [0i64, 3i64, 3i64]
--          [0i64, 1i64, 2i64, 0i64, 1i64] [9i64, 0i64, 4i64] }
-- input { empty([0]i64) }
-- output { empty([0]i64) empty([0]bool) empty([0]i64) empty([0]i64) empty([0]i64) }

entry ranges (ks: []i64) = flatmap (\k -> (iota k, k * k)) ks

-- Rows whose length only the arguments know, and `flatmap'`.
-- ==
-- entry: repeated_rows
-- input { [[1, 2], [3, 4], [5, 6]] [1i64, 2i64, 0i64] }
-- output { [1i64, 2i64, 0i64] [true, true, false] [0i64, 1i64, 3i64]
--          [[1, 2], [3, 4], [3, 4]] }

entry repeated_rows (xss: [][]i32) (ks: []i64) =
  flatmap' (\(xs, k) -> replicate k xs) (zip xss ks)

-- Inside a map: each row its own flatmap.
-- ==
-- entry: per_row
-- input { [[1i64, 2i64], [0i64, 3i64]] } output { [4i64, 6i64] [2i64, 1i64] }

entry per_row (kss: [][]i64) : ([]i64, []i64) =
  unzip (map (\ks -> let (_, flags, _, data) = flatmap' (\k -> iota k |> map (+ 1)) ks
                     in (i64.sum data, i64.sum (map i64.bool flags)))
             kss)
