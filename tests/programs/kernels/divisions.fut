-- Float division in kernels: f32 (correctly rounded by default, within
-- 2 ulp with --fast-division), its reciprocal, f64 and f16 (computed in f32).
-- ==
-- entry: quotients
-- input { [1f32, 3163.328613f32, 0f32, -2.5f32] [1f32, 3163.328613f32, 7f32, 0f32] }
-- output { [1f32, 1f32, 0f32, -f32.inf] }

entry quotients (xs: []f32) (ys: [](f32)) : []f32 = map2 (/) xs ys

-- ==
-- entry: reciprocals
-- input { [1f32, 4f32, -0.5f32] } output { [1f32, 0.25f32, -2f32] }
entry reciprocals (xs: []f32) : []f32 = map f32.recip xs

-- ==
-- entry: quotients64
-- input { [1f64, 3f64] [3f64, 1f64] } output { [0.3333333333333333f64, 3f64] }
entry quotients64 (xs: []f64) (ys: []f64) : []f64 = map2 (/) xs ys

-- ==
-- entry: quotients16
-- input { [1f16, 6f16] [4f16, 3f16] } output { [0.25f16, 2f16] }
entry quotients16 (xs: []f16) (ys: []f16) : []f16 = map2 (/) xs ys

-- A division in the map fused into a scan.
-- ==
-- entry: ratios
-- input { [1f32, 2f32, 4f32, 8f32] } output { [1f32, 0.5f32, 0.125f32, 0.015625f32] }
entry ratios (xs: []f32) : []f32 = scan (*) 1f32 (map (\x -> 1 / x) xs)
