-- Equality (and inequality) of arrays, tuples and records: shapes first, then elements.
-- ==
-- entry: matrices
-- input { [[1, 2], [3, 4]] [[1, 2], [3, 4]] } output { true }
-- input { [[1, 2], [3, 4]] [[1, 2], [3, 5]] } output { false }
-- input { [[1, 2], [3, 4]] [[1, 2]] } output { false }
-- input { empty([0][2]i32) empty([0][3]i32) } output { false }
-- input { empty([0][2]i32) empty([0][2]i32) } output { true }

-- ==
-- entry: differ
-- input { [true, false] [true, false] } output { false }
-- input { [true] [true, false] } output { true }
-- input { [true] [false] } output { true }

-- ==
-- entry: pairs
-- input { 1 [1f32, 2f32] 1 [1f32, 2f32] } output { true }
-- input { 1 [1f32, 2f32] 2 [1f32, 2f32] } output { false }
-- input { 1 [1f32, 2f32] 1 [1f32] } output { false }

-- ==
-- entry: per_row
-- input { [[1, 1], [2, 3], [0, 0]] } output { [true, false, true] }

entry matrices (xs: [][]i32) (ys: [][]i32) = xs == ys
entry differ (xs: []bool) (ys: []bool) = xs != ys
entry pairs (i: i32) (xs: []f32) (j: i32) (ys: []f32) = (i, xs) == (j, ys)
entry per_row (xss: [][]i32) : []bool = map (\r -> r == [r[0], r[0]]) xss
