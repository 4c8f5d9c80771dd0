-- Histograms with `hist` and `reduce_by_index`.  `main` sorts f32 samples
-- from [lo, hi) into k equally wide bins and counts them; samples outside
-- the range get an index outside [0, k), which `hist` ignores, so they are
-- simply not counted.  `bin_max` keeps, per bin, the largest of the values
-- given for it (starting from an existing histogram, with `reduce_by_index`
-- and `i32.max`), again skipping out-of-range indices.  `weighted` sums f32
-- weights per bin.  With no samples every bin is the neutral element; with
-- k = 0 the histogram is empty.
-- ==
-- entry: main
-- input { 4i64 0.0f32 1.0f32 [0.1f32, 0.2f32, 0.3f32, 0.6f32, 0.9f32, 0.95f32, 0.05f32] }
-- output { [3i32, 1i32, 1i32, 2i32] }
-- input { 3i64 -1.0f32 2.0f32 [-2.0f32, -0.5f32, 0.5f32, 1.5f32, 2.5f32, 1.9f32, 0.0f32] }
-- output { [1i32, 2i32, 2i32] }
-- input { 5i64 0.0f32 1.0f32 empty([0]f32) }
-- output { [0i32, 0i32, 0i32, 0i32, 0i32] }
-- input { 0i64 0.0f32 1.0f32 [0.5f32, 0.25f32] }
-- output { empty([0]i32) }
-- random input { 10i64 0.0f32 1.0f32 [1000]f32 }
-- random input { 100i64 0.0f32 1.0f32 [10000]f32 }

-- ==
-- entry: bin_max
-- input { [0i32, 0i32, 0i32] [0i64, 2i64, 0i64, 1i64, 2i64, 7i64, -1i64] [5i32, 3i32, 9i32, -4i32, 1i32, 100i32, 100i32] }
-- output { [9i32, 0i32, 3i32] }
-- input { [1i32, 2i32] empty([0]i64) empty([0]i32) }
-- output { [1i32, 2i32] }
-- input { empty([0]i32) [0i64, 1i64] [5i32, 6i32] }
-- output { empty([0]i32) }

-- ==
-- entry: weighted
-- input { 3i64 [2i64, 0i64, 2i64, 1i64, 3i64] [0.5f32, 1.0f32, 0.25f32, 2.0f32, 8.0f32] }
-- output { [1.0f32, 2.0f32, 0.75f32] }
-- input { 2i64 empty([0]i64) empty([0]f32) }
-- output { [0.0f32, 0.0f32] }
-- random input { 16i64 [1000]i64 [1000]f32 }

-- | The bin of sample `x` among `k` bins of equal width over [lo, hi);
-- -1 for samples outside the range.
def bin (k: i64) (lo: f32) (hi: f32) (x: f32) : i64 =
  if x < lo || x >= hi then -1
  else i64.min (k - 1) (i64.f32 ((x - lo) / (hi - lo) * f32.i64 k))

entry main [n] (k: i64) (lo: f32) (hi: f32) (xs: [n]f32) : [k]i32 =
  hist (+) 0 k (map (bin k lo hi) xs) (replicate n 1)

entry bin_max [k][n] (dest: *[k]i32) (is: [n]i64) (vs: [n]i32) : [k]i32 =
  reduce_by_index dest i32.max i32.lowest is vs

entry weighted [n] (k: i64) (is: [n]i64) (ws: [n]f32) : [k]f32 =
  reduce_by_index (replicate k 0) (+) 0 is ws
