"""A scikit-learn ``Bunch`` read through its attributes: the probe replays ``Bunch.__getattr__``
(``self[key]``), so ``iris.target_names`` is summarised as the array behind it and ``iris.targets`` is
proven absent. The index checks then see the array's length, and the attribute checks the missing key;
each case is run for real.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.arrays
import crane_lsp.checks.containers
import crane_lsp.checks.python  # noqa: F401
from crane_lsp.analysis.parse import analyze
from crane_lsp.snapshot import ProbeQuery
from tests.check_util import assert_predicts, assert_silent_and_runs
from tests.lib_checks_util import Case, verify
from tests.probe_util import snapshot

STATE = (
    "from sklearn.datasets import load_iris\n"
    "from sklearn.utils import Bunch\n"
    "iris = load_iris()\n"
    "class MyBunch(Bunch):\n"
    "    def __getattr__(self, key):\n"
    "        return 0\n"
    "mine = MyBunch(a=[1, 2])\n"
    "nested = Bunch(inner=Bunch(counts=[1, 2, 3]))\n"
)

CASES = [
    Case("bunch-array-index", "array.index-range", STATE, "x = iris.target_names[5]\n", "IndexError"),
    Case(
        "bunch-array-negative",
        "array.index-range",
        STATE,
        "n = 1\nx = iris.target_names[-4]\n",
        "IndexError",
        1,
    ),
    Case("bunch-missing-key-attr", "python.bunch-attribute", STATE, "y = iris.targets\n", "AttributeError"),
    Case("bunch-nested-list", "python.missing-key", STATE, "v = nested.inner.counts[3]\n", "IndexError"),
    Case(
        "bunch-attributes-fine",
        "array.index-range",
        STATE,
        "x = iris.target_names[2]\nd = iris.data[149, 3]\nf = iris.feature_names[3]\n"
        "v = nested.inner.counts[2]\nm = nested.inner.values()\n",
        None,
    ),
    Case("bunch-subclass-own-getattr", "python.bunch-attribute", STATE, "z = mine.whatever\n", None),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bunch_attributes(kernel, case: Case) -> None:
    verify(kernel, case)


def test_probe_replays_bunch_getattr(kernel) -> None:
    """The attribute behind a key is summarised (an ndarray with its shape); a missing key reads absent; a
    subclass with its own ``__getattr__`` stays open."""
    kernel.run("%reset -f")
    kernel.run(STATE)
    facts = analyze("x = iris.target_names\ny = iris.targets\nz = mine.a\n")
    snap = snapshot(kernel, ProbeQuery(**facts.probe_query_fields(), object_budget_s=10, request_budget_s=30))
    assert snap.attributes["iris.target_names"].exists is True
    assert snap.variables["iris.target_names"].shape == [3]
    assert snap.attributes["iris.targets"].exists is False
    assert snap.attributes["mine.a"].exists is None


def test_all_checks_together(kernel) -> None:
    """Through the runner: one finding for a missing key (the Bunch check's, with the keys), none for the
    attributes that exist."""
    first = assert_predicts(kernel, STATE, "t = iris.target\ny = iris.targets\n", "AttributeError", 1)
    assert first.check_id == "python.bunch-attribute" and "target_names" in first.evidence[0][1]
    assert_silent_and_runs(kernel, STATE, "x = iris.target_names[2]\nk = list(iris.keys())\n")
