"""Signatures that are the real contract: a call is proven wrong only by a signature no wrapper can widen.

pandas 3.1 declares ``axis`` of ``DataFrame.mean`` keyword-only (``__signature__``) while its
``deprecate_nonkeyword_arguments`` wrapper still passes ``df.mean(1)`` on with a warning; a user's
``functools.wraps`` over ``*args, **kwargs`` may take anything. Every case runs for real in a kernel.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.python  # noqa: F401  (registers the checks)
from crane_lsp.snapshot import ProbeQuery
from tests.lib_checks_util import Case, verify
from tests.probe_util import snapshot

SIG = "python.call-signature"
NUM = "import pandas as pd, functools\ndf = pd.DataFrame({'a': [1.0, 2.0], 'b': [3.0, 4.0]})\n"
WRAPS = (
    "import functools\n"
    "def inner(a):\n    return a\n"
    "@functools.wraps(inner)\n"
    "def outer(*args, **kwargs):\n    return inner(args[0])\n"
)

CASES = [
    # the deprecation shim accepts what the declared signature says it rejects: the cell runs
    Case("pandas-deprecated-positional", SIG, NUM, "m = df.mean(1)\ns = df['a'].sum(0)\n", None),
    # the wrapped function's own signature still bounds the call: four positionals after self raise
    Case("pandas-too-many-positional", SIG, NUM, "m = df.mean(1, True, False, 5)\n", "TypeError", 0),
    # a user's functools.wraps over *args, **kwargs takes more than the wrapped signature
    Case("user-wraps-wider", SIG, WRAPS, "x = outer(1, 2, 3)\n", None),
    Case("user-plain-too-many", SIG, WRAPS, "x = inner(1, 2, 3)\n", "TypeError", 0),
    # sklearn's validate_params binds to the wrapped signature first: an unknown keyword is proven
    Case(
        "sklearn-validated-keyword",
        SIG,
        "from sklearn.model_selection import train_test_split\nimport numpy as np\nX = np.zeros((10, 2))\n",
        "a, b = train_test_split(X, test_sise=0.2)\n",
        "TypeError",
        0,
    ),
    Case(
        "sklearn-validated-fine",
        SIG,
        "from sklearn.model_selection import train_test_split\nimport numpy as np\nX = np.zeros((10, 2))\n",
        "a, b = train_test_split(X, test_size=0.2)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_signature_contract(kernel, case: Case) -> None:
    verify(kernel, case)


def test_probe_gives_params_only_for_a_signature_no_wrapper_widens(kernel) -> None:
    """The summary keeps the declared text for display; ``params`` (what checks bind to) is the contract."""
    kernel.run("%reset -f")
    kernel.run(
        NUM + WRAPS + "class Meta(type):\n    def __call__(cls, *a, **k):\n        return 1\n"
        "class K(metaclass=Meta):\n    def __init__(self, x):\n        pass\n"
    )
    snap = snapshot(kernel, ProbeQuery(names=["outer", "inner", "K", "df"], chains=["df.mean"]))
    mean = snap.variables["df.mean"]
    assert mean.params is not None
    axis = next(p for p in mean.params if p.name == "axis")
    assert axis.kind == "POSITIONAL_OR_KEYWORD"  # the wrapped function's own, not the declared keyword-only
    assert snap.variables["outer"].params is None
    assert snap.variables["outer"].signature  # still shown
    assert [p.name for p in snap.variables["inner"].params or []] == ["a"]
    assert snap.variables["K"].params is None  # a metaclass __call__ decides, not __init__
