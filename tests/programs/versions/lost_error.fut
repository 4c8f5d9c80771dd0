-- A point's element read that fails, used only by a map over an empty
-- array: every version must still fail (distribution keeps such a read
-- in a map of its own rather than computing it again in the empty map).
-- ==
-- entry: main
-- input { [[1f32,2,3],[4,5,6]] 7i64 empty([0]f32) } error: out of bounds
-- input { [[1f32,2,3],[4,5,6]] 1i64 [1f32, 10f32] }
-- output { [[1f32,3,6],[4,9,15]] [[5f32,19f32],[11f32,31f32]] }
entry main [k][n][e] (xss: [k][n]f32) (i: i64) (es: [e]f32) : ([k][n]f32, [k][e]f32) =
  unzip (map (\xs -> let a = xs[i] * 2
                     let ys = scan (+) 0 xs
                     let zs = map (\q -> q + a) es
                     let ws = scan (+) 0 zs
                     in (ys, ws)) xss)
