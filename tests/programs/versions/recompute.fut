-- Per point, two scalars computed from its parameter, which cannot fail,
-- used by two parallel parts: the flat version computes them again in
-- each part's kernels (G6 with recomputation) rather than in a map of
-- their own.  An element read could fail, so it stays in a map of its own
-- (a copy inside a SOAC's function would not run where it has no points).
-- ==
-- entry: main
-- random input { [16][100]f32 [16]f32 }
-- random input { [300][7]f32 [300]f32 }
-- input { empty([0][3]f32) empty([0]f32) } output { empty([0][3]f32) }
entry main [k][n] (xss: [k][n]f32) (ts: [k]f32) : [k][n]f32 =
  map2 (\xs t -> let a = t * 2
                 let b = 1 / (f32.abs t + 3)
                 let ys = scan (+) 0 (map (\x -> x * a) xs)
                 in map2 (\x y -> x * b + y) xs ys) xss ts
