-- Ranges of every form and integer type, with Futhark's message for an
-- invalid one.
-- ==
-- entry: upto_incl
-- input { 1i32 5i32 } output { [1i32, 2i32, 3i32, 4i32, 5i32] }
-- input { 3i32 3i32 } output { [3i32] }
-- input { 1i32 0i32 } error: Range 1\.\.\.0 is invalid\.
-- input { 1i32 -3i32 } error: Range 1\.\.\.-3 is invalid\.

-- ==
-- entry: upto_excl
-- input { 2i64 5i64 } output { [2i64, 3i64, 4i64] }
-- input { 5i64 5i64 } output { empty([0]i64) }
-- input { 6i64 5i64 } error: Range 6\.\.<5 is invalid\.

-- ==
-- entry: downto_u8
-- input { 7u8 3u8 } output { [7u8, 6u8, 5u8, 4u8] }
-- input { 200u8 198u8 } output { [200u8, 199u8] }
-- input { 2u8 2u8 } output { empty([0]u8) }
-- input { 1u8 2u8 } error: Range 1\.\.>2 is invalid\.

-- ==
-- entry: stepped_incl
-- input { 1i64 3i64 10i64 } output { [1i64, 3i64, 5i64, 7i64, 9i64] }
-- input { 10i64 8i64 1i64 } output { [10i64, 8i64, 6i64, 4i64, 2i64] }
-- input { 5i64 3i64 -2i64 } output { [5i64, 3i64, 1i64, -1i64] }
-- input { 5i64 4i64 5i64 } output { [5i64] }
-- input { 1i64 1i64 5i64 } error: Range 1\.\.1\.\.\.5 is invalid\.
-- input { 1i64 3i64 0i64 } error: Range 1\.\.3\.\.\.0 is invalid\.

-- ==
-- entry: stepped_excl
-- input { 0i32 3i32 10i32 } output { [0i32, 3i32, 6i32, 9i32] }
-- input { 0i32 3i32 9i32 } output { [0i32, 3i32, 6i32] }
-- input { 0i32 -1i32 3i32 } error: Range 0\.\.-1\.\.<3 is invalid\.

-- ==
-- entry: stepped_down
-- input { 10u8 7u8 0u8 } output { [10u8, 7u8, 4u8, 1u8] }
-- input { 10u8 12u8 0u8 } error: Range 10\.\.12\.\.>0 is invalid\.

-- ==
-- entry: in_map
-- input { [1i32, 4i32, 2i32] } output { [0i32, 6i32, 1i32] }
-- input { [1i32, 0i32] } error: Range 0\.\.\.-1 is invalid\.

-- ==
-- entry: counts
-- input { 3i64 } output { [0i64, 1i64, 2i64] [7i32, 7i32, 7i32] }
-- input { 0i64 } output { empty([0]i64) empty([0]i32) }
-- input { -2i64 } error: Range 0\.\.1\.\.<-2 is invalid\.

entry upto_incl (a: i32) (b: i32) : []i32 = a...b
entry upto_excl (a: i64) (b: i64) : []i64 = a..<b
entry downto_u8 (a: u8) (b: u8) : []u8 = a..>b
entry stepped_incl (a: i64) (s: i64) (b: i64) : []i64 = a..s...b
entry stepped_excl (a: i32) (s: i32) (b: i32) : []i32 = a..s..<b
entry stepped_down (a: u8) (s: u8) (b: u8) : []u8 = a..s..>b
-- A range inside a map: the sum of 0...n-1 per element.
entry in_map (ns: []i32) : []i32 = map (\n -> i32.sum (0...n-1)) ns
-- iota and replicate fail on negative sizes as the prelude's ranges do.
entry counts (n: i64) : ([]i64, []i32) = (iota n, replicate n 7)
