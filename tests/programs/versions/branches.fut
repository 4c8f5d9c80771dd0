-- Rule G8: a map whose body ends in an `if` on a condition every point
-- shares becomes, as its flat version, an `if` of two maps, each then
-- flattened over all the points (here a segmented scan or a segmented
-- reduction over every row).
-- ==
-- entry: scan_or_sum
-- input { true [[1, 2, 3], [4, 5, 6]] }
-- output { [[1, 3, 6], [4, 9, 15]] }
-- input { false [[1, 2, 3], [4, 5, 6]] }
-- output { [[6, 6, 6], [15, 15, 15]] }
-- random input { true [5][7]i32 }
-- random input { false [5][7]i32 }

entry scan_or_sum [n][m] (prefix: bool) (xss: [n][m]i32) : [n][m]i32 =
  map (\xs -> if prefix then scan (+) 0 xs else replicate m (i32.sum xs)) xss
