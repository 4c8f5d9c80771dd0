-- Assertions inside #[unsafe] are left out of compiled code (Futhark's
-- compilers do; interpreters check them), those outside still checked.
-- ==
-- entry: halve
-- input { 6i32 } output { 3i32 }
-- compiled input { 7i32 } output { 3i32 }

-- ==
-- entry: halves
-- compiled input { [4i32, 5i32, 8i32] } output { [2i32, 2i32, 4i32] }

-- ==
-- entry: checked_after
-- input { 4i32 } output { 2i32 }
-- compiled input { -3i32 } error: Assertion is false: x >= 0

-- ==
-- entry: whole_def
-- compiled input { 9i32 } output { 4i32 }

entry halve (x: i32) = #[unsafe] assert (x % 2 == 0) (x / 2)

entry halves (xs: []i32) = #[unsafe] map (\x -> assert (x % 2 == 0) (x / 2)) xs

-- A first-order function checked where called outside #[unsafe].
def half (x: i32) = assert (x >= 0) (x / 2)

entry checked_after (x: i32) =
  let y = #[unsafe] assert (x % 2 == 0) x
  in half y

#[unsafe]
entry whole_def (x: i32) = assert (x % 2 == 0) (x / 2)
