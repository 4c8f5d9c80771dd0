-- The shape of LocVolCalib (finpar): for every strike, a time loop whose
-- body maps over a grid's rows and columns and solves a tridiagonal system
-- per row by scans.  Incremental flattening gives the strikes map its
-- three versions: a thread per strike; a block per strike; and the map
-- moved into the time loop (G7) and distributed over the loop body's
-- statements (G6), whose tridiagonal solves have versions of their own.

def tridag [n] (a: [n]f32) (b: [n]f32) (y: [n]f32) : [n]f32 =
  -- x[i] = (y[i] - a[i] x[i-1]) / b[i] as a scan of affine maps
  let (_, xs) = unzip (scan (\(p, q) (r, s) -> (p * r, q * r + s)) (1, 0)
                            (map3 (\ai bi yi -> (-ai / bi, yi / bi)) a b y))
  in xs

def step [m][n] (t: f32) (grid: [m][n]f32) : [m][n]f32 =
  let explicit = map (\row -> map (\x -> 0.5 * x + t) row) grid
  in map (\row -> tridag (map (\x -> 0.1 * x) row) (map (\x -> 2 + x * x) row) row) explicit

-- ==
-- entry: main
-- input { [1f32, 2f32] 3i64 4i64 2i64 }
-- random input { [7]f32 5i64 33i64 3i64 }
-- random input { [2]f32 3i64 300i64 2i64 }
entry main [k] (strikes: [k]f32) (m: i64) (n: i64) (steps: i64) : [k]f32 =
  map (\strike ->
         let grid = tabulate_2d m n (\i j -> strike + f32.i64 (i + j) / 100)
         let grid = loop grid for t < steps do step (f32.i64 t) grid
         in f32.sum (map f32.sum grid)) strikes
