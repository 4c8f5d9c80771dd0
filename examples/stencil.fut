-- Jacobi iterations of a three-point stencil, sequential `loop` around a
-- parallel `map`.  `main` relaxes a 1D array `iters` times: every interior
-- point becomes the mean of itself and its two neighbours, and the two end
-- points stay fixed (Dirichlet boundary), the smoothing step of a heat
-- equation solver.  `jacobi2d` does the same on a 2D grid with the
-- five-point stencil (the point and its four neighbours, each weighted
-- 1/5), keeping the border fixed.  Zero iterations return the input; arrays
-- too small to have an interior (or empty) come back unchanged.
-- ==
-- entry: main
-- input { 1i32 [0.0f32, 0.0f32, 3.0f32, 0.0f32, 0.0f32] }
-- output { [0.0f32, 1.0f32, 1.0f32, 1.0f32, 0.0f32] }
-- input { 2i32 [0.0f32, 0.0f32, 3.0f32, 0.0f32, 0.0f32] }
-- output { [0.0f32, 0.6666667f32, 1.0f32, 0.6666667f32, 0.0f32] }
-- input { 3i32 [3.0f32, 0.0f32, 0.0f32, 0.0f32, 6.0f32] }
-- output { [3.0f32, 1.7777778f32, 1.6666666f32, 3.2222223f32, 6.0f32] }
-- input { 0i32 [1.0f32, 2.0f32, 3.0f32] }
-- output { [1.0f32, 2.0f32, 3.0f32] }
-- input { 10i32 [1.0f32, 2.0f32] }
-- output { [1.0f32, 2.0f32] }
-- input { 5i32 empty([0]f32) }
-- output { empty([0]f32) }
-- random input { 10i32 [1000]f32 }

-- ==
-- entry: jacobi2d
-- input { 1i32 [[0.0f32, 0.0f32, 0.0f32],
--               [0.0f32, 5.0f32, 0.0f32],
--               [0.0f32, 0.0f32, 0.0f32]] }
-- output { [[0.0f32, 0.0f32, 0.0f32],
--           [0.0f32, 1.0f32, 0.0f32],
--           [0.0f32, 0.0f32, 0.0f32]] }
-- input { 2i32 [[1.0f32, 1.0f32, 1.0f32, 1.0f32],
--               [1.0f32, 0.0f32, 0.0f32, 1.0f32],
--               [1.0f32, 0.0f32, 0.0f32, 1.0f32],
--               [1.0f32, 1.0f32, 1.0f32, 1.0f32]] }
-- output { [[1.0f32, 1.0f32, 1.0f32, 1.0f32],
--           [1.0f32, 0.64f32, 0.64f32, 1.0f32],
--           [1.0f32, 0.64f32, 0.64f32, 1.0f32],
--           [1.0f32, 1.0f32, 1.0f32, 1.0f32]] }
-- input { 3i32 empty([0][0]f32) }
-- output { empty([0][0]f32) }
-- random input { 5i32 [32][32]f32 }

-- | One Jacobi step in 1D: interior points become the mean of their
-- three-point neighbourhood; the ends stay as they are.
def step [n] (xs: [n]f32) : [n]f32 =
  map (\i ->
         if i == 0 || i == n - 1 then xs[i]
         else (xs[i - 1] + xs[i] + xs[i + 1]) / 3)
      (iota n)

entry main [n] (iters: i32) (xs: [n]f32) : [n]f32 =
  loop xs for _i < iters do step xs

-- | One Jacobi step in 2D with the five-point stencil.
def step2d [n][m] (g: [n][m]f32) : [n][m]f32 =
  tabulate_2d n m (\i j ->
    if i == 0 || i == n - 1 || j == 0 || j == m - 1 then g[i, j]
    else (g[i - 1, j] + g[i + 1, j] + g[i, j - 1] + g[i, j + 1] + g[i, j]) / 5)

entry jacobi2d [n][m] (iters: i32) (grid: [n][m]f32) : [n][m]f32 =
  loop grid for _i < iters do step2d grid
