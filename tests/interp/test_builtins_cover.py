"""Every prelude name has an implementation."""

import re

from futgen.frontend.prelude import SIGNATURES
from futgen.interp.builtins import BUILTINS


def test_every_signature_implemented() -> None:
    missing = sorted(k for k in SIGNATURES if k not in BUILTINS)
    assert missing == []


def test_arities_match_signatures() -> None:
    for name, sig in SIGNATURES.items():
        params = len(re.findall(r"\((\w+):", sig))
        assert BUILTINS[name][0] == params, name
