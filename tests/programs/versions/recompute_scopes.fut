-- Recomputed scalars in their parts' scopes: an i64 one after a reduction
-- (not a size the host knows), and one an inner scan starts from (its
-- copy stays out of the scan's function).
-- ==
-- entry: sum_then
-- random input { [4][6]i64 [4]i64 }
-- input { [[1i64,2],[3,4]] [1i64,2] } output { [16i64, 48i64] }

-- ==
-- entry: scan_from
-- random input { [4][3][5]f32 [4]f32 }

entry sum_then [k][n] (xss: [k][n]i64) (ts: [k]i64) : [k]i64 =
  map2 (\xs t -> let u = t + 1
                 let a = u * 2
                 let s = i64.sum (map (* a) xs)
                 in s + a) xss ts

entry scan_from [k][n][m] (xsss: [k][n][m]f32) (ts: [k]f32) : ([k][n][m]f32, [k]f32) =
  unzip (map2 (\xss t -> let a = t * 2
                         let yss = map (\xs -> scan (+) a xs) xss
                         in (yss, f32.sum (map f32.sum yss))) xsss ts)
