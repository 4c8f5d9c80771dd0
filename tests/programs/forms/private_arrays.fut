-- Maps whose threads build arrays of their own (thread-private memory in a
-- GPU kernel): in-place updates in loops, inner scans and maps, ifs and
-- loops over arrays, transposes and copies of rows, and the reductions by
-- an array operator that are rewritten into row reductions.

-- A Brownian-bridge-like recurrence: each thread fills its row in place.
-- ==
-- entry: bridge
-- input { [[1f32, 2f32, 3f32], [0f32, 1f32, 0f32]] }
-- output { [[1f32, 1.5f32, 2.25f32], [0f32, 0.5f32, 0.25f32]] }
-- random input { [200][7]f32 }
entry bridge [n][m] (xss: [n][m]f32) : [n][m]f32 =
  map (\xs ->
         let row = replicate m 0f32
         let row[0] = xs[0]
         in loop row for i in 1..<m do
              let row[i] = 0.5f32 * (row[i - 1] + xs[i])
              in row)
      xss

-- An inner scan and an inner map over its result, both arrays of the thread.
-- ==
-- entry: scan_then_scale
-- input { [[1i32, 2i32, 3i32], [4i32, 5i32, 6i32]] }
-- output { [[1i32, 6i32, 18i32], [4i32, 18i32, 45i32]] }
-- random input { [129][33]i32 }
entry scan_then_scale [n][m] (xss: [n][m]i32) : [n][m]i32 =
  map (\xs -> let ps = scan (+) 0 xs
              in map2 (*) ps (map (\i -> i32.i64 i + 1) (indices xs)))
      xss

-- Branches returning different arrays, and a row copied and updated.
-- ==
-- entry: branchy
-- input { [[1i64, 2i64], [3i64, 4i64], [5i64, 6i64]] }
-- output { [[1i64, 2i64], [42i64, 4i64], [5i64, 6i64]] }
-- random input { [257][9]i64 }
entry branchy [n][m] (xss: [n][m]i64) : [n][m]i64 =
  map2 (\i xs -> if i % 2 == 0 then xs else copy xs with [0] = 42) (iota n) xss

-- A thread transposes a matrix of its own and sums its columns.
-- ==
-- entry: column_sums
-- input { [[[1f64, 2f64], [3f64, 4f64], [5f64, 6f64]]] }
-- output { [[9f64, 12f64]] }
-- random input { [100][5][3]f64 }
entry column_sums [n][a][b] (xsss: [n][a][b]f64) : [n][b]f64 =
  map (\xss -> map f64.sum (transpose xss)) xsss

-- A loop whose arrays swap every iteration.
-- ==
-- entry: swaps
-- input { 3i32 [[1i32, 2i32], [3i32, 4i32]] [[5i32, 6i32], [7i32, 8i32]] }
-- output { [[4i32, 5i32], [6i32, 7i32]] }
entry swaps [n][m] (k: i32) (xss: [n][m]i32) (yss: [n][m]i32) : [n][m]i32 =
  map2 (\xs ys ->
          let (a, b) = loop (a, b) = (copy xs, copy ys) for _i < k do
                         (map (+1) b, a)
          in map2 (+) a b |> map (\v -> v / 2))
       xss yss

-- A vectorised reduction (OptionPricing's payoff sum): the sum of the rows.
-- ==
-- entry: vector_sum
-- input { [[1f32, 2f32], [3f32, 4f32], [5f32, 6f32]] }
-- output { [9f32, 12f32] }
-- input { empty([0][3]f32) } output { [0f32, 0f32, 0f32] }
-- random input { [10000][17]f32 }
entry vector_sum [n][m] (xss: [n][m]f32) : [m]f32 =
  reduce (map2 (+)) (replicate m 0f32) (map (map (* 1f32)) xss)

-- The same, where each row is a thread's private result first.
-- ==
-- entry: vector_sum_of_scans
-- input { [[1i64, 2i64], [3i64, 4i64]] }
-- output { [4i64, 10i64] }
-- random input { [300][5]i64 }
entry vector_sum_of_scans [n][m] (xss: [n][m]i64) : [m]i64 =
  reduce (map2 (+)) (replicate m 0i64) (map (scan (+) 0) xss)
