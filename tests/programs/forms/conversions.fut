-- Float to integer conversions out of the target's range: a signed target
-- saturates (as Futhark's GPU backends do), NaN and infinities give 0, an
-- unsigned target wraps a negative value.  Mapped, so they run in kernels.
-- ==
-- entry: f32_to_i32
-- input { [3e9f32, -3e9f32, -6.9145847e18f32, 1e30f32, f32.nan, f32.inf, -1.5f32, 2.5f32] }
-- output { [2147483647i32, -2147483648i32, -2147483648i32, 2147483647i32, 0i32, 0i32, -1i32, 2i32] }

-- ==
-- entry: f64_to_i8
-- input { [300f64, -300f64, 127.9f64, -128.9f64, -f64.inf] }
-- output { [127i8, -128i8, 127i8, -128i8, 0i8] }

-- ==
-- entry: f64_to_i64
-- input { [-1e19f64, 1e300f64, -42.7f64] }
-- output { [-9223372036854775808i64, 9223372036854774784i64, -42i64] }

-- ==
-- entry: f32_to_u32
-- input { [-1f32, 3.5f32, f32.nan] }
-- output { [4294967295u32, 3u32, 0u32] }

-- ==
-- entry: truncated
-- input { [0.5f32, -6.9145847e16f32, 3.9613714e25f32, 12.345f32] }
-- output { [0.5f32, 21474836f32, 21474836f32, 12.34f32] }

entry f32_to_i32 = map i32.f32
entry f64_to_i8 = map i8.f64
entry f64_to_i64 = map i64.f64
entry f32_to_u32 = map u32.f32

-- Two decimals kept through i32, as a test of Futhark's does: a value far
-- out of i32's range keeps |i32.lowest| / 100.
entry truncated (xs: []f32) =
  map (\x -> f32.abs (f32.i32 (i32.f32 (x * 100)) / 100)) xs
