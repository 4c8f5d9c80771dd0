-- A LUD-shaped program: each step of a loop works on the trailing
-- (n - k) x (n - k) block, a matrix product whose versions (each output in
-- a thread, or one segmented reduction over all) are chosen by a guard on
-- (n - k)^2, so the guard sees n different parallelisms in one run: the
-- size-variant threshold of the autotuning paper.
-- ==
-- entry: main
-- random input { [48][48]f32 }
-- random input { [12][12]f32 }

def product [m] (x: [m][m]f32) : [m][m]f32 =
  map (\r -> map (\c -> f32.sum (map2 (*) r c)) (transpose x)) x

entry main [n] (a: *[n][n]f32) : [n][n]f32 =
  loop a for k < n do
    let y = product a[k:, k:]
    in a with [k:, k:] = map (map (/ f32.i64 (n - k))) y
