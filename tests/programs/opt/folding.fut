-- Constant folding (futgen.opt.rules) computes what the program computes
-- at run time, bit for bit: integer arithmetic wraps, shifts by the width or
-- more give what the runtime gives, f32 arithmetic rounds to f32, and
-- conversions follow Futhark's rules.  A division by zero, a negative
-- exponent and an unused index out of bounds are left to fail at run time.
-- The argument of each entry point is unused: every expression is constant.
-- ==
-- entry: integers
-- input { 0i32 }
-- output { -2147483648i32 144u8 -128i8 9223372036854775807i64 -4i32 -1i32 -1i32 1870418611i32 0u16 }

entry integers (_: i32) =
  (i32.highest + 1, 200u8 * 2u8, -128i8 / -1i8, i64.lowest - 1, 7i32 / -2, 7i32 % -2,
   -7i32 %% 2, 3i32 ** 21, 65535u16 + 1u16)

-- ==
-- entry: shifts
-- input { 0i32 }
-- output { -2147483648i32 0i32 -4i32 -1i32 15i32 0u8 }

entry shifts (_: i32) =
  (1i32 << 31, 1i32 << 32, -8i32 >> 1, -8i32 >> 40, -1i32 >>> 28, 1u8 << 9u8)

-- ==
-- entry: floats
-- input { 0i32 }
-- output { 0.3f32 16777216f32 0.33333334f32 1.4142135f32 0.1f32 3i32 16777216f32 0.30000000000000004f64 }

entry floats (_: i32) =
  (0.1f32 + 0.2f32, 16777216f32 + 1f32, 1f32 / 3f32, f32.sqrt 2f32, f32.f64 0.1f64,
   i32.f32 3.9f32, f32.i32 16777217, 0.1f64 + 0.2f64)

-- Laws that do not hold for floats are not applied: `-0.0 + 0.0` is `0.0`,
-- and `x * 0.0` is NaN for an infinite `x`.
-- ==
-- entry: float_laws
-- input { -0f32 f32.inf }
-- output { 0f32 true }

entry float_laws (x: f32) (y: f32) = (x + 0, f32.isnan (y * 0))

-- ==
-- entry: division_by_zero
-- input { 1i32 } error: division by zero
-- input { -3i32 } output { -3i32 }

entry division_by_zero (x: i32) = if x > 0 then 1 / 0 else x

-- ==
-- entry: negative_exponent
-- input { 1i32 } error: Negative exponent
-- input { 0i32 } output { 0i32 }

entry negative_exponent (x: i32) = if x > 0 then 2 ** -1 else x

-- An unused index is kept: futgen promises the error.
-- ==
-- entry: unused_index
-- input { [1, 2, 3, 4, 5] } error: out of bounds
-- input { empty([0]i32) } error: out of bounds

entry unused_index (xs: []i32) = let _y = xs[100] in length xs
