-- The cases of benchmarks/kernels.py: reductions, scans, a histogram, a transpose and
-- a matrix product.
entry sum (xs: []f32) : f32 = f32.sum xs
entry sum_squares (xs: []f32) : f32 = reduce (+) 0 (map (\x -> x * x) xs)
entry prefix_sum (xs: []f32) : []f32 = scan (+) 0 xs
entry row_sums [n][m] (xss: [n][m]f32) : [n]f32 = map f32.sum xss
entry plus_one (xs: []f32) : []f32 = map (+ 1) xs
entry counts [n] (k: i64) (is: [n]i64) : []i64 = hist (+) 0 k is (map (\_ -> 1) is)
entry transpose_f32 [n][m] (xss: [n][m]f32) : [m][n]f32 = transpose xss
entry matmul [n][m][p] (xss: [n][m]f32) (yss: [m][p]f32) : [n][p]f32 =
  map (\xs -> map (\ys -> f32.sum (map2 (*) xs ys)) (transpose yss)) xss
entry row_prefix [n][m] (xss: [n][m]f32) : [n][m]f32 = map (scan (+) 0) xss
-- The papers' mapscan1 (16 rounds): a loop of a map and a scan per row.
entry mapscan1 [m][n] (xss: [m][n]i32) : [m][n]i32 =
  map2 (\xs i -> loop row = xs for _j < 16 do
                   let row' = map (+ i32.i64 i) row
                   in scan (+) 0 row')
       xss (iota m)
