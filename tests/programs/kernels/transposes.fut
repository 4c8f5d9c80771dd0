-- Maps that read arrays across their threads (a row apart from one thread
-- to the next), which the CUDA backend runs in shared-memory tiles
-- (futgen/codegen/cuda/transposed.py): a transposition read through, a
-- stencil down the columns, a batch of transpositions (the tile's rows at
-- an outer index), a batch reading one array transposed (a tile every
-- outer point shares), reads of one array both along and across the
-- threads, and reads that run off the array's end.

entry add_transposed [n][m] (xss: [n][m]f32) (yss: [m][n]f32) : [n][m]f32 =
  map2 (map2 (+)) xss (transpose yss)

entry stencil_down [n][m] (xss: [n][m]f64) : [m][n]f64 =
  map (\j -> map (\i -> (if 0 < i then xss[i - 1, j] else 0) + 2 * xss[i, j]
                        + (if i < n - 1 then xss[i + 1, j] else 0))
                 (iota n))
      (iota m)

entry batched [k][n][m] (xsss: [k][n][m]i32) (ysss: [k][m][n]i32) : [k][n][m]i32 =
  map (\b -> map (\i -> map (\j -> xsss[b, i, j] * 3 - ysss[b, j, i]) (iota m)) (iota n))
      (iota k)

entry batch_by_one [k][n][m] (xsss: [k][n][m]f32) (ws: [m][n]f32) : [k][n][m]f32 =
  map (\xss -> map2 (\xs i -> map2 (\x j -> x * ws[j, i] + f32.i64 j) xs (iota m)) xss (iota n))
      xsss

entry both_ways [n] (xss: [n][n]i64) : [n][n]i64 =
  map (\i -> map (\j -> xss[i, j] * 10 + xss[j, i]) (iota n)) (iota n)

entry two_down [n][m] (xss: [n][m]f32) : [m][]f32 =
  map (\j -> map (\i -> xss[i, j] - xss[i + 2, j]) (iota (n - 2))) (iota m)

-- Past the last row: the read of row `n` fails, whichever thread makes it.
entry off_the_end [n][m] (xss: [n][m]i32) : [m][n]i32 =
  map (\j -> map (\i -> xss[i + 1, j]) (iota n)) (iota m)
