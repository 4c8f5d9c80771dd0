-- Escape times of the Mandelbrot set on a small grid, to exercise records,
-- type abbreviations and `while` loops.  Complex numbers are records
-- {re, im} of f64.  For the point c, the iteration z <- z^2 + c starts at
-- z = c and counts how many steps it takes while |z|^2 <= 4, stopping at
-- `limit`: points in the set reach the limit, points far outside stop at
-- once.  `main` samples an h-by-w grid over the rectangle [x0, x1) x [y0, y1)
-- (row r has imaginary part y0 + (y1 - y0) r / h, column j real part
-- x0 + (x1 - x0) j / w).  A grid with no rows or columns is empty.
-- ==
-- input { 20i32 4i64 3i64 -2.0f64 -1.5f64 1.0f64 1.5f64 }
-- output { [[0i32, 1i32, 1i32, 1i32],
--           [0i32, 3i32, 20i32, 20i32],
--           [0i32, 3i32, 20i32, 20i32]] }
-- input { 50i32 1i64 1i64 -0.75f64 0.1f64 0.0f64 0.0f64 }
-- output { [[32i32]] }
-- input { 100i32 3i64 2i64 0.25f64 0.0f64 0.5f64 1.0f64 }
-- output { [[100i32, 8i32, 5i32], [100i32, 17i32, 5i32]] }
-- input { 10i32 0i64 0i64 -2.0f64 -1.0f64 1.0f64 1.0f64 }
-- output { empty([0][0]i32) }
-- input { 10i32 0i64 2i64 -2.0f64 -1.0f64 1.0f64 1.0f64 }
-- output { empty([2][0]i32) }
-- input { 64i32 32i64 24i64 -2.0f64 -1.25f64 0.5f64 1.25f64 }
-- output @ data/mandelbrot_32x24.out

type complex = {re: f64, im: f64}

def cadd (a: complex) (b: complex) : complex =
  {re = a.re + b.re, im = a.im + b.im}

def cmul (a: complex) (b: complex) : complex =
  {re = a.re * b.re - a.im * b.im, im = a.re * b.im + a.im * b.re}

def norm2 ({re, im}: complex) : f64 =
  re * re + im * im

-- | The number of iterations before z leaves the disc of radius 2, at most
-- `limit`.
def escape (limit: i32) (c: complex) : i32 =
  let (_, steps) =
    loop (z, i) = (c, 0) while i < limit && norm2 z <= 4 do
      (cadd (cmul z z) c, i + 1)
  in steps

entry main (limit: i32) (w: i64) (h: i64) (x0: f64) (y0: f64) (x1: f64) (y1: f64)
    : [h][w]i32 =
  tabulate_2d h w (\r j ->
    escape limit { re = x0 + (x1 - x0) * f64.i64 j / f64.i64 w
                 , im = y0 + (y1 - y0) * f64.i64 r / f64.i64 h })
