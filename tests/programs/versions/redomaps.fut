-- Redomaps whose map function has parallel work of its own (rule G9):
-- one version runs that work sequentially in each thread of a SegRed, the
-- other splits the redomap into its map and its reduction, so that the
-- map's inner work is flattened too (a segmented reduction, or a map with
-- versions of its own).  `futgen test --versions` runs every case under
-- each.

-- The sum of the rows' maxima: a redomap at the top.
-- ==
-- entry: sum_of_maxima
-- input { [[1f32, 5f32, 2f32], [7f32, -1f32, 0f32]] } output { 24f32 }
-- input { empty([0][3]f32) } output { 0f32 }
-- input { empty([2][0]f32) } output { -f32.inf }
-- random input { [9][300]f32 }
-- random input { [300][9]f32 }
entry sum_of_maxima [n][m] (xss: [n][m]f32) : f32 =
  f32.sum (map (\xs -> f32.maximum (map (* 2) xs)) xss)

-- Heston-shaped: per parameter, per quote, a sum over the quote's grid
-- rows of a price that is itself a reduction over the row.
-- ==
-- entry: prices
-- input { [1f32, 2f32] [[[1f32, -3f32], [2f32, 0f32]], [[0f32, 0f32], [5f32, 1f32]]] }
-- output { [[5f32, 5f32], [10f32, 10f32]] }
-- random input { [3]f32 [5][11][40]f32 }
-- random input { [2]f32 [3][200][3]f32 }
entry prices [k][q][n][g] (ps: [k]f32) (quotes: [q][n][g]f32) : [k][q]f32 =
  map (\p -> map (\quote -> f32.sum (map (\row -> f32.maximum (map (\x -> p * f32.abs x) row))
                                         quote))
                 quotes)
      ps

-- A redomap whose map function's reduction is followed by more work:
-- the split cuts the map function after its reduction (G6), so that the
-- reduction can be segmented by the rows.
-- ==
-- entry: scaled_maxima
-- input { [[1f32, 5f32], [7f32, -1f32]] } output { 6f32 }
-- random input { [20][30]f32 }
entry scaled_maxima [n][m] (xss: [n][m]f32) : f32 =
  f32.sum (map (\xs -> f32.maximum xs / f32.i64 m) xss)

-- Irregular inner work (each element sums a range of its own length): the
-- split's map would run it sequentially in its threads as the SegRed
-- does, so there is one version.
-- ==
-- entry: sums_of_ranges
-- input { [3i64, 0i64, 4i64] } output { 9i64 }
entry sums_of_ranges (ns: []i64) : i64 =
  i64.sum (map (\n -> i64.sum (iota n)) ns)
