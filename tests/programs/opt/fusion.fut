-- SOACs the fuse pass (futgen.flatten.fusion) merges, and ones it must
-- not.  Each entry point's comment says what its core IR becomes.

-- One Screma: a reduction whose mapped values are also returned (a map-out).
-- ==
-- entry: sums_and_squares
-- input { [1f32, 2f32, 3f32] } output { 14f32 [1f32, 4f32, 9f32] }
-- input { empty([0]f32) } output { 0f32 empty([0]f32) }

entry sums_and_squares (xs: []f32) =
  let sq = map (\x -> x * x) xs
  in (reduce (+) 0 sq, sq)

-- One Screma with two reductions (horizontal fusion over `xs`).
-- ==
-- entry: sum_and_max
-- input { [3, -1, 4, 1, -5] } output { 2 4 }
-- input { empty([0]i32) } output { 0 -2147483648 }

entry sum_and_max (xs: []i32) = (reduce (+) 0 xs, reduce i32.max i32.lowest xs)

-- One map: the two consumers of `ys` fuse horizontally, then `ys` into them
-- (the thesis's example).
-- ==
-- entry: two_consumers
-- input { [1, 2, 3] } output { [4, 6, 8] [6, 9, 12] }

entry two_consumers (xs: []i32) =
  let ys = map (+ 1) xs
  in (map (* 2) ys, map (* 3) ys)

-- Two Scremas: a scan and a reduction never share one.
-- ==
-- entry: scan_and_sum
-- input { [1, 2, 3] } output { [1, 3, 6] 6 }

entry scan_and_sum (xs: []i32) = (scan (+) 0 xs, reduce (+) 0 xs)

-- The map is not moved past the update of `xs`, which it reads.
-- ==
-- entry: update_between
-- input { [1, 2, 3] } output { 9 [5, 2, 3] }

entry update_between (xs: *[]i32) =
  let ys = map (+ 1) xs
  let xs[0] = 5
  in (reduce (+) 0 ys, xs)

-- The map reads `dest`, which the scatter consumes: not fused.
-- ==
-- entry: gather_then_scatter
-- input { [10, 20, 30] [2i64, 0i64, 1i64] } output { [30, 10, 20] }

entry gather_then_scatter (dest: *[]i32) (is: []i64) =
  let vs = map (\i -> dest[i]) is
  in scatter dest (indices is) vs

-- Two map nests whose inner scans cannot fuse stay two (each a segmented
-- scan).
-- ==
-- entry: scans_of_scans
-- input { [[1, 2, 3], [4, 5, 6]] } output { [[1, 3, 18], [4, 36, 540]] }

entry scans_of_scans (xss: [][]i32) =
  map (\r -> scan (*) 1 r) (map (\r -> scan (+) 0 r) xss)
