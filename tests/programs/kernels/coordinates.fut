-- Maps whose results are their points' coordinates.  A CUDA thread of a
-- launch with more points than the device holds at once visits several
-- points of a grid-stride loop, each with its own coordinates.

-- ==
-- entry: points_3d
-- input { [[[0f32, 1f32, 2f32], [3f32, 4f32, 5f32]], [[6f32, 7f32, 8f32], [9f32, 10f32, 11f32]]] }
-- output { [[[0i64, 2i64, 4i64], [1003i64, 1005i64, 1007i64]], [[1000006i64, 1000008i64, 1000010i64], [1001009i64, 1001011i64, 1001013i64]]] }
entry points_3d [k][n][m] (xsss: [k][n][m]f32) : [k][n][m]i64 =
  map2 (\a xss ->
          map2 (\b xs -> map2 (\c x -> a * 1000000 + b * 1000 + c + i64.f32 x) (iota m) xs)
               (iota n) xss)
       (iota k) xsss

-- ==
-- entry: points_2d
-- input { [[1i32, 2i32, 3i32], [4i32, 5i32, 6i32]] }
-- output { [[1i64, 3i64, 5i64], [100004i64, 100006i64, 100008i64]] }
entry points_2d [n][m] (xss: [n][m]i32) : [n][m]i64 =
  map2 (\a xs -> map2 (\b x -> a * 100000 + b + i64.i32 x) (iota m) xs) (iota n) xss
