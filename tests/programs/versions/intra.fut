-- Maps whose points have parallel work of their own: incremental
-- flattening adds an intra-block version (a thread block per point, the
-- inner SOACs shared by its threads, their arrays in shared memory),
-- chosen when the outer map alone is too small (`suff_outer_par`) and the
-- block's arrays fit.  `futgen test --versions` runs every case under each.

-- The papers' mapscan1: a loop of a map and a scan per row.
-- ==
-- entry: mapscan1
-- input { [[1, 2, 3], [4, 5, 6]] }
-- output { [[1, 5, 15], [7, 26, 64]] }
-- input { empty([0][5]i32) }
-- output { empty([0][5]i32) }
-- input { empty([3][0]i32) }
-- output { empty([3][0]i32) }
-- random input { [7][1000]i32 }
-- random input { [40][33]i32 }
-- random input { [2][3000]i32 }
entry mapscan1 [m][n] (xss: [m][n]i32) : [m][n]i32 =
  map2 (\xs i -> loop row = xs for _j < 3 do
                   let row' = map (+ i32.i64 i) row
                   in scan (+) 0 row')
       xss (iota m)

-- Two reductions and a map per row (a row normalised by its range), with a
-- non-commutative reduction (the last positive element) beside them.
-- ==
-- entry: normalise
-- input { [[1f32, 3f32, 2f32], [-1f32, -1f32, 5f32]] }
-- output { [[0f32, 1f32, 0.5f32], [0f32, 0f32, 1f32]] [2f32, 5f32] }
-- random input { [9][700]f32 }
-- random input { [3][2000]f32 }
-- random input { [100][31]f32 }
entry normalise [m][n] (xss: [m][n]f32) : ([m][n]f32, [m]f32) =
  unzip (map (\xs ->
    let lo = f32.minimum xs
    let hi = f32.maximum xs
    let last = reduce (\a b -> if b > 0 then b else a) 0 xs
    in (map (\x -> if hi > lo then (x - lo) / (hi - lo) else 0) xs, last)) xss)

-- A tuple scan and a scalar read of its result per row (an affine
-- recurrence, the shape of LocVolCalib's tridiagonal solves), in a loop.
-- ==
-- entry: recurrences
-- random input { [5][300]f64 [5][300]f64 }
-- random input { [64][17]f64 [64][17]f64 }
entry recurrences [m][n] (as: [m][n]f64) (bs: [m][n]f64) : ([m][n]f64, [m]f64) =
  unzip (map2 (\a b ->
    let ys = loop ys = b for _i < 2 do
      let (_, zs) = unzip (scan (\(p, q) (r, s) -> (p * r, q * r + s)) (1, 0)
                                (zip (map (\x -> 0.5 * x) a) ys))
      in zs
    in (ys, ys[n - 1] + f64.sum ys)) as bs)

-- Two scans per row under two maps: a block per row of the map nest.
-- ==
-- entry: nested_rows
-- input { [[[1, 2, 3]], [[0, 1, -1]]] }
-- output { [[[2, 6, 24]], [[0, 1, 0]]] }
-- random input { [3][5][200]i32 }
-- random input { [2][70][33]i32 }
entry nested_rows [k][m][n] (xsss: [k][m][n]i32) : [k][m][n]i32 =
  map (map (\xs -> let a = scan (+) 0 xs
                   let b = scan (*) 1 a
                   in map2 (+) a b)) xsss

-- A chain of scans and maps per row whose arrays die one after another
-- (LocVolCalib's tridiagonal solves): the intra-block kernel gives arrays
-- whose lifetimes are apart by a barrier one shared-memory slot, but not
-- across a scalar read (`a[0]`, no barrier after it) nor to an array read
-- again later (`xs`'s copy, `b`).
-- ==
-- entry: chain
-- input { [[1f32, 2f32, 3f32], [4f32, 5f32, 6f32]] }
-- output { [[2f32, 4.5f32, 8.5f32], [8f32, 15f32, 26.5f32]] }
-- random input { [7][1000]f32 }
-- random input { [100][33]f32 }
-- random input { [2][3000]f32 }
-- random input { [203][16]f32 }
entry chain [m][n] (xss: [m][n]f32) : [m][n]f32 =
  map (\xs -> let a = scan (+) 0 xs
              let b = map (\x -> x * 0.5) a
              let s = a[0]
              let c = map (+ s) (scan (+) 0 b)
              let d = map2 (-) c b
              let e = scan (+) 0 d
              in map2 (+) e xs) xss

-- Scans along the columns of a matrix: each block reads a row of the
-- transposition, or, in the version for small arrays
-- (`suff_transposed`), the column of the matrix itself, strided.
-- ==
-- entry: columns
-- input { [[1f32, 2f32], [3f32, 4f32], [5f32, 6f32]] }
-- output { [[1f32, 20f32, 126f32], [4f32, 48f32, 240f32]] }
-- random input { [1000][7]f32 }
-- random input { [33][100]f32 }
-- random input { [3000][2]f32 }
entry columns [m][n] (xss: [m][n]f32) : [n][m]f32 =
  map (\col -> let a = scan (+) 0 col in map2 (*) a (scan (+) 0 a)) (transpose xss)

-- Maps reading a scan's values at their own point run in the scan's second
-- pass (the intra-block kernel's `PostMap`): `b`, whose scan later code
-- reads at a neighbour (so the scanned values are stored too), and the
-- last map, whose reads of `xs` may fail.
-- ==
-- entry: scan_maps
-- input { [[1f64, 2f64, 3f64], [4f64, 5f64, 6f64]] [[0u8, 2u8, 1u8], [1u8, 1u8, 0u8]] }
-- output { [[2f64, 6.01f64, 9.0552f64], [9f64, 15.54f64, 25.637f64]] }
-- input { [[1f64, 2f64]] [[0u8, 2u8]] }
-- error: out of bounds
-- random input { [7][300]f64 [7][300]u8 }
-- random input { [100][33]f64 [100][33]u8 }
-- random input { [301][12]f64 [301][12]u8 }
-- random input { [99][7]f64 [99][7]u8 }
entry scan_maps [m][n] (xss: [m][n]f64) (iss: [m][n]u8) : [m][n]f64 =
  map2 (\xs is ->
    let (ps, qs) = unzip (scan (\(p, q) (r, t) -> (p * r, q * r + t)) (1, 0)
                               (zip (map (\x -> 0.5 + 0.01 * x) xs) xs))
    let b = map2 (\p q -> p + 0.5 * q) ps qs
    let c = map (\k -> if k > 0 then b[k - 1] + qs[k - 1] else qs[0]) (iota n)
    in map2 (\s i -> s + xs[i64.u8 i]) (scan (+) 0 c) is) xss iss
