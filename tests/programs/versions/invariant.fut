-- Work no point of a map changes runs once, before the map (LocVolCalib's
-- grid operator, once rather than per strike).  Its reads of xs[1] and
-- xs[0] may fail: they fail as before where the map has points, and not
-- where it has none.
-- ==
-- entry: main
-- input { [2f32, 3f32, 5f32, 6f32] [1f32, 2f32] }
-- output { [[0f32, 0.125f32, 0.375f32, 0.5f32], [0f32, 0.25f32, 0.75f32, 1f32]] }
-- input { [1f32] empty([0]f32) }
-- output { empty([0][1]f32) }
-- input { [1f32] [2f32] } error: out of bounds
-- random input { [1000]f32 [300]f32 }
entry main [n][k] (xs: [n]f32) (ss: [k]f32) : [k][n]f32 =
  map (\s -> let unit = xs[1] - xs[0]
             let steps = map (\x -> (x - xs[0]) / unit) xs
             let total = f32.sum steps
             in map (\x -> x * s / total) steps)
      ss

-- A scalar read (ts[i]) stays where it was, read by threads: on the host it
-- would be a copy from the device; the sum that uses it moves all the same,
-- reading it in its own threads.
-- ==
-- entry: scaled_exps
-- input { [0f32, 1f32, 2f32] 0i64 [1f32, 3f32] }
-- output { [[0.33333334f32, 0.33333334f32, 0.33333334f32], [1f32, 1f32, 1f32]] }
-- input { [0f32, 1f32, 2f32] 5i64 empty([0]f32) }
-- output { empty([0][3]f32) }
-- input { [0f32, 1f32, 2f32] 5i64 [1f32] } error: out of bounds
-- random input { [1000]f32 7i64 [300]f32 }
entry scaled_exps [n][k] (xs: [n]f32) (i: i64) (ss: [k]f32) : [k][n]f32 =
  map (\s -> let t = xs[i]
             let ys = map (\x -> f32.exp (x * t)) xs
             let total = f32.sum ys
             in map (\y -> y * s / total) ys)
      ss

-- An array literal of read scalars (LocVolCalib's boundary rows of its
-- operators) moves too, made by one thread: its reads stay on the device.
-- ==
-- entry: stencil
-- input { [1f32, 3f32] [1f32, 2f32] }
-- output { [[0f32, -0.5f32, 0.5f32], [0f32, -1f32, 1f32]] }
-- input { [1f32] empty([0]f32) }
-- output { empty([0][3]f32) }
-- input { [1f32] [2f32] } error: out of bounds
entry stencil [n][k] (xs: [n]f32) (ss: [k]f32) : [k][3]f32 =
  map (\s -> let d = xs[1] - xs[0]
             let w = [0f32, -1 / d, 1 / d]
             in map (* s) w)
      ss

-- A moved map whose type names a read (its rows' size) stays in place.
-- ==
-- entry: sized
-- input { [2i64, 3i64] [1i64, 2i64] [1i64, 2i64, 3i64] }
-- output { [4i64, 5i64, 6i64] }
-- input { [2i64] [1i64, 2i64] empty([0]i64) }
-- output { empty([0]i64) }
entry sized [n][m][k] (xs: [n]i64) (zs: [m]i64) (ss: [k]i64) : [k]i64 =
  map (\s -> let r = xs[0]
             let ys = map (\x -> replicate r x) zs
             in s + ys[0][0] + ys[1][1])
      ss

-- Only cheap scalars built on a read are copied into moved work: a branch
-- with a loop on it stays, and the sum that uses it with it.
-- ==
-- entry: branchy
-- input { [2i32, 3i32] [1i32, 2i32] [10i32, 20i32] }
-- output { [[20i32, 21i32], [30i32, 31i32]] }
-- input { [2i32, 3i32] [1i32, 2i32] empty([0]i32) }
-- output { empty([0][2]i32) }
entry branchy [n][m][k] (xs: [n]i32) (zs: [m]i32) (ss: [k]i32) : [k][m]i32 =
  map (\s -> let r = xs[0]
             let t = if r > 0 then (let q = r * 2 in loop acc = q for _i < r do acc + 1) else 0
             let tot = i32.sum (map (\x -> x + t) zs)
             in map (+ (s + tot - t)) zs)
      ss

-- A new array moves only where the map has points: its size may be
-- invalid, or too large, exactly where the map has none.
-- ==
-- entry: short
-- input { [1i64, 2i64] empty([0]i64) }
-- output { empty([0]i64) }
-- input { [1i64, 2i64] [1i64] } error: .*
-- input { [1i64, 2i64, 3i64, 4i64, 5i64, 6i64, 7i64] [1i64, 2i64] }
-- output { [3i64, 4i64] }
entry short [n][k] (xs: [n]i64) (ss: [k]i64) : [k]i64 =
  map (\s -> let a = scan (+) 0 (replicate (n - 5) 1i64) in s + a[1]) ss

-- ==
-- entry: huge
-- input { [1i64, 2i64] empty([0]i64) }
-- output { empty([0]i64) }
entry huge [n][k] (xs: [n]i64) (ss: [k]i64) : [k]i64 =
  map (\s -> let a = replicate (n * 1000000000000) 3i64 in s + a[n]) ss
