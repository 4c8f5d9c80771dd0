-- Function values that Futhark compiles: point-free and polymorphic
-- definitions, functions in records returned by functions, and size
-- parameters fixed by a function-typed argument.  (An if choosing between
-- functions is rejected, as Futhark rejects it.)
-- ==
-- entry: point_free
-- input { 3 4 } output { 7 [3, 4] }

-- ==
-- entry: record_of_functions
-- input { 2f64 } output { 12f64 42i64 }

-- ==
-- entry: size_from_function
-- input { 3i64 } output { 5i64 }

def plus = (i32.+)
def twice 'a (f: a -> a) = \(x: a) -> f (f x)
def swap_pair 'a = \((x: a), (y: a)) -> [y, x]
def summer (k: i64) = {sum = \(xs: [k]f64) -> f64.sum xs, k = 42i64}
def count [n] (_: [n]i64) (_: [n]i64 -> i32, _: [n]i64) = n

entry point_free (x: i32) (y: i32) : (i32, []i32) =
  (x `plus` y, swap_pair (twice (\z -> z + 1) y - 2, x))
entry record_of_functions (x: f64) : (f64, i64) =
  let r = summer 3
  in (r.sum [x, 2 * x, 3 * x], r.k)
entry size_from_function (x: i64) : i64 =
  count (iota (x + 2)) (\_ -> 0, iota (x + 2))
