-- saxpy: one map, two reads and one write per element; memory bound.
entry main (a: f32) (xs: []f32) (ys: []f32) : []f32 =
  map2 (\x y -> a * x + y) xs ys
