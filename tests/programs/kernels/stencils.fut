-- Maps whose threads read arrays of the map's own shape at their indices
-- plus constants (stencils), which the CUDA kernel addresses as its flat
-- index plus an offset; reads of an array of another shape, and reads
-- past the end (checked as before), are addressed row-major.

-- ==
-- entry: down_and_across
-- input { [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]], [[7f32, 8f32, 9f32], [10f32, 11f32, 12f32]]] }
-- output { [[[16f32, 27f32, 18f32], [34f32, 54f32, 30f32]], [[64f32, 93f32, 54f32], [82f32, 120f32, 66f32]]] }
entry down_and_across [k][n][m] (xsss: [k][n][m]f32) : [k][n][m]f32 =
  map (\xss -> map (\i -> map (\j -> (if 0 < i then xss[i - 1, j] else 0) + 2 * xss[i, j]
                                     + (if i < n - 1 then xss[i + 1, j] else 0)
                                     + (if 0 < j then 3 * xss[i, j - 1] else 0)
                                     + (if j < m - 1 then 5 * xss[i, j + 1] else 0))
                          (iota m))
                   (iota n))
      xsss

-- ==
-- entry: other_shape
-- input { [[1i32, 2i32], [3i32, 4i32]] [[10i32, 20i32, 30i32], [40i32, 50i32, 60i32]] }
-- output { [[21i32, 32i32], [53i32, 64i32]] }
entry other_shape [n][m] (xss: [n][m]i32) (yss: [n][m + 1]i32) : [n][m]i32 =
  map (\i -> map (\j -> xss[i, j] + yss[i, j + 1]) (iota m)) (iota n)

-- ==
-- entry: off_the_end
-- input { [[1i32, 2i32], [3i32, 4i32]] }
-- error: Index \[2, 0\] out of bounds
entry off_the_end [n][m] (xss: [n][m]i32) : [n][m]i32 =
  map (\i -> map (\j -> xss[i, j] + xss[i + 1, j]) (iota m)) (iota n)
