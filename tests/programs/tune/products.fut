-- Matrix products whose best version depends on the shape, on the CPU
-- backend too: few long dot products (2 x 4096 by 4096 x 2) run fastest
-- flattened (one NumPy reduction over all of them), many short ones
-- (128 x 4 by 4 x 128: parallelism 16384, below the default threshold)
-- fastest as the outer map with the dot product sequential inside.  The
-- autotuner must find a threshold between the two.
-- ==
-- entry: main
-- random input { [2][4096]f32 [4096][2]f32 }
-- random input { [128][4]f32 [4][128]f32 }
-- nobench random input { [3][5]f32 [5][7]f32 }

entry main [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\row -> map (\col -> f32.sum (map2 (*) row col)) (transpose b)) a
