-- The reduction and scan cases of benchmarks/kernels.py (f32, memory bound).
entry sum (xs: []f32) : f32 = f32.sum xs
entry sum_squares (xs: []f32) : f32 = reduce (+) 0 (map (\x -> x * x) xs)
entry prefix_sum (xs: []f32) : []f32 = scan (+) 0 xs
entry row_sums [n][m] (xss: [n][m]f32) : [n]f32 = map f32.sum xss
entry plus_one (xs: []f32) : []f32 = map (+ 1) xs
