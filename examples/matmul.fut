-- Dense matrix multiplication C = A B of an n-by-m and an m-by-p matrix,
-- in the textbook nested-parallel form: for every row of A and every column
-- of B (a row of B's transpose), a dot product.  This is the program the
-- incremental-flattening papers use to show block and register tiling; here
-- it also checks that transpose, nested maps and a map-reduce compose.  With
-- m = 0 every entry is an empty sum, so the result is all zeros.
-- ==
-- input { [[1.0f32, 2.0f32], [3.0f32, 4.0f32]]
--         [[5.0f32, 6.0f32], [7.0f32, 8.0f32]] }
-- output { [[19.0f32, 22.0f32], [43.0f32, 50.0f32]] }
-- input { [[1.0f32, 0.0f32, 2.0f32], [-1.0f32, 3.0f32, 1.0f32]]
--         [[3.0f32, 1.0f32], [2.0f32, 1.0f32], [1.0f32, 0.0f32]] }
-- output { [[5.0f32, 1.0f32], [4.0f32, 2.0f32]] }
-- input { [[1.0f32, 2.0f32, 3.0f32]] [[4.0f32], [5.0f32], [6.0f32]] }
-- output { [[32.0f32]] }
-- input { empty([0][3]f32) [[1.0f32, 2.0f32], [3.0f32, 4.0f32], [5.0f32, 6.0f32]] }
-- output { empty([0][2]f32) }
-- input { empty([2][0]f32) empty([0][3]f32) }
-- output { [[0.0f32, 0.0f32, 0.0f32], [0.0f32, 0.0f32, 0.0f32]] }
-- random input { [16][32]f32 [32][8]f32 }
-- random input { [64][64]f32 [64][64]f32 }

-- | The product of an n-by-m and an m-by-p matrix.
def matmul [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\row -> map (\col -> reduce (+) 0 (map2 (*) row col)) (transpose b)) a

entry main [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  matmul a b
