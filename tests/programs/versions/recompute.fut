-- Per point, two scalars from a few operations on its row, used by two
-- parallel parts: the flat version computes them again in each part's
-- kernels (G6 with recomputation) rather than in a map of their own.
-- ==
-- entry: main
-- random input { [16][100]f32 [16]f32 }
-- random input { [300][7]f32 [300]f32 }
entry main [k][n] (xss: [k][n]f32) (ts: [k]f32) : [k][n]f32 =
  map2 (\xs t -> let a = xs[0] * t
                 let b = 1 / (xs[n - 1] - a + 3)
                 let ys = scan (+) 0 (map (\x -> x * a) xs)
                 in map2 (\x y -> x * b + y) xs ys) xss ts
