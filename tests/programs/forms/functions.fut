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

-- A closure applied outside the function that made it: its body's types
-- name that function's type parameter `m`, which the caller instantiates
-- differently (or not at all).
-- ==
-- entry: closure_elsewhere
-- input { 1.5f32 2 } output { [3, 4, 5] 1.5f32 [5, 6, 7] }
def composed_maps 'm (g: m -> m) : [3]m -> [3]m =
  let h = map g >-> map g
  in \(ys: [3]m) -> h ys

def apply_beside 'm (y: m) (f: [3]i32 -> [3]i32) = (f [1, 2, 3], y)
def apply_to_row (f: [3]i32 -> [3]i32) = f [1, 2, 3]

entry closure_elsewhere (b: f32) (k: i32) =
  let (xs, y) = apply_beside b (composed_maps (+ 1i32))
  in (xs, y, apply_to_row (composed_maps (+ k)))

-- A call inlined into a map inside a loop: the inlined body uses the
-- loop's counter, and the size of an array whose type names a size bound
-- outside the map only (flattening simplifies the inlined lambda alone).
-- ==
-- entry: inlined_in_loop
-- input { [1i64, 2i64, 3i64, 4i64] } output { [4i64, 8i64, 12i64, 16i64] }
def row_total [n] (k: i64) (xss: [n][n]i64) : i64 = k * n + xss[0, 0]

entry inlined_in_loop [m] (xs: [m]i64) : [m]i64 =
  let n = i64.f32 (f32.sqrt (f32.i64 m))
  let xss = unflatten (xs :> [n * n]i64)
  in loop acc = replicate m 0 for i < 2 do
       map (\j -> row_total (i + j) xss + acc[j]) (iota m)

-- An operator parameter hides the built-in operator of the same name:
-- applied infix, as a section and passed on.
-- ==
-- entry: operator_parameter
-- input { [3, 1, 2] } output { 1 3 [-1, 1, 0] [5, 1, 3] }
def smallest [n] 't ((<=): t -> t -> bool) (xs: [n]t) : t =
  reduce (\x y -> if x <= y then x else y) xs[0] xs

def largest [n] 't ((<=): t -> t -> bool) (xs: [n]t) : t = smallest (flip (<=)) xs

def shifted ((+): i32 -> i32 -> i32) (xs: []i32) = (map (+ 1) xs, map (1 +) xs)

entry operator_parameter (xs: []i32) : (i32, i32, []i32, []i32) =
  let (a, b) = shifted (\x y -> x * 2 - y) xs
  in (smallest (\x y -> x <= y) xs, largest (<=) xs, b, a)

-- A size parameter that only the array a later application takes fixes:
-- `xs |> f g` evaluates `xs` first, so at the call of `f` its size is known
-- (the filtered array's length, 3 here).
-- ==
-- entry: size_from_a_piped_array
-- input { [3, -1, 4, -1, 5] } output { 4i64 }
def one_more [n] (_: [n]i32 -> bool) : [n]i32 -> i64 =
  let k = n + 1
  in \_ -> k

entry size_from_a_piped_array (xs: []i32) : i64 =
  filter (> 0) xs |> one_more (\_ -> true)
