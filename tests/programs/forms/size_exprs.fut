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
