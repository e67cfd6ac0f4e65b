"""``python.method-signature``: a method call on an estimator the cell builds from a kernel class, with
arguments the method's real contract rejects, really raises TypeError in a real kernel; calls the method
accepts, and a kernel subclass whose own ``fit`` takes ``**kwargs``, run clean and stay silent.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.built_methods  # noqa: F401
from crane_lsp.analysis.parse import analyze
from tests.check_util import assert_predicts, assert_silent_and_runs
from tests.lib_checks_util import Case, verify

STATE = (
    "import numpy as np\n"
    "from sklearn.linear_model import LinearRegression\n"
    "from sklearn.ensemble import RandomForestClassifier as RFC\n"
    "X = np.arange(20.0).reshape(10, 2)\n"
    "y = np.arange(10.0)\n"
    "yc = np.array([0, 1] * 5)\n"
    "class MyLR(LinearRegression):\n"
    "    def fit(self, X, y, **kw):\n"
    "        return super().fit(X, y)\n"
)
SIG = "python.method-signature"

CASES = [
    Case(
        "fit-unknown-keyword", SIG, STATE, "m = LinearRegression()\nm.fit(X, y, epochs=3)\n", "TypeError", 1
    ),
    Case(
        "aliased-class-predict-too-many",
        SIG,
        STATE,
        "m = RFC(n_estimators=5, random_state=0)\nm.fit(X, yc)\np = m.predict(X, 3)\n",
        "TypeError",
        2,
    ),
    Case(
        "built-methods-fine",
        SIG,
        STATE,
        "m = LinearRegression(fit_intercept=False)\nm.fit(X, y, sample_weight=None)\np = m.predict(X)\n"
        "r = RFC(n_estimators=5)\nr.fit(X, yc)\nq = r.predict_proba(X)\nu = MyLR()\nu.fit(X, y, epochs=3)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_built_method_signature(kernel, case: Case) -> None:
    verify(kernel, case)


def test_probe_query_reads_the_method_on_the_kernel_class() -> None:
    """The probe is asked for ``C.method`` only for a name the cell binds to ``C(...)`` of a kernel name."""
    fields = analyze("m = LinearRegression()\nm.fit(X, y)\nimport os\nk = os.getcwd()\nk.strip()\n")
    chains = fields.probe_query_fields()["chains"]
    assert "LinearRegression.fit" in chains
    assert not any(c.endswith(".strip") for c in chains)


def test_all_checks_together(kernel) -> None:
    """Through the runner with every check: the keyword is the first finding, on its line; the fine calls
    raise nothing from any check."""
    cell = "m = LinearRegression()\nm.fit(X, y, epochs=3)\n"
    first = assert_predicts(kernel, STATE, cell, "TypeError", 1, check_id=SIG, message="epochs")
    assert first.evidence[0] == ("signature of LinearRegression.fit", "(self, X, y, sample_weight=None)")
    assert_silent_and_runs(kernel, STATE, CASES[-1].cell)
