-- Rows whose coefficients depend on the row and the time step only, solved
-- for every outer element, as LocVolCalib's tridiagonal systems are for
-- every strike: the intra-block version computes the coefficients' scan and
-- quotients once per row (futgen.opt.block_invariants).

def row [n] (dt: f32) (c: [n]f32) (x: [n]f32) : [n]f32 =
  let w = map (\ci -> 1 / (dt + ci * ci)) c
  let s = scan (+) 0 w
  let pairs = tabulate n (\i -> if i > 0 then (x[i], s[i] / s[i - 1]) else (x[0], 1))
  let (ys, ps) = unzip (scan (\(a0, a1) (b0, b1) -> (b0 + b1 * a0, a1 * b1)) (0, 1) pairs)
  in map2 (+) ys ps

def rows [m][n] (dt: f32) (cs: [m][n]f32) (xs: [m][n]f32) : [m][n]f32 =
  #[incremental_flattening(no_outer)]
  map2 (row dt) cs xs

-- ==
-- entry: solve
-- input { 2f32 [[1f32, 2f32, 3f32], [0f32, 1f32, 0f32]]
--         [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]], [[0f32, 0f32, 1f32], [2f32, 1f32, 0f32]]] }
-- output { [[[2f32, 5f32, 8.909091f32], [5f32, 13.333334f32, 27.333334f32]],
--            [[1f32, 1.5f32, 2.7727275f32], [3f32, 6f32, 9.6f32]]] }
entry solve [k][m][n] (dt: f32) (cs: [m][n]f32) (xs: [k][m][n]f32) : [k][m][n]f32 =
  #[incremental_flattening(only_inner)]
  map (\x_o -> rows dt cs x_o) xs
