-- Sizes the type checker infers rather than the program writing them, the
-- unit type, and user-defined operators: each compiles as the interpreter
-- runs it.

-- A size parameter that only a product in a parameter type names: `n` of
-- `[n * n]` is read off the argument's type `[2 * k]` at the call.
-- ==
-- entry: square_corner
-- input { [1i32, 2i32, 3i32, 4i32, 5i32, 6i32, 7i32, 8i32, 9i32, 10i32, 11i32, 12i32, 13i32, 14i32, 15i32, 16i32] }
-- output { [[1i32, 2i32], [5i32, 6i32]] 4i64 }
def corner [n] (xs: [n * n]i32) : ([2][2]i32, i64) =
  let square = unflatten xs
  in (square[0:2, 0:2] :> [2][2]i32, n)

entry square_corner (xs: []i32) : ([2][2]i32, i64) =
  corner (xs :> [4 * 4]i32)

-- A loop parameter whose size the body keeps: after the loop the array still
-- has the initial value's size, here a product that `unflatten` splits.
-- ==
-- entry: loop_keeps_size
-- input { 2i64 3i64 } output { [[0i32, 1i32, 2i32], [3i32, 4i32, 5i32]] }
-- input { 0i64 4i64 } output { empty([0][4]i32) }
entry loop_keeps_size (h: i64) (w: i64) : [h][w]i32 =
  let cells = replicate (h * w) 0i32
  let cells = loop cells for i < h * w do cells with [i] = i32.i64 i
  in unflatten cells

-- The same through flatten and a while loop over an array of records.
-- ==
-- entry: step_grid
-- input { [[1i64, 2i64], [3i64, 4i64]] }
-- output { [[2i64, 3i64], [4i64, 5i64]] }
type cell = {a: i64, b: i64}

entry step_grid [h] [w] (grid: [h][w]i64) : [h][w]i64 =
  let cells = map (map (\x -> {a = x, b = 0})) grid
  let (cells, _) =
    loop (cells: [h][w]cell, go) = (cells, true) while go do
      (unflatten (flatten (map (map (\c -> c with a = c.a + 1)) cells)), false)
  in map (map (.a)) cells

-- A loop whose array grows: its size after the loop is only known at run time.
-- ==
-- entry: doubling
-- input { [1i32, 2i32] 2i32 } output { 8i64 }
entry doubling (xs: []i32) (k: i32) : i64 =
  length (loop ys = xs for _i < k do ys ++ ys)

-- Arrays of the unit type keep their shape; unit values pass through
-- tuples, maps and histograms.
-- ==
-- entry: units
-- input { 3i64 } output { 3i64 2i64 true }
def count_units [n] (xs: [n]()) : i64 = n

entry units (n: i64) : (i64, i64, bool) =
  let us = replicate n ()
  let pairs = zip (iota n) us
  let hist = reduce_by_index (replicate 2 ()) (\() () -> ()) () (map (% 2) (iota n)) us
  in (count_units us, length hist, (map (.1) pairs)[0] == ())

-- A unit result and a unit parameter.
-- ==
-- entry: unit_result
-- input { 5f32 } output { 5f32 }
entry unit_result (x: f32) : f32 =
  let ((), y) = ((), x)
  in y

-- User-defined operators, applied, as sections and as functions, and one
-- defined point-free.
-- ==
-- entry: operators
-- input { 5i32 } output { 11i32 14i32 13i32 8i32 }
def (<+>) (a: i32) (b: i32) : i32 = a + 2 * b
def (<->) = (<+>)

entry operators (x: i32) : (i32, i32, i32, i32) =
  (x <+> 3, reduce (+) 0 (map (<+> 1) [x, 1, 2]), x <-> 4, (1 <+>) x - 3)

-- Filters and partitions of arrays of arrays: the kept rows' indices, then
-- a gather of the rows.
-- ==
-- entry: filter_rows
-- input { [[1i32, 2i32], [-1i32, 3i32], [4i32, 5i32]] [1f32, 2f32, 3f32] }
-- output { [[1i32, 2i32], [4i32, 5i32]] [1f32, 3f32] [[-1i32, 3i32]] }
-- input { empty([0][2]i32) empty([0]f32) }
-- output { empty([0][2]i32) empty([0]f32) empty([0][2]i32) }
entry filter_rows [n][m] (xss: [n][m]i32) (ys: [n]f32) : ([][m]i32, []f32, [][m]i32) =
  let (kept, ks) = unzip (filter (\(r, _) -> r[0] > 0) (zip xss ys))
  let (_, negative) = partition (\r -> r[0] > 0) xss
  in (kept, ks, negative)

-- `rep` takes its size from where its result goes: here the indices of an
-- array whose size changes from one iteration to the next.
-- ==
-- entry: rep_in_loop
-- input { [1i64, 2i64, 3i64] } output { [7i64, 7i64] }
-- input { [5i64, 0i64, 9i64, 1i64] } output { [7i64, 7i64] }
entry rep_in_loop (xs: []i64) : []i64 =
  loop ys = xs for _i < 2 do
    let ys = filter (> 0) (map (\y -> y - 1) ys)
    in scatter (copy ys) (indices ys) (rep 7)

-- A loop whose body sometimes keeps its array and sometimes makes a longer
-- one: the array's size is not the initial one after the loop.
-- ==
-- entry: keep_or_grow
-- input { [1i64, 5i64, 2i64] } output { 5i64 10i64 }
-- input { empty([0]i64) } output { 3i64 3i64 }
entry keep_or_grow (a: []i64) : (i64, i64) =
  let b = loop b = iota 3 for i < length a do
            if a[i] < length b then b else iota a[i]
  in (length b, i64.sum b)

-- A constant with only a size parameter, whose size a later `zip` gives as
-- a product of a parameter.
-- ==
-- entry: sized_constant_from_use
-- input { 2i64 } output { [0i64, 1i64, 2i64, 3i64, 4i64, 5i64] }
def upto [n] : [n]i64 = iota n

entry sized_constant_from_use (x: i64) : []i64 =
  (unzip (zip upto (replicate (3 * x) true))).0
