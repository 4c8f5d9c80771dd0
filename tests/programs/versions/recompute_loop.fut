-- A time loop inside a map, as in LocVolCalib: each step reads one element
-- of the point's row at the loop counter (in bounds: the counter runs to
-- the row's length) and two parallel parts use it.  The flat version's
-- loop of maps computes the element again in both parts' kernels.
-- ==
-- entry: main
-- random input { [8][6]f32 [8][16]f32 }
-- random input { [3][2]f32 [3][300]f32 }
entry main [k][t][n] (rs: [k][t]f32) (xss: [k][n]f32) : [k][n]f32 =
  map2 (\r xs -> loop xs for i < t do
                   let a = r[i] * 0.5
                   let ys = scan (+) 0 (map (* a) xs)
                   in map (\y -> y / (1 + f32.abs a)) ys) rs xss
