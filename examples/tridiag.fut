-- Solving a tridiagonal linear system with the Thomas algorithm, written
-- with scans so that its two recurrences run in parallel, the way the
-- LocVolCalib benchmark solves its implicit finite-difference steps.  Row i
-- of the system reads a[i] x[i-1] + b[i] x[i] + c[i] x[i+1] = y[i] (a[0] and
-- c[n-1] are ignored).  Forward elimination makes the diagonal
-- b'[i] = b[i] - a[i] c[i-1] / b'[i-1], a continued fraction: b'[i] = p/q
-- where (p, q) is a prefix product of 2x2 matrices, computed by a scan
-- (normalised after each product: only the ratio p/q matters, and without
-- it long systems overflow).  The right-hand side y'[i] = y[i] - (a[i] /
-- b'[i-1]) y'[i-1] and the back substitution x[i] = (y'[i] - c[i] x[i+1]) /
-- b'[i] are first-order linear recurrences u[i] = d[i] + m[i] u[i-1],
-- scanned as compositions of affine maps (the second one over the reversed
-- arrays).  `seq` is the textbook sequential version, with loops and
-- in-place updates; both entry points are tested on the same cases, the
-- last a random system of 1000 unknowns made by data/gen_tridiag.py.  The
-- systems are diagonally dominant, so no pivoting is needed.
-- ==
-- entry: main seq
-- input { [0.0f32, 1.0f32, 1.0f32]
--         [2.0f32, 2.0f32, 2.0f32]
--         [1.0f32, 1.0f32, 0.0f32]
--         [4.0f32, 8.0f32, 8.0f32] }
-- output { [1.0f32, 2.0f32, 3.0f32] }
-- input { [0.0f32, -1.0f32, -1.0f32, -1.0f32, -1.0f32]
--         [4.0f32, 4.0f32, 4.0f32, 4.0f32, 4.0f32]
--         [-1.0f32, -1.0f32, -1.0f32, -1.0f32, 0.0f32]
--         [5.0f32, 5.0f32, 8.0f32, 19.5f32, 37.0f32] }
-- output { [2.0f32, 3.0f32, 5.0f32, 9.0f32, 11.5f32] }
-- input { [0.0f32, 0.5f32, 1.0f32, 0.5f32]
--         [3.0f32, 4.0f32, 5.0f32, 3.0f32]
--         [1.0f32, 1.0f32, 2.0f32, 0.0f32]
--         [1.0f32, 2.0f32, 3.0f32, 4.0f32] }
-- output { [0.17105263f32, 0.48684211f32, -0.03289474f32, 1.33881579f32] }
-- input { [0.0f32] [4.0f32] [0.0f32] [2.0f32] }
-- output { [0.5f32] }
-- input { empty([0]f32) empty([0]f32) empty([0]f32) empty([0]f32) }
-- output { empty([0]f32) }
-- "n1000" input @ data/tridiag_1000.in
-- output @ data/tridiag_1000.out

-- A 2x2 matrix [[m00, m01], [m10, m11]] as a tuple in row-major order.
type mat2 = (f32, f32, f32, f32)

-- | The product x * y, scaled so that its largest entry has magnitude 1.
-- As an operator on matrices up to a positive factor this is associative,
-- with the identity matrix as neutral element.
def matmul_norm ((x00, x01, x10, x11): mat2) ((y00, y01, y10, y11): mat2) : mat2 =
  let r00 = x00 * y00 + x01 * y10
  let r01 = x00 * y01 + x01 * y11
  let r10 = x10 * y00 + x11 * y10
  let r11 = x10 * y01 + x11 * y11
  let s = f32.max (f32.max (f32.abs r00) (f32.abs r01))
                  (f32.max (f32.abs r10) (f32.abs r11))
  in if s == 0 then (r00, r01, r10, r11)
     else (r00 / s, r01 / s, r10 / s, r11 / s)

-- | The solution u of u[i] = d[i] + m[i] u[i-1] with u[-1] = 0: a scan
-- over the affine maps u -> d + m u, composed left to right.
def linrec [n] (d: [n]f32) (m: [n]f32) : [n]f32 =
  let compose (d1: f32, m1: f32) (d2: f32, m2: f32) = (d2 + m2 * d1, m2 * m1)
  in scan compose (0, 1) (zip d m) |> map (.0)

-- | The Thomas algorithm with scans.
def tridag [n] (a: [n]f32) (b: [n]f32) (c: [n]f32) (y: [n]f32) : [n]f32 =
  -- Forward elimination of the diagonal: (p[i], q[i]) = M[i] (p[i-1], q[i-1])
  -- with M[0] = [[b[0], 0], [1, 0]] applied to (1, 1), and b'[i] = p[i]/q[i].
  let mats = map (\i -> if i == 0 then (b[i], 0, 1, 0)
                        else (b[i], -a[i] * c[i - 1], 1, 0))
                 (iota n)
  -- The operator takes the later matrix on the left.
  let prods = scan (\x y -> matmul_norm y x) (1, 0, 0, 1) mats
  let b' = map (\(m00, m01, m10, m11) -> (m00 + m01) / (m10 + m11)) prods
  -- Forward substitution of the right-hand side.
  let y' = linrec y (map (\i -> if i == 0 then 0 else -a[i] / b'[i - 1]) (iota n))
  -- Back substitution, as a recurrence over the reversed arrays.
  let d = map2 (/) y' b' |> reverse
  let m = map (\i -> if i == n - 1 then 0 else -c[i] / b'[i]) (iota n) |> reverse
  in linrec d m |> reverse

entry main [n] (a: [n]f32) (b: [n]f32) (c: [n]f32) (y: [n]f32) : [n]f32 =
  tridag a b c y

-- | The sequential Thomas algorithm: forward sweep, then back substitution.
entry seq [n] (a: [n]f32) (b: [n]f32) (c: [n]f32) (y: [n]f32) : [n]f32 =
  if n == 0 then copy y
  else
    let (b', y') =
      loop (b', y') = (copy b, copy y) for i in 1..<n do
        let w = a[i] / b'[i - 1]
        let b'[i] = b'[i] - w * c[i - 1]
        let y'[i] = y'[i] - w * y'[i - 1]
        in (b', y')
    let x = replicate n 0
    let x[n - 1] = y'[n - 1] / b'[n - 1]
    in loop x for j < n - 1 do
         let i = n - 2 - j
         let x[i] = (y'[i] - c[i] * x[i + 1]) / b'[i]
         in x
