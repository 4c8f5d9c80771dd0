-- Matrix products and their kin, which the CUDA backend tiles in shared
-- memory and registers (futgen/codegen/cuda/tiling.py): the second matrix
-- read along rows (through a transpose) or along columns, an epilogue after
-- the loop that reads another matrix, and a loop with two accumulators.

entry matmul [n][m][p] (xss: [n][m]f32) (yss: [m][p]f32) : [n][p]f32 =
  map (\xs -> map (\ys -> f32.sum (map2 (*) xs ys)) (transpose yss)) xss

entry matmul_columns [n][m][p] (xss: [n][m]f64) (yss: [m][p]f64) : [n][p]f64 =
  map (\xs -> map (\j -> loop acc = 0 for k < m do acc + xs[k] * yss[k, j]) (iota p)) xss

entry gemm [n][m][p] (alpha: f32) (beta: f32) (xss: [n][m]f32) (yss: [m][p]f32)
                     (css: [n][p]f32) : [n][p]f32 =
  map2 (\xs cs -> map2 (\ys c -> alpha * f32.sum (map2 (*) xs ys) + beta * c) (transpose yss) cs)
       xss css

entry max_plus_and_product [n][m][p] (xss: [n][m]i64) (yss: [m][p]i64) : ([n][p]i64, [n][p]i64) =
  let r = map (\xs -> map (\ys -> reduce (\(a, b) (c, d) -> (i64.max a c, b + d)) (i64.lowest, 0)
                                         (map2 (\x y -> (x + y, x * y)) xs ys))
                          (transpose yss))
              xss
  in (map (map (.0)) r, map (map (.1)) r)

-- A sum whose trip count is an argument: past `m`, its reads are out of
-- bounds, which the tiled kernels check once per tile, at its corners.
entry product_upto [n][m][p] (q: i64) (xss: [n][m]f32) (yss: [m][p]f32) : [n][p]f32 =
  map (\xs -> map (\j -> loop acc = 0 for k < q do acc + xs[k] * yss[k, j]) (iota p)) xss
