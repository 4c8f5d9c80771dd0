-- Sizes known only from types: size parameters no array argument carries
-- (given by the type at the use), in top-level and local functions and in
-- size-polymorphic constants.
-- ==
-- entry: from_result
-- input { 3i64 } output { [3i64, 3i64, 3i64] }
-- input { 0i64 } output { empty([0]i64) }

-- ==
-- entry: const_sized
-- input { 4i64 } output { [0i64, 2i64, 4i64, 6i64] }

-- ==
-- entry: local_sized
-- input { 5i64 } output { 75i32 [5i32, 5i32, 5i32, 5i32, 5i32] }

-- ==
-- entry: twice_hidden
-- input { 2i64 3i64 } output { [[1i32, 1i32, 1i32], [1i32, 1i32, 1i32]] 6i64 }

-- ==
-- entry: regroup
-- input { [[1, 2, 3], [4, 5, 6]] } output { [[3, 4, 5], [6, 7, 8]] }
-- input { empty([0][2]i32) } output { empty([0][2]i32) }

-- ==
-- entry: regroup_twice
-- input { [[1, 2], [3, 4], [5, 6]] } output { [[1, 2], [3, 4], [5, 6]] [[2, 4], [6, 8], [10, 12]] }

def fill [n] (x: i64) : [n]i64 = replicate n x

entry from_result (x: i64) : [x]i64 = fill x

def evens [n] : [n]i64 = map (* 2) (iota n)

entry const_sized (k: i64) : [k]i64 = evens

entry local_sized (m: i64) =
  let f [n] m' (v: i32) : ([m']i32, (os: [n]i32) -> i32) =
    (replicate m' (v + i32.i64 n), i32.sum)
  let (x, g) = f m 10
  in (g x, map (/ 3) x)

def grid [a] [b] (v: i32) : ([a][b]i32, i64) = (replicate a (replicate b v), a * b)

entry twice_hidden (a: i64) (b: i64) : ([a][b]i32, i64) = grid 1

-- The sizes of an unannotated parameter, inferred, are the function's
-- implicit size parameters: the result of `unflatten` has them.
entry regroup A = flatten A |> map (+ 2i32) |> unflatten

def bump A = flatten A |> map (* 2i32) |> unflatten

entry regroup_twice (xss: [][]i32) = (xss, bump xss)
