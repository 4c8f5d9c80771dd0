-- Reductions and scans under two or more maps: incremental flattening gives
-- each a guarded choice between the maps' space with the inner SOAC run
-- sequentially per thread, and a SegRed/SegScan segmented by all the maps.
-- `futgen test --versions` runs every case under both.

-- ==
-- entry: matmul
-- input { [[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]]
--         [[1f32, 0f32], [0f32, 1f32], [1f32, 1f32]] }
-- output { [[4f32, 5f32], [10f32, 11f32]] }
-- input { empty([0][3]f32) empty([3][0]f32) }
-- output { empty([0][0]f32) }
-- input { empty([2][0]f32) empty([0][2]f32) }
-- output { [[0f32, 0f32], [0f32, 0f32]] }
-- random input { [1][5000]f32 [5000][1]f32 }
-- random input { [7][33]f32 [33][5]f32 }
entry matmul [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\row -> map (\col -> f32.sum (map2 (*) row col)) (transpose b)) a

-- ==
-- entry: row_col_prefix
-- input { [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [1, 1, 1]]] }
-- output { [[[1, 3, 6], [4, 9, 15]], [[7, 15, 24], [1, 2, 3]]] }
-- random input { [3][4][100]i32 }
entry row_col_prefix [k][n][m] (xsss: [k][n][m]i32) : [k][n][m]i32 =
  map (map (scan (+) 0)) xsss

-- A reduction under three maps, by a tuple operator that is not
-- commutative (affine maps composed), with a statement before it.
-- ==
-- entry: compose3
-- random input { [2][3][4][50]i32 }
-- random input { [1][1][1][3000]i32 }
entry compose3 [a][b][c][d] (xs: [a][b][c][d]i32) : [a][b][c](i32, i32) =
  map (map (map (\row ->
    let k = row[0] % 5
    in reduce (\(p, q) (r, s) -> (p * r, q * r + s)) (1, 0)
              (map (\x -> (x % 3 + 1, x + k)) row)))) xs

-- The innermost reduction also returns its map's values (a map-out array).
-- ==
-- entry: sums_and_squares
-- random input { [4][6][40]f64 }
entry sums_and_squares [n][m][p] (xs: [n][m][p]f64) : ([n][m]f64, [n][m][p]f64) =
  let (sums, squares) =
    unzip (map (\rows -> unzip (map (\row ->
      let sq = map (\x -> x * x) row
      in (f64.sum sq, sq)) rows)) xs)
  in (sums, squares)

-- One map over a reduction: the segmented SegRed picks its strategy itself,
-- so no version guard.
-- ==
-- entry: row_max
-- input { [[3, 1, 2], [0, -4, 9]] }
-- output { [3, 9] }
entry row_max [n][m] (xs: [n][m]i32) : [n]i32 = map i32.maximum xs
