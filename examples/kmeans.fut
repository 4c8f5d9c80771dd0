-- One step of Lloyd's k-means clustering, and a loop of such steps.  Given
-- n points and k centres in d dimensions, `main` assigns every point to its
-- nearest centre (squared Euclidean distance; a tie goes to the centre with
-- the lower index), then moves each centre to the mean of its points: the
-- per-centre sums and counts are histograms (`hist` over the membership
-- indices, one per coordinate, and `reduce_by_index` for the counts).  A
-- centre that gets no points keeps its place.  It returns the new centres
-- and the membership of every point.  `kmeans` runs `iters` such steps and
-- returns the final centres.  With no points the centres stay where they
-- are.
-- ==
-- entry: main
-- input { [[0.0f32, 0.0f32], [1.0f32, 0.0f32], [0.0f32, 1.0f32],
--          [10.0f32, 10.0f32], [11.0f32, 10.0f32], [10.0f32, 12.0f32]]
--         [[0.0f32, 0.0f32], [10.0f32, 10.0f32]] }
-- output { [[0.33333334f32, 0.33333334f32], [10.333333f32, 10.666667f32]]
--          [0i64, 0i64, 0i64, 1i64, 1i64, 1i64] }
-- input { [[1.0f32], [2.0f32], [3.0f32], [9.0f32]]
--         [[0.0f32], [2.0f32], [100.0f32]] }
-- output { [[1.0f32], [4.6666665f32], [100.0f32]]
--          [0i64, 1i64, 1i64, 1i64] }
-- input { [[1.0f32, 1.0f32], [3.0f32, 3.0f32]]
--         [[2.0f32, 0.0f32], [0.0f32, 2.0f32]] }
-- output { [[2.0f32, 2.0f32], [0.0f32, 2.0f32]]
--          [0i64, 0i64] }
-- input { empty([0][2]f32) [[1.0f32, 2.0f32], [3.0f32, 4.0f32]] }
-- output { [[1.0f32, 2.0f32], [3.0f32, 4.0f32]] empty([0]i64) }

-- ==
-- entry: kmeans
-- input { 3i32
--         [[0.0f32, 0.0f32], [1.0f32, 0.0f32], [0.0f32, 1.0f32], [4.0f32, 0.0f32],
--          [10.0f32, 10.0f32], [11.0f32, 10.0f32], [10.0f32, 12.0f32]]
--         [[0.0f32, 0.0f32], [5.0f32, 5.0f32]] }
-- output { [[1.25f32, 0.25f32], [10.333333f32, 10.666667f32]] }
-- input { 0i32 [[1.0f32, 1.0f32]] [[5.0f32, 5.0f32]] }
-- output { [[5.0f32, 5.0f32]] }
-- input { 4i32 empty([0][3]f32) [[1.0f32, 2.0f32, 3.0f32]] }
-- output { [[1.0f32, 2.0f32, 3.0f32]] }
-- random input { 5i32 [1000][4]f32 [8][4]f32 }

-- A point or centre: its coordinates.
type point [d] = [d]f32

-- | Squared Euclidean distance.
def dist2 [d] (p: point [d]) (c: point [d]) : f32 =
  map2 (\x y -> (x - y) * (x - y)) p c |> reduce (+) 0

-- | The index of the centre nearest to `p`; ties go to the lower index.
def nearest [k][d] (centres: [k](point [d])) (p: point [d]) : i64 =
  let closer (d1: f32, i1: i64) (d2: f32, i2: i64) =
    if d1 < d2 || (d1 == d2 && i1 < i2) then (d1, i1) else (d2, i2)
  let (_, i) = reduce closer (f32.inf, -1) (zip (map (dist2 p) centres) (iota k))
  in i

-- | One k-means step: new centres and the membership of each point.
def step [n][k][d] (points: [n](point [d])) (centres: [k](point [d]))
    : ([k](point [d]), [n]i64) =
  let membership = map (nearest centres) points
  let counts = reduce_by_index (replicate k 0i64) (+) 0 membership (replicate n 1)
  let sums = map (\coord -> hist (+) 0 k membership coord) (transpose points)
             |> transpose
  let new_centres =
    map3 (\total count old ->
            if count == 0 then old else map (/ f32.i64 count) total)
         sums counts centres
  in (new_centres, membership)

entry main [n][k][d] (points: [n][d]f32) (centres: [k][d]f32) : ([k][d]f32, [n]i64) =
  step points centres

entry kmeans [n][k][d] (iters: i32) (points: [n][d]f32) (centres: [k][d]f32) : [k][d]f32 =
  loop centres for _i < iters do (step points centres).0
