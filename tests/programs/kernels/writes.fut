-- Histograms and scatters the CUDA backend runs on the device
-- (templates/cuda/histogram.cu.j2, the SegScatter kernel of segmap.py):
-- operators with hardware atomics and without (compare and swap), 32- and
-- 64-bit values, destinations updated in place, out-of-range bins and
-- out-of-bounds writes skipped.

entry hist_f32_add (k: i64) (is: []i64) (vs: []f32) : []f32 = hist (+) 0 k is vs

entry hist_i64_add (k: i64) (is: []i64) (vs: []i64) : []i64 = hist (+) 0 k is vs

entry hist_i32_max (dest: *[]i32) (is: []i64) (vs: []i32) : []i32 =
  reduce_by_index dest i32.max i32.lowest is vs

entry hist_u32_min (k: i64) (is: []i64) (vs: []u32) : []u32 = hist u32.min u32.highest k is vs

-- No hardware atomic: compare and swap around the operator.
entry hist_f32_max (k: i64) (is: []i64) (vs: []f32) : []f32 = hist f32.max f32.lowest k is vs

entry hist_f64_mul (dest: *[]f64) (is: []i64) (vs: []f64) : []f64 =
  reduce_by_index dest (*) 1 is vs

-- A bin computed by the thread, and a value read out of bounds (an error).
entry hist_gather (k: i64) (xs: []i32) (is: []i64) : []i32 =
  hist (+) 0 k (map (% k) is) (map (\i -> xs[i]) is)

entry scatter_f32 (dest: *[]f32) (is: []i64) (vs: []f32) : []f32 = scatter dest is vs

entry scatter_2d_i32 [n] (dest: *[][]i32) (is: [n]i64) (js: [n]i64) (vs: [n]i32) : [][]i32 =
  scatter_2d dest (zip is js) vs

-- No atomic for these values: a lock per bin.
entry hist_pair (k: i64) (is: []i64) (vs: []i32) : ([]i32, []i32) =
  unzip (hist (\(a, b) (c, d) -> (a + c, i32.max b d)) (0, i32.lowest) k is (zip vs vs))

entry hist_i8_add (k: i64) (is: []i64) (vs: []i8) : []i8 = hist (+) 0 k is vs

entry hist_f16_max (k: i64) (is: []i64) (vs: []f16) : []f16 = hist f16.max f16.lowest k is vs
