-- Sizes written as expressions: `unflatten` learns its result sizes from
-- an argument whose size is a product of size expressions (`(b + 1) *
-- (b + 1)`), matched factor by factor as written: `[n * m * l]` is
-- `(n * m) * l`, so against `(2 * 5) * (n * m)` it takes n = 2, m = 5 and
-- l = n * m, as Futhark does.
-- ==
-- entry: padded_square
-- input { 2i64 } output { [[0i32, 1i32, 2i32], [3i32, 4i32, 5i32], [6i32, 7i32, 8i32]] }
-- input { 0i64 } output { [[0i32]] }

entry padded_square (b: i64) : [][]i32 =
  let grid = map i32.i64 (iota ((b + 1) * (b + 1))) |> unflatten
  in map (map id) grid

-- ==
-- entry: blocks
-- input { [1i32, 2i32, 3i32] 1i64 }
-- output { 2i64 5i64 3i64 }

entry blocks [n] (xs: [n]i32) (m: i64) : (i64, i64, i64) =
  let k = n * m
  let row = xs :> [k]i32
  let cube = replicate (2 * 5 * (n * m)) row |> unflatten_3d
  in (length cube, length cube[0], length cube[0, 0])

-- ==
-- entry: shrink
-- input { 3i64 } output { [[1i64, 2i64], [3i64, 4i64]] }

entry shrink (b: i64) : [][]i64 =
  let m = unflatten (iota ((b - 1) * (b - 1)) |> map (+ 1))
  in m[:b - 1, :b - 1]

-- Sizes written with calls of top-level or built-in functions: a coercion
-- to `[isqrt n * isqrt n]` is checked (compiled code too), and `unflatten`
-- learns both sides from it; a point-free definition takes its sizes from
-- `i64.i32` of i32 parameters.
-- ==
-- entry: square_of
-- input { [1i64, 2i64, 3i64, 4i64] } output { [[1i64, 2i64], [3i64, 4i64]] }
-- input { [1i64, 2i64, 3i64] }
-- error: Value of \(desugared\) shape \[3\] cannot match shape of type "\[1\]i64"

def isqrt (x: i64) : i64 = i64.f32 (f32.sqrt (f32.i64 x))

entry square_of [n] (xs: [n]i64) : [][]i64 =
  unflatten (xs :> [isqrt n * isqrt n]i64)

def rows_of 't (r: i32) (c: i32) : [i64.i32 r * i64.i32 c]t -> [][]t = unflatten

-- ==
-- entry: point_free_rows
-- input { 2 3 [1, 2, 3, 4, 5, 6] } output { 2i64 [4, 5, 6] }

entry point_free_rows (r: i32) (c: i32) (xs: []i32) : (i64, []i32) =
  let m = rows_of r c (xs :> [i64.i32 r * i64.i32 c]i32)
  in (length m, m[1])

-- A coercion to a size expression checks it where it is, in compiled code
-- as in the interpreter.
-- ==
-- entry: plus_one
-- input { [1, 2, 3] 2i64 } output { 3i64 }
-- input { [1, 2, 3] 5i64 }
-- error: Value of \(desugared\) shape \[3\] cannot match shape of type "\[6\]i32"

entry plus_one (xs: []i32) (n: i64) : i64 = length (xs :> [n + 1]i32)

-- A return type that leaves a size out (`[]`) has the body's where the
-- caller can name it: `take l` gives `[l]`, so `unflatten` learns both
-- sides from `take_all (r * c)`.
-- ==
-- entry: inferred_return
-- input { 2i64 3i64 } output { [[1i32, 2i32, 3i32], [4i32, 5i32, 6i32]] }

def take_all (l: i64) (xs: []i32) : []i32 = take l xs

entry inferred_return (r: i64) (c: i64) : [][]i32 =
  unflatten (take_all (r * c) (map i32.i64 (iota 6) |> map (+ 1)))

-- A size parameter inside a written size expression is matched as written:
-- `[2 ** k]` at `[2 ** (i + 1)]` makes `k` be `i + 1` (the callee's `k`
-- never stands for a name of the caller's).
-- ==
-- entry: tree_max
-- input { [3, 9, 2, 7, 5, 1, 8, 6] } output { 9 }
-- input { [4] } output { 4 }

def halve [k] (xs: [2 ** k]i32) : [2 ** (k - 1)]i32 =
  tabulate (2 ** (k - 1)) (\i -> i32.max xs[2 * i] xs[2 * i + 1])

entry tree_max [n] (xs: [n]i32) : i32 =
  let k = 63 - i64.clz n |> i64.i32
  let ys = loop ys = (xs :> [2 ** k]i32) for i in reverse (iota k) do
             halve (ys :> [2 ** (i + 1)]i32)
  in ys[0]
