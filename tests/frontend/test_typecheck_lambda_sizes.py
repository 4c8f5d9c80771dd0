"""Sizes of a declared type that a lambda's parameters would name
(futgen/frontend/lambda_sizes.py)."""

from checks import accept, reject


def test_declared_anonymous_size_may_not_name_lambda_parameter():
    src = "def grow : i64 -> []i32 = \\k -> replicate (k + 2) 0i32\n"
    msg = reject(src)
    assert "t.fut:1:27:" in msg
    assert 'anonymous size of the declared type to "k + 2" (scope violation)' in msg
    assert '"k" is not in scope' in msg and "#scope-violation" in msg
    accept(src.replace("(k + 2)", "5"))
    accept("def grow : i64 -> []i32 = \\k -> filter (> 0) (replicate k 1i32)\n")


def test_through_a_type_abbreviation_and_nested_lambdas():
    src = ("type grid [n] = [n][n]u8\n"
           "def mk : i64 -> i64 -> grid [] = \\a -> \\b -> replicate b (replicate b 0u8)\n")
    msg = reject(src)
    assert "t.fut:2:34:" in msg and '"b" is not in scope' in msg
    accept(src.replace("replicate b (replicate b 0u8)", "replicate 3 (replicate 3 0u8)"))


def test_named_sizes_of_the_declared_type_may():
    accept("def grow : (k: i64) -> [k]i32 = \\k -> replicate k 0i32\n")
    accept("def grow (k: i64) : [k]i32 = replicate k 0i32\n")
