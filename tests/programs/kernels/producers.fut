-- A stencil made transposed for the rows that read it at their own points,
-- as LocVolCalib's explicit y step is for its x solve: the intra-block
-- version of the rows computes the stencil itself (futgen.opt.producers),
-- and writes it out where it is also returned (`kept`).

def stencil [n][m] (rs: [n][m]f32) : [m][n]f32 =
  map (\j -> map (\i -> let up = if i > 0 then rs[i - 1, j] else 0
                        let down = if i < n - 1 then rs[i + 1, j] else 0
                        in up + 2 * rs[i, j] - down) (iota n)) (iota m)

-- Two scans a row, so that rows get an intra-block version.
def solve [m] (r: [m]f32) (vr: [m]f32) : [m]f32 =
  let u = map2 (+) r vr
  let s = scan (+) 0 (map (\i -> if i > 0 then u[i - 1] else u[0]) (indices u))
  let t = scan f32.max f32.lowest s
  in map2 (\x y -> x * u[0] - y) t u

-- ==
-- entry: kept
-- input { [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]]] }
-- output { [[[2f32, 0f32, -2f32], [156f32, 321f32, 538f32]]] [[[-2f32, -1f32, 0f32], [9f32, 12f32, 15f32]]] }
entry kept [k][n][m] (rss: [k][n][m]f32) : ([k][n][m]f32, [k][n][m]f32) =
  unzip (map (\rs -> let v = stencil rs in (map2 solve rs (transpose v), transpose v)) rss)

-- ==
-- entry: used_once
-- input { [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]]] }
-- output { [[[2f32, 0f32, -2f32], [156f32, 321f32, 538f32]]] }
entry used_once [k][n][m] (rss: [k][n][m]f32) : [k][n][m]f32 =
  map (\rs -> let v = stencil rs in map2 solve rs (transpose v)) rss

-- A producer reading across its threads (`ts` a row apart from one to the
-- next), which its own kernel stages in tiles: it stays apart.

-- ==
-- entry: across
-- input { [[[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]]] [[[1f32, 0f32], [2f32, 1f32], [0f32, 3f32]]] }
-- output { [[[6f32, 12f32, 33f32], [12f32, 25f32, 48f32]]] }
entry across [k][n][m] (rss: [k][n][m]f32) (tss: [k][m][n]f32) : [k][n][m]f32 =
  map2 (\rs ts -> let v = map (map (\t -> t * 2)) ts in map2 solve rs (transpose v)) rss tss
