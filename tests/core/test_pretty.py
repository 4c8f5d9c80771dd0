"""The core IR printer on a small program (golden text), and the IR's
structural equality that the printer's future parser will rely on."""

from __future__ import annotations

import textwrap

from futgen.core import internalise, pretty
from futgen.frontend import check_source

SOURCE = """
def twice (x: i32) : i32 = x * 2
entry main (n: i64) (xs: [n]i32) : ([n]i32, i32) =
  let ys = map twice xs
  in (ys, if n == 0 then 0 else ys[0])
"""

EXPECTED = """\
entry fun main(n_0: i64, xs_1: [?]i32) : ([?]i32, i32) =
{
  let (n_2: i64) = size xs_1 0
  let (c_3: bool) = ==.i64 n_2 n_0
  let (check_4: bool) = assert c_3 'main: invalid size: parameter xs: [n]i32 has shape [{0}] where its type says [{1}]' (n_2, n_0)
  let (map_9: [n_0]i32) =
    screma n_0 (xs_1)
      map
        \\(x_5: i32) : (i32) ->
        {
          let (twice_8: i32) = apply twice(x_5)
          in (twice_8)
        }
  let (c_10: bool) = ==.i64 n_0 0i64
  let (if_12: i32) =
    if c_10 : (i32)
    then
    {
      in (0i32)
    }
    else
    {
      let (elem_11: i32) = map_9[0i64]
      in (elem_11)
    }
  in (map_9, if_12)
}

fun twice(x_6: i32) : (i32) =
{
  let (x_7: i32) = *.i32 x_6 2i32
  in (x_7)
}
"""


def test_pretty_golden() -> None:
    text = pretty(internalise(check_source(textwrap.dedent(SOURCE), "golden.fut")))
    assert text == EXPECTED, text


def test_internalisation_is_deterministic() -> None:
    a = internalise(check_source(SOURCE, "a.fut"))
    b = internalise(check_source(SOURCE, "a.fut"))
    assert a == b and hash(a) == hash(b)
