-- Reductions and scans the CUDA skeletons compile (templates/cuda/):
-- commutative and non-commutative operators, tuple operators, maps fused
-- into reductions, map-out values, and segmented reductions.

entry sum_f32 (xs: []f32) : f32 = f32.sum xs

entry sum_i32 (xs: []i32) : i32 = i32.sum xs

entry sum_squares (xs: []f32) : f32 = reduce (+) 0 (map (\x -> x * x) xs)

entry min_max (xs: []i32) : (i32, i32) = (i32.minimum xs, i32.maximum xs)

-- Affine maps composed in order: associative, not commutative.
entry compose (xs: []i32) : (i32, i32) =
  reduce (\(a, b) (c, d) -> (a * c, b * c + d)) (1, 0) (map (\x -> (x % 3 + 1, x)) xs)

-- The reduction and a map-out array of the same map.
entry sum_and_doubled (xs: []i64) : (i64, []i64) =
  let (ys, zs) = unzip (map (\x -> (x, 2 * x)) xs)
  in (i64.sum ys, zs)

entry row_sums [n][m] (xss: [n][m]f32) : [n]f32 = map f32.sum xss

entry row_compose [n][m] (xss: [n][m]i32) : ([n]i32, [n]i32) =
  unzip (map (\xs -> reduce (\(a, b) (c, d) -> (a * c, b * c + d)) (1, 0)
                            (map (\x -> (x % 3 + 1, x)) xs)) xss)

entry prefix_sum (xs: []f32) : []f32 = scan (+) 0 xs

entry prefix_i64 (xs: []i64) : []i64 = scan (+) 0 xs

entry prefix_compose (xs: []i32) : ([]i32, []i32) =
  unzip (scan (\(a, b) (c, d) -> (a * c, b * c + d)) (1, 0) (map (\x -> (x % 3 + 1, x)) xs))

entry row_prefix [n][m] (xss: [n][m]i32) : [n][m]i32 = map (scan (+) 0) xss

-- A segmented scan by a non-commutative tuple operator (affine maps composed).
entry row_prefix_compose [n][m] (xss: [n][m]i32) : ([n][m]i32, [n][m]i32) =
  unzip (map (\xs -> unzip (scan (\(a, b) (c, d) -> (a * c, b * c + d)) (1, 0)
                                 (map (\x -> (x % 3 + 1, x)) xs))) xss)

-- Segments of a size the type fixes (a constant in the kernels).
entry row_sums_of_8 [n] (xss: [n][8]f32) : [n]f32 = map f32.sum xss
