-- A scan per row followed by a map of its values, as in LocVolCalib's
-- tridiagonal solves.  In the version with a thread per row the map runs in
-- the scan's loop: of the scan's two arrays the thread keeps only `qs`,
-- which is read again after the map (its last element).

def solve [n] (a: [n]f32) (y: [n]f32) : ([n]f32, f32) =
  let (ps, qs) = unzip (scan (\(p, q) (r, s) -> (p * r, q * r + s)) (1, 0)
                             (map2 (\ai yi -> (0.5 - ai, yi)) a y))
  let xs = map3 (\p q yi -> q + p * y[0] - yi) ps qs y
  in (xs, qs[n - 1])

-- ==
-- entry: main
-- input { [[1f32, 2f32, 3f32], [0.5f32, 0.25f32, 0.125f32]] [[1f32, 1f32, 1f32], [2f32, 3f32, 4f32]] }
-- output { [[-0.5f32, -0.75f32, -0.625f32], [0f32, 0.5f32, 1.3125f32]] [2.25f32, 5.3125f32] }
-- random input { [5][33]f32 [5][33]f32 }
-- random input { [300][7]f32 [300][7]f32 }
entry main [m][n] (as: [m][n]f32) (ys: [m][n]f32) : ([m][n]f32, [m]f32) =
  unzip (map2 solve as ys)
