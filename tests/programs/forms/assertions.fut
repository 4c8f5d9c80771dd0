-- An assertion is checked before the value it guards is computed, so its
-- failure, not the guarded value's, is what a bad input reports: on the
-- host, inside a map's threads, and through a function.
-- ==
-- entry: guarded_division
-- input { 7 } output { 2 }
-- input { 0 } error: Assertion is false: x != 0

-- ==
-- entry: guarded_rows
-- input { [1i64, 2i64, 4i64] } output { [8i64, 4i64, 2i64] }
-- input { [1i64, 0i64, 4i64] } error: Assertion is false: x > 0

-- ==
-- entry: guarded_call
-- input { [3, 1, 2] 1i64 } output { 1 }
-- input { [3, 1, 2] 5i64 } error: Assertion is false: i < length xs

def safe_div (x: i32) = assert (x != 0) (14 / x)

entry guarded_division (x: i32) : i32 = safe_div x

entry guarded_rows (xs: []i64) : []i64 = map (\x -> assert (x > 0) (8 / x)) xs

def at (xs: []i32) (i: i64) = assert (i < length xs) xs[i]

entry guarded_call (xs: []i32) (i: i64) : i32 = at xs i
