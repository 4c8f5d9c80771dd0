-- Dot product of two vectors: the sum of the element-wise products,
-- written as a `map2` fused into a `reduce` (a "redomap" once the compiler
-- fuses it).  `main` works on f32; `dot_i32` is the same program on i32,
-- where the result is exact and wraps around on overflow like C's int32.
-- The empty dot product is the neutral element, 0.
-- ==
-- entry: main
-- input { [1.0f32, 2.0f32, 3.0f32] [4.0f32, 5.0f32, 6.0f32] }
-- output { 32.0f32 }
-- input { [0.5f32, -1.5f32] [2.0f32, 2.0f32] }
-- output { -2.0f32 }
-- input { [2.5f32] [4.0f32] }
-- output { 10.0f32 }
-- input { empty([0]f32) empty([0]f32) }
-- output { 0.0f32 }
-- random input { [1000]f32 [1000]f32 }
-- random input { [10000]f32 [10000]f32 }

-- ==
-- entry: dot_i32
-- input { [1, 2, 3, 4] [5, 6, 7, 8] }
-- output { 70 }
-- input { [2147483647, 1] [1, 1] }
-- output { -2147483648 }
-- input { empty([0]i32) empty([0]i32) }
-- output { 0 }

-- | The dot product of `xs` and `ys`.
def dotprod [n] (xs: [n]f32) (ys: [n]f32) : f32 =
  reduce (+) 0 (map2 (*) xs ys)

entry main [n] (xs: [n]f32) (ys: [n]f32) : f32 =
  dotprod xs ys

entry dot_i32 [n] (xs: [n]i32) (ys: [n]i32) : i32 =
  map2 (*) xs ys |> reduce (+) 0
