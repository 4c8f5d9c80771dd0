-- Sum of an f32 array: one read per element; memory bound.
entry main (xs: []f32) : f32 = reduce (+) 0 xs
