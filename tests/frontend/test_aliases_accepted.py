"""Programs Futhark's uniqueness rules accept that the checker once rejected,
each next to a close variant that must still be rejected."""

from checks import accept, reject

# A function in a global constant whose closure holds none of the
# constant's arrays: its results are fresh, so they alias no global.
GLOBAL_FN = """
def g : ([3]i32, i32 -> [3]i32) = let k = 2i32 in (replicate 3 1, \\i -> replicate 3 (i + k))
def main (x: i32) = g.1 x
"""


def test_function_in_global_constant_with_no_memory():
    accept(GLOBAL_FN)


def test_function_in_global_constant_returning_its_array():
    src = """
def g : ([3]i32, i32 -> [3]i32) = let a = replicate 3 1i32 in (a, \\_ -> a)
def main (x: i32) = g.1 x
"""
    msg = reject(src)
    assert 'Function result aliases the free variable "g"' in msg
    assert "t.fut:3:21" in msg


# The indices of an update are evaluated before its value consumes.
CONSUME = "def f (xs: *[]i64) : i64 = xs[0]\n"


def test_update_index_reads_what_the_value_consumes():
    accept(CONSUME + "def main (xs: *[]i64) (ys: *[]i64) = ys with [xs[1]] = f xs")


def test_use_after_the_value_consumed():
    msg = reject(CONSUME + "def main (xs: *[]i64) (ys: *[]i64) = (ys with [0] = f xs, xs[1])")
    assert 'Using "xs", but this was consumed at t.fut:2:55' in msg
    assert "t.fut:2:59" in msg


# `src with [i].f = v` checks (and consumes) `src` once.
ID = "def f 't (xs: *[]t) : []t = xs\n"


def test_update_through_field_of_application():
    accept(ID + "def main (xs: *[](i64, i64)) = f xs with [0].0 = 2")


def test_update_through_field_then_use_of_consumed():
    msg = reject(ID + "def main (xs: *[](i64, i64)) = (f xs with [0].0 = 2, xs[0].1)")
    assert 'Using "xs", but this was consumed' in msg
    assert "t.fut:2:54" in msg


def test_update_index_field_index():
    accept("def main (v: i32) =\n"
           "  let rs: *[]{a: []i32} = [{a = [1, 2]}] in (rs with [0].a[1] = v)[0].a")


def test_update_index_field_index_then_use():
    msg = reject("def main (v: i32) =\n"
                 "  let rs: *[]{a: []i32} = [{a = [1, 2]}] in (rs with [0].a[1] = v, rs[0].a)")
    assert 'Using "rs", but this was consumed' in msg
    assert "t.fut:2:68" in msg


# A function declaring no return type has Futhark's inferred uniqueness:
# a result aliasing only consumed parameters is unique.
LOOP = """
def main (acc: *[]i32) (xs: []i32) =
  let (acc, _) = loop (acc, xs) for i < 2 do (step acc xs, xs) in acc
"""


def test_inferred_unique_result_returned_for_consumed_loop_parameter():
    accept("def step (acc: *[]i32) (xs: []i32) = let ys = map (+ xs[0]) acc in ys" + LOOP)


def test_declared_non_unique_result_still_aliases_its_arguments():
    msg = reject("def step (acc: *[]i32) (xs: []i32) : []i32 = let ys = map (+ xs[0]) acc in ys"
                 + LOOP)
    assert 'Return value for loop parameter "xs" aliases other consumed' in msg
    assert "t.fut:3:18" in msg


def test_inferred_result_aliasing_an_observed_parameter():
    msg = reject("def step (acc: *[]i32) (xs: []i32) = if xs[0] > 0 then acc else xs" + LOOP)
    assert 'Return value for loop parameter "xs" aliases other consumed' in msg
    assert "t.fut:3:18" in msg
