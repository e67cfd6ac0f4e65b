"""``python.call-signature`` on a class or function the cell imports itself
(``from sklearn.ensemble import RandomForestClassifier`` then ``RandomForestClassifier(n_estimator=10)``):
the probe reads it from the module the kernel has already loaded (chain
``@sklearn.ensemble.RandomForestClassifier``) and never imports one, so a module the kernel has not loaded
gives no verdict. Each case runs for real.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.built_methods
import crane_lsp.checks.python  # noqa: F401
from tests.check_util import assert_predicts
from tests.lib_checks_util import Case, predict, verify

SIG = "python.call-signature"
# an earlier cell loaded sklearn.ensemble (through another class): importing from it again runs nothing new
STATE = (
    "from sklearn.ensemble import RandomForestRegressor\n"
    "import sklearn.linear_model, sklearn.model_selection\n"
    "import numpy as np\nX = np.zeros((10, 2))\ny = np.arange(10.0)\n"
)

CASES = [
    Case(
        "from-import",
        SIG,
        STATE,
        "from sklearn.ensemble import RandomForestClassifier\nclf = RandomForestClassifier(n_estimator=10)\n",
        "TypeError",
        1,
    ),
    Case(
        "from-import-alias",
        SIG,
        STATE,
        "from sklearn.ensemble import RandomForestClassifier as RFC\n"
        "\nclf = RFC(n_estimators=10, max_dept=3)\n",
        "TypeError",
        2,
    ),
    Case(
        "module-alias",
        SIG,
        STATE,
        "import sklearn.linear_model as lm\nm = lm.LogisticRegression(C=1.0, penalty='l2', max_iters=50)\n",
        "TypeError",
        1,
    ),
    Case(
        "function-through-validate-params",
        SIG,
        STATE,
        "from sklearn.model_selection import train_test_split\n"
        "X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_sizes=0.2)\n",
        "TypeError",
        1,
    ),
    Case(
        "method-of-an-instance-built-here",
        "python.method-signature",
        STATE,
        "from sklearn.linear_model import LinearRegression\nm = LinearRegression()\nm.fit(X, y, epochs=3)\n",
        "TypeError",
        2,
    ),
    Case(
        "method-valid-arguments",
        "python.method-signature",
        STATE,
        "from sklearn.linear_model import LinearRegression as LR\nm = LR()\nm.fit(X, y, sample_weight=None)\n"
        "p = m.predict(X)\n",
        None,
    ),
    Case(
        "valid-arguments",
        SIG,
        STATE,
        "from sklearn.ensemble import RandomForestClassifier as RFC\n"
        "import sklearn.linear_model as lm\n"
        "clf = RFC(n_estimators=10, max_depth=3)\nm = lm.LogisticRegression(C=1.0, max_iter=50)\n"
        "from sklearn.model_selection import train_test_split as tts\n"
        "X_tr, X_te, y_tr, y_te = tts(X, y, test_size=0.2, random_state=0)\n",
        None,
    ),
    Case(
        "rebound-after-import",
        SIG,
        STATE,
        "from sklearn.ensemble import RandomForestClassifier\n"
        "RandomForestClassifier = dict\nclf = RandomForestClassifier(n_estimator=10)\n",
        None,
    ),
    Case(
        "import-in-a-branch",
        SIG,
        STATE,
        "import os\nif os.sep:\n    from sklearn.ensemble import RandomForestClassifier\n"
        "else:\n    RandomForestClassifier = dict\nclf = RandomForestClassifier(n_estimators=10)\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_imported_class(kernel, case: Case) -> None:
    verify(kernel, case)


def test_close_match_named(kernel) -> None:
    """Through every check: the TypeError names the parameter the keyword was meant to be."""
    cell = CASES[0].cell
    found = assert_predicts(kernel, STATE, cell, "TypeError", 1, check_id=SIG, message="n_estimator")
    assert "did you mean 'n_estimators'?" in found.message


def test_module_not_loaded_gives_no_verdict(fresh_kernel) -> None:
    """sklearn is loaded but not sklearn.ensemble: importing it would run its code in the kernel, so the
    probe does not, and the check says nothing (the cell really raises once run)."""
    fresh_kernel.run("import sklearn, sys\n")
    assert fresh_kernel.eval("'sklearn.ensemble' in sys.modules") == "False"
    cell = CASES[0].cell
    assert predict(fresh_kernel, SIG, cell) == []
    assert fresh_kernel.eval("'sklearn.ensemble' in sys.modules") == "False"
    reply = fresh_kernel.run(cell, allow_error=True)
    assert reply["ename"] == "TypeError"
