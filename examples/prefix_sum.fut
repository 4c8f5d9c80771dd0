-- Prefix sums with `scan`.  `main` is the inclusive prefix sum of an i32
-- array (element i is xs[0] + ... + xs[i]); `exclusive` shifts it by one
-- (element i sums the elements before i, so it starts at 0); `segmented`
-- restarts the sum wherever a flag is true, the classic segmented scan
-- written as an ordinary scan over (flag, value) pairs with an associative
-- operator; `running_max` scans with `i32.max` and its neutral element
-- `i32.lowest`.  Empty arrays give empty arrays.
-- ==
-- entry: main
-- input { [1, 2, 3, 4, 5] }
-- output { [1, 3, 6, 10, 15] }
-- input { [5, -5, 5, -5] }
-- output { [5, 0, 5, 0] }
-- input { [42] }
-- output { [42] }
-- input { empty([0]i32) }
-- output { empty([0]i32) }
-- random input { [1000]i32 }
-- random input { [10000]i32 }

-- ==
-- entry: exclusive
-- input { [1, 2, 3, 4, 5] }
-- output { [0, 1, 3, 6, 10] }
-- input { [7] }
-- output { [0] }
-- input { empty([0]i32) }
-- output { empty([0]i32) }

-- ==
-- entry: segmented
-- input { [true, false, false, true, false, true]
--         [1, 2, 3, 4, 5, 6] }
-- output { [1, 3, 6, 4, 9, 6] }
-- input { [false, false, true] [1, 1, 1] }
-- output { [1, 2, 1] }
-- input { [true, true, true] [3, 2, 1] }
-- output { [3, 2, 1] }
-- input { empty([0]bool) empty([0]i32) }
-- output { empty([0]i32) }

-- ==
-- entry: running_max
-- input { [3, 1, 4, 1, 5, 9, 2, 6] }
-- output { [3, 3, 4, 4, 5, 9, 9, 9] }
-- input { [-7, -9, -8] }
-- output { [-7, -7, -7] }
-- input { empty([0]i32) }
-- output { empty([0]i32) }

-- | Inclusive prefix sum.
def prefix_sum [n] (xs: [n]i32) : [n]i32 =
  scan (+) 0 xs

entry main [n] (xs: [n]i32) : [n]i32 =
  prefix_sum xs

-- | Exclusive prefix sum: the inclusive one minus each element.
entry exclusive [n] (xs: [n]i32) : [n]i32 =
  map2 (-) (prefix_sum xs) xs

-- | The segmented-scan operator: a set flag on the right-hand operand
-- starts a new segment, so the left-hand sum is dropped.
def seg_add (f1: bool, x1: i32) (f2: bool, x2: i32) : (bool, i32) =
  (f1 || f2, if f2 then x2 else x1 + x2)

entry segmented [n] (flags: [n]bool) (xs: [n]i32) : [n]i32 =
  let (_, sums) = unzip (scan seg_add (false, 0) (zip flags xs))
  in sums

entry running_max [n] (xs: [n]i32) : [n]i32 =
  scan i32.max i32.lowest xs
