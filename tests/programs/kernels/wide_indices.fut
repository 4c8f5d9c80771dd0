-- An intra-block kernel (rows scanned in shared memory) whose index
-- arithmetic runs in 32 bits where the host finds every size, array and
-- i64 parameter small enough, and in 64 bits otherwise: `k` beyond 2^29
-- sends it to the 64-bit variant.  `i * i * 1000000007` needs 64 bits in
-- either.
-- ==
-- input { [[1i64, 2i64, 3i64], [4i64, 5i64, 6i64]] 7i64 }
-- output { [[27i64, 1000000063i64, 5000000125i64], [36i64, 1000000081i64, 5000000152i64]] }

entry main [n][m] (xss: [n][m]i64) (k: i64) : [n][m]i64 =
  map (\xs -> let s = scan (+) 0 xs
              let ys = map2 (\x i -> x * i + s[m - 1 - i] + (i + k) * 3 + i * i * 1000000007)
                            xs (iota m)
              in scan (+) 0 ys)
      xss
