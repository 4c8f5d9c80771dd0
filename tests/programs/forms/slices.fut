-- Slices with strides, negative strides and omitted bounds, on one and two
-- dimensions, with Futhark's out-of-bounds message.
-- ==
-- entry: reversed
-- input { [1, 2, 3] } output { [3, 2, 1] }
-- input { empty([0]i32) } output { empty([0]i32) }

-- ==
-- entry: general
-- input { [1, 2, 3, 4, 5] 0i64 5i64 2i64 } output { [1, 3, 5] }
-- input { [1, 2, 3, 4, 5] 4i64 -1i64 -2i64 } output { [5, 3, 1] }
-- input { [1, 2, 3, 4, 5] 0i64 6i64 3i64 } output { [1, 4] }
-- input { [1, 2, 3, 4, 5] 7i64 7i64 1i64 } output { empty([0]i32) }
-- input { [1, 2, 3, 4, 5] 4i64 0i64 -1i64 } output { [5, 4, 3, 2] }
-- input { [1, 2, 3, 4, 5] 0i64 7i64 3i64 } error: Index \[0:7:3\] out of bounds for array of shape \[5\]\.
-- input { [1, 2, 3, 4, 5] 3i64 1i64 1i64 } error: Index \[3:1:1\] out of bounds
-- input { [1, 2, 3, 4, 5] 1i64 2i64 0i64 } error: Index \[1:2:0\] out of bounds
-- input { [1, 2, 3, 4, 5] 5i64 0i64 -1i64 } error: Index \[5:0:-1\] out of bounds

-- ==
-- entry: from_back
-- input { [1, 2, 3, 4, 5] 2i64 } output { [3, 2, 1] }
-- input { [1, 2, 3, 4, 5] 5i64 } error: Index \[5::-1\] out of bounds for array of shape \[5\]\.

-- ==
-- entry: to_back
-- input { [1, 2, 3, 4, 5] 1i64 } output { [5, 4, 3] }
-- input { [1, 2, 3, 4, 5] -1i64 } output { [5, 4, 3, 2, 1] }
-- input { [1, 2, 3, 4, 5] -2i64 } error: Index \[:-2:-1\] out of bounds

-- ==
-- entry: tail_and_evens
-- input { [1, 2, 3, 4, 5] 5i64 } output { [2, 3, 4, 5] [1, 3, 5] }
-- input { [1, 2, 3, 4, 5] 7i64 } error: Index \[:7:2\] out of bounds for array of shape \[5\]\.
-- input { empty([0]i32) 0i64 } error: Index \[1:\] out of bounds for array of shape \[0\]\.

-- ==
-- entry: columns
-- input { [[1, 2, 3], [4, 5, 6]] } output { [[2, 3], [5, 6]] }
-- input { [[1, 2], [4, 5]] } error: Index \[0:, 1:3\] out of bounds for array of shape \[2\]\[2\]\.

-- ==
-- entry: row_backwards
-- input { [[1, 2, 3], [4, 5, 6]] 1i64 } output { [6, 4] }
-- input { [[1, 2, 3], [4, 5, 6]] 2i64 } error: Index \[2, ::-2\] out of bounds for array of shape \[2\]\[3\]\.

-- ==
-- entry: flipped_tails
-- input { [[1, 2, 3], [4, 5, 6]] } output { [[5, 6], [2, 3]] }
-- input { empty([0][3]i32) } output { empty([0][2]i32) }

-- ==
-- entry: column
-- input { [[1, 2, 3], [4, 5, 6]] 2i64 } output { [3, 6] }
-- input { [[1, 2, 3], [4, 5, 6]] 3i64 } error: Index \[0:, 3\] out of bounds for array of shape \[2\]\[3\]\.

-- ==
-- entry: window_sums
-- input { [1, 2, 3, 4, 5, 6] } output { [6, 14, 22] }

-- ==
-- entry: reversed_rows
-- input { [[1, 2, 3], [4, 5, 6]] 0i64 } output { [6, 15] }
-- input { [[1, 2, 3], [4, 5, 6]] 2i64 } output { [4, 13] }
-- input { [[1, 2, 3], [4, 5, 6]] 3i64 } error: Index \[3\] out of bounds for array of shape \[3\]\.

-- ==
-- entry: strided_update
-- input { [0, 0, 0, 0, 0] [7, 8, 9] } output { [9, 0, 8, 0, 7] }

entry reversed (xs: []i32) : []i32 = xs[::-1]
entry general (xs: []i32) (i: i64) (j: i64) (s: i64) : []i32 = xs[i:j:s]
entry from_back (xs: []i32) (i: i64) : []i32 = xs[i::-1]
entry to_back (xs: []i32) (j: i64) : []i32 = xs[:j:-1]
entry tail_and_evens (xs: []i32) (n: i64) : ([]i32, []i32) = (xs[1:], xs[:n:2])
entry columns (xss: [][]i32) : [][]i32 = xss[:, 1:3]
entry row_backwards (xss: [][]i32) (i: i64) : []i32 = xss[i, ::-2]
entry flipped_tails (xss: [][]i32) : [][]i32 = xss[::-1, 1:]
entry column (xss: [][]i32) (j: i64) : []i32 = xss[:, j]
-- Slices per thread, one backwards: twice the sum of each pair.
entry window_sums (xs: []i32) : []i32 =
  map (\i -> i32.sum xs[2 * i:2 * i + 2] + i32.sum xs[2 * i + 1:2 * i - 1:-1])
      (iota (length xs / 2))
-- Each row reversed, then indexed and sliced again (views in kernel code).
entry reversed_rows (xss: [][]i32) (k: i64) : []i32 =
  map (\row -> let r = row[::-1] in r[k] + i32.sum r[1:]) xss
entry strided_update (xs: *[]i32) (ys: []i32) : []i32 = xs with [::2] = ys[::-1]
