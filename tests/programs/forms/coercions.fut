-- Size coercions, checked at run time with Futhark's compiled message, and
-- size binders in let and loop patterns.
-- ==
-- entry: reshape_to
-- input { [[1, 2], [3, 4]] 2i64 2i64 } output { [[1, 2], [3, 4]] }
-- input { [[1, 2], [3, 4]] 1i64 4i64 } error: Value of \(desugared\) shape \[2\]\[2\] cannot match shape of type "\[1\]\[4\]i32"\.

-- ==
-- entry: zip_same
-- input { [1, 2, 3] [4, 5, 6] } output { [5, 7, 9] }
-- input { [1, 2, 3] [4, 5] } error: cannot match shape of type "\[3\]i32"

-- ==
-- entry: let_size
-- input { [1, -2, 3, 4] } output { 11i64 }
-- input { empty([0]i32) } output { 0i64 }

-- ==
-- entry: concat_size
-- input { [1, 2, 3] } output { [3, 2, 1, 3, 2, 1] }

-- ==
-- entry: loop_size
-- input { 4i64 } output { [1i64, 1i64, 3i64, 5i64, 7i64] }
-- input { 0i64 } output { [1i64] }

-- ==
-- entry: grow
-- input { 5i64 } output { 10i64 }

-- ==
-- entry: empty_square
-- input { } output { 0i64 }

entry reshape_to [n] [m] (x: [n][m]i32) (a: i64) (b: i64) = x :> [a][b]i32
entry zip_same [n] [m] (xs: [n]i32) (ys: [m]i32) : [n]i32 =
  map2 (+) xs (ys :> [n]i32)
entry let_size (xs: []i32) : i64 =
  let [n] (ys: [n]i32) = filter (> 0) xs
  in n + i64.sum (map (\i -> i64.i32 ys[i]) (iota n))
entry concat_size (xs: []i32) : []i32 =
  let [m] zs: [m]i32 = xs ++ xs
  in map (\i -> zs[m - 1 - i]) (iota m)
entry loop_size (n: i64) : []i64 =
  loop [k] (acc: [k]i64) = [1] for i < n do acc ++ [k + i]
-- A loop whose merge array starts empty and grows.
entry grow (n: i64) : i64 =
  let xs = loop (acc: []i64) = [] while length acc < n do acc ++ [length acc]
  in i64.sum xs
entry empty_square : i64 =
  let [k] (xss: [k][k]i64) = []
  in k
