-- Distribution (rule G6) of a map whose body has several parallel
-- statements around transpositions, copies and replications of the
-- point's arrays, and values that do not depend on the point.  In the flat
-- version those run on the host over all points at once (and the sizes of
-- the arrays parts pass on are known there), never as a loop in one
-- thread per point.

-- ==
-- entry: main
-- input { [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]], [[7f32, 8f32, 9f32], [1f32, 0f32, 2f32]]] 2f32 }
-- output {
--   [[[3f32, 13f32], [5f32, 17f32], [7f32, 21f32]], [[15f32, 19f32], [17f32, 19f32], [19f32, 25f32]]]
--   [[[42f32, 25f32, 49f32], [27f32, 55f32, 91f32]], [[42f32, 289f32, 361f32], [45f32, 17f32, 95f32]]]
--   [256f32, 1032f32]
-- }
-- random input { [3][4][5]f32 1.5f32 }
-- random input { [2][33][17]f32 0.5f32 }
entry main [k][m][n] (xss: [k][m][n]f32) (c: f32) : ([k][n][m]f32, [k][m][n]f32, [k]f32) =
  unzip3 (map (\xs ->
                 let ys = map (map (\x -> x * c + 1)) xs
                 let t = transpose ys
                 let base = replicate n (map f32.i64 (iota m))
                 let s = map2 (\r b -> scan (+) 0 (map2 (+) r b)) t base
                 let rows = replicate m (map (\r -> r[0]) s)
                 let z = map2 (map2 (*)) rows ys
                 let u = copy z
                 let u[0, 0] = 42
                 in (s, u, f32.sum (map f32.sum z)))
              xss)

-- The last part only transposes.
-- ==
-- entry: transposed
-- input { [[[1, 2, 3], [4, 5, 6]]] }
-- output { [[[2, 8], [6, 18], [12, 30]]] }
-- random input { [4][3][9]i32 }
entry transposed [k][m][n] (xss: [k][m][n]i32) : [k][n][m]i32 =
  map (\xs -> let ys = map (scan (+) 0) xs
              let zs = map (map (* 2)) ys
              in transpose zs)
      xss

-- A perfect nest whose innermost map distributes: its parts distribute
-- over the outer map in turn, and each scan is one over all rows of all
-- points.
-- ==
-- entry: nested
-- input { [[[1, 2, 3], [4, 5, 6]]] }
-- output { [[[12, 18, 20], [30, 48, 56]]] }
-- random input { [3][4][9]i32 }
entry nested [k][m][n] (xss: [k][m][n]i32) : [k][m][n]i32 =
  map (map (\xs -> let ys = scan (+) 0 xs
                   in map (* 2) (scan (+) 0 (reverse ys))))
      xss

-- The last part a replication of the point's row, the map's other value
-- made by an earlier part: the replication is one host operation on the
-- rows of all points (LocVolCalib's payoff grid per strike).
-- ==
-- entry: replicated
-- input { [[1f32, 2f32], [3f32, 5f32]] [0i32, 0i32] }
-- output { [3f32, 8f32] [[[4f32, 5f32], [4f32, 5f32]], [[11f32, 13f32], [11f32, 13f32]]] }
-- random input { [7][33]f32 [5]i32 }
entry replicated [k][n][m] (xss: [k][n]f32) (_: [m]i32) : ([k]f32, [k][m][n]f32) =
  unzip (map (\xs -> let s = f32.sum xs
                     let row = map (+ s) xs
                     in (s, replicate m row))
             xss)
