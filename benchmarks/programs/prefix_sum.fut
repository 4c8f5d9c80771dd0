-- Inclusive prefix sum of an f32 array: one read and one write per element (at best).
entry main (xs: []f32) : []f32 = scan (+) 0 xs
