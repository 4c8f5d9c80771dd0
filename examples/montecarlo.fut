-- A Monte Carlo estimate of pi.  Sample i is the point (x, y) in the unit
-- square whose coordinates come from a deterministic, counter-based
-- pseudo-random generator: the 32-bit integer hash "lowbias32" (xorshifts
-- and multiplications on u32, which wrap around) of the sample's index
-- mixed with a seed.  Each coordinate keeps the top 16 bits of its hash, so
-- the test "inside the quarter circle" is the exact integer comparison
-- x^2 + y^2 < 2^32, and the count comes out the same on every executor.
-- `main` returns the count of points inside and the estimate 4 * inside / n
-- (0 when n = 0).  Every sample is independent: a map and a reduce, no
-- sequential random state.
-- ==
-- input { 0u32 0i64 }
-- output { 0i64 0.0f32 }
-- input { 0u32 1i64 }
-- output { 1i64 4.0f32 }
-- input { 0u32 10i64 }
-- output { 9i64 3.6f32 }
-- input { 7u32 100i64 }
-- output { 82i64 3.28f32 }
-- input { 42u32 1000i64 }
-- output { 798i64 3.192f32 }
-- input { 2024u32 10000i64 }
-- output { 7852i64 3.1408f32 }

-- | The "lowbias32" integer hash (a xorshift-multiply mixer).
def hash (x: u32) : u32 =
  let x = x ^ (x >> 16)
  let x = x * 0x7feb352d
  let x = x ^ (x >> 15)
  let x = x * 0x846ca68b
  in x ^ (x >> 16)

-- | A pseudo-random number in [0, 2^16) for counter `k` under `seed`.
def rand16 (seed: u32) (k: i64) : i64 =
  i64.u32 (hash (seed ^ hash (u32.i64 k)) >> 16)

-- | Whether sample `i` falls inside the quarter circle of radius 2^16.
def inside (seed: u32) (i: i64) : bool =
  let x = rand16 seed (2 * i)
  let y = rand16 seed (2 * i + 1)
  in x * x + y * y < 0x100000000

entry main (seed: u32) (n: i64) : (i64, f32) =
  let hits = map (\i -> if inside seed i then 1 else 0) (iota n) |> reduce (+) 0
  let estimate = if n == 0 then 0 else 4 * f32.i64 hits / f32.i64 n
  in (hits, estimate)
