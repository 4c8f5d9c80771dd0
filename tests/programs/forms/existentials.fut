-- Existential sizes written as `?[n].t`: in a return type, in the result
-- type of a function parameter (each call has a size of its own), and in
-- a type abbreviation.
-- ==
-- entry: lengths
-- input { [2i64, 0i64, 3i64] [7, 8, 9] } output { [2i64, 0i64, 3i64] }

def lengths_of [n] 'a 'b (f: a -> ?[k].[k]b) (as: [n]a) : [n]i64 =
  map (\a -> length (f a)) as

entry lengths (ks: []i64) (xs: []i32) : []i64 =
  lengths_of (\(k: i64, x: i32) : (?[m].[m]i32) -> replicate k x) (zip ks xs)

-- ==
-- entry: positives
-- input { [1, -2, 3, 0, 5] } output { 3i64 [1, 3, 5] }

def keep_positive [m] (xs: [m]i32) : ?[k].[k]i32 = filter (> 0) xs

entry positives (xs: []i32) : (i64, []i32) =
  let ys = keep_positive xs
  in (length ys, ys)

-- ==
-- entry: pairs
-- input { 2i64 } output { [0i64, 1i64] [0i64, 1i64, 2i64] }

type~ two_runs = ?[n][m].([n]i64, [m]i64)

def runs (k: i64) : two_runs = (iota k, iota (k + 1))

entry pairs (k: i64) : ([]i64, []i64) = runs k

-- A size computed from an existential one is existential too.
-- ==
-- entry: split_evens
-- input { [1, 2, 3, 4, 6] } output { [2, 4, 6] [1, 3] }

def split_by 'a [n] (p: a -> bool) (xs: [n]a) : ?[k].([k]a, [n - k]a) =
  let (yes, no) = partition p xs
  in (yes, no :> [n - length yes]a)

entry split_evens (xs: []i32) : ([]i32, []i32) = split_by (\x -> x % 2 == 0) xs
