-- Parameter types that say more of their arguments' sizes than the shapes
-- fix, checked when the function is entered: sizes naming a value parameter
-- or a constant, size expressions, arrays for one type parameter.
-- ==
-- entry: const_param
-- input { [1i64, 2i64, 3i64] } output { [2i64, 3i64, 4i64] }
-- input { [1i64, 2i64] } error: const_param: invalid size: parameter xs: \[three\]i64 has shape \[2\] where its type says \[3\]

-- ==
-- entry: value_param
-- input { 2i64 [1, 2] } output { 3 }
-- input { 1i64 [1, 2] } error: value_param: invalid size: parameter xs: \[n\]i32 has shape \[2\] where its type says \[1\]

-- ==
-- entry: entry_value_param
-- input { 2i64 [1, 2] } output { [2, 4] }
-- input { 3i64 [1, 2] } error: entry_value_param: invalid size: parameter xs: \[n\]i32 has shape \[2\] where its type says \[3\]

-- ==
-- entry: size_expr
-- input { 1i64 [5, 6] } output { 6 }
-- input { 1i64 [5, 6, 7] } error: size_expr: invalid size: parameter ys: \[\]i32 has shape \[3\] where its type says \[2\]

-- ==
-- entry: doubled
-- input { [1, 2, 3, 4] [5, 6] } output { [1, 2, 3, 4, 5, 6] }
-- input { [1, 2, 3] [5, 6] } error: doubled: invalid size: parameter xs: \[\]i32 has shape \[3\] where its type says \[4\]

-- ==
-- entry: inner_size_expr
-- input { 2i64 [1, 2, 3, 4] } output { 10 }
-- input { 2i64 [1, 2, 3] } error: Value of \(desugared\) shape \[3\] cannot match shape of type "\[4\]i32"\.

-- ==
-- entry: same_type
-- input { [1, 2] [3, 4] } output { [4, 6] }
-- compiled input { [1, 2] [3] } error: Value of \(desugared\) shape \[1\] cannot match shape of type "\[2\]i32"\.

def three : i64 = 3

entry const_param (xs: [three]i64) = map (+ 1) xs

-- (The checker gives the entry's `xs` the type `[n]i32` of `sum_n`'s parameter.)
def sum_n (n: i64) (xs: [n]i32) : i32 = reduce (+) 0 xs

entry value_param (n: i64) (xs: []i32) = sum_n n xs

entry entry_value_param (n: i64) (xs: [n]i32) : [n]i32 = map (* 2) xs

entry size_expr (x: i64) (ys: [x + 1]i32) = ys[x]

entry doubled [n] (xs: [n * 2]i32) (ys: [n]i32) = xs ++ ys

def total (x: i64) (ys: [x * 2]i32) = i32.sum ys

entry inner_size_expr (x: i64) (ys: []i32) = total x ys

def pair 't (x: t) (y: t) = (x, y)

entry same_type (xs: []i32) (ys: []i32) = let (a, b) = pair xs ys in map2 (+) a b
