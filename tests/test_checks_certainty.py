"""Certain means certain: each rule is tried with the real library in a real kernel.

An attribute is certainly absent only when no dynamic provider can answer (statsmodels results
wrappers and NumPy records answer through ``__getattribute__``, TensorFlow's ``keras`` is a lazy
loader), and a finding on line k is the cell's certain crash only when the lines before it provably
do not raise. Every crash case really raises where the verdict says; every near miss runs clean.
"""

from __future__ import annotations

import asyncio

from check_util import facts_and_snapshot, predict, prepare, run_cell

from crane_lsp.analysis.reach import first_risky_line
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.server import checkpass
from crane_lsp.settings import Settings

STATSMODELS = """
import warnings
warnings.filterwarnings('ignore')
import numpy as np
import statsmodels.api as sm
from statsmodels.tsa.ar_model import AutoReg
rng = np.random.default_rng(0)
X = sm.add_constant(rng.normal(size=(30, 2)))
y = X @ [1.0, 2.0, 3.0] + rng.normal(size=30)
results = sm.OLS(y, X).fit()
ar = AutoReg(rng.normal(size=60), lags=2).fit()
"""

RECORDS = """
import numpy as np
people = np.array([(31, 70.5), (45, 80.0)], dtype=[('age', 'i4'), ('weight', 'f8')])
data_rec = people.view(np.recarray)
row = data_rec[0]
"""


def _pipeline_predict(kernel, setup: str, cell: str) -> Prediction:
    """The pipeline's verdict on ``cell`` from a real snapshot (checks only: no dry run, no LLM)."""
    prepare(kernel, setup)
    _, snap = facts_and_snapshot(kernel, cell)
    pipeline = Pipeline(Settings())
    return asyncio.run(pipeline.predict(cell, snapshot=snap, layers={"checks"})).prediction


def test_statsmodels_results_wrappers_are_not_missing_attributes(kernel) -> None:
    near = (
        "s = results.summary()\np = results.params\nq = results.predict(X)\nr = ar.params\nt = ar.predict()\n"
    )
    prepare(kernel, STATSMODELS)
    assert predict(kernel, near) == []
    assert run_cell(kernel, near) == (None, None)
    # a real typo on the wrapper: the probe cannot prove it absent (the wrapper answers by code), so
    # no certain finding, and the kernel really raises there
    crash = "p = results.parms\n"
    prepare(kernel, STATSMODELS)
    _, snap = facts_and_snapshot(kernel, crash)
    assert snap.attributes["results.parms"].exists is None
    assert predict(kernel, crash) == []
    assert run_cell(kernel, crash) == ("AttributeError", 0)


def test_record_fields_are_not_missing_attributes(kernel) -> None:
    near = "a = data_rec.age\nw = row.weight\n"
    prepare(kernel, RECORDS)
    assert predict(kernel, near) == []
    assert run_cell(kernel, near) == (None, None)
    # a structured plain ndarray has no attribute access to its fields: that miss is certain
    crash = "n = len(people)\na = people.age\n"
    prepare(kernel, RECORDS)
    found = predict(kernel, crash)
    assert [(f.check_id, f.exception, f.span.line) for f in found[:1]] == [
        ("python.missing-attribute", "AttributeError", 1)
    ]
    assert run_cell(kernel, crash) == ("AttributeError", 1)
    assert _pipeline_predict(kernel, RECORDS, crash).certainty == "certain"


def test_tensorflow_lazy_keras_is_not_a_missing_module_attribute(kernel) -> None:
    setup = "from tensorflow import keras"
    near = "Seq = keras.Sequential\nDense = keras.layers.Dense\n"
    prepare(kernel, setup)
    _, snap = facts_and_snapshot(kernel, near)
    assert snap.attributes["keras.Sequential"].exists is not False
    assert predict(kernel, near) == []
    assert run_cell(kernel, near) == (None, None)


def test_an_earlier_line_that_raises_makes_the_finding_a_warning(kernel) -> None:
    setup = "import numpy as np"
    crash = "inv = np.linalg.inv(np.zeros((2, 2)))\nn = 1\nprint(undefined_c)\n"
    prepare(kernel, setup)
    found = predict(kernel, crash)
    assert (found[0].exception, found[0].span.line) == ("NameError", 2)
    facts, snap = facts_and_snapshot(kernel, crash)
    assert first_risky_line(facts, snap, 2) == 0
    verdict = _pipeline_predict(kernel, setup, crash)
    assert (verdict.crash, verdict.certainty, verdict.line) == (True, "predicted", 2)
    assert "raises at line 3 if reached" in verdict.message
    worker = checkpass.check(crash, snap, [])  # the server's path for big cells rules the same
    assert worker is not None and worker["certainty"] == "predicted" and "if reached" in worker["message"]
    prepare(kernel, setup)
    assert run_cell(kernel, crash) == ("LinAlgError", 0)  # the check's line is never reached


def test_proven_lines_before_keep_the_finding_certain(kernel) -> None:
    setup = "import numpy as np\na = 2"
    cell = (
        "import numpy as np\nb = a * 3 + 1\nname = f'run {b}'\nprint(name, len([1, 2]))\n"
        "for k in range(3):\n    b += k\nprint(undefined_c)\n"
    )
    verdict = _pipeline_predict(kernel, setup, cell)
    assert (verdict.certainty, verdict.exception, verdict.line) == ("certain", "NameError", 6)
    prepare(kernel, setup)
    assert run_cell(kernel, cell) == ("NameError", 6)


def test_statement_on_the_same_line_before_the_finding_counts(kernel) -> None:
    setup = "import numpy as np"
    cell = "x = np.linalg.inv(np.zeros((2, 2))); print(undefined_c)\n"
    verdict = _pipeline_predict(kernel, setup, cell)
    assert verdict.certainty == "predicted"
    prepare(kernel, setup)
    assert run_cell(kernel, cell)[0] == "LinAlgError"


def test_a_shadowed_builtin_is_not_proven(kernel) -> None:
    setup = "def print(*a):\n    raise RuntimeError('mine')"
    cell = "print('hello')\nundefined_c\n"
    verdict = _pipeline_predict(kernel, setup, cell)
    assert verdict.certainty == "predicted"
    prepare(kernel, setup)
    assert run_cell(kernel, cell) == ("RuntimeError", 0)
    kernel.run("del print")


FRAME_AND_MODEL = (
    "import pandas as pd\nfrom sklearn.linear_model import LinearRegression\n"
    "df = pd.DataFrame({'a': [1.0, 2.0, 3.0], 'b': [4.0, 5.0, 7.0]})\n"
    "reg = LinearRegression().fit(df[['a', 'b']], df['a'])\n"
)


def test_selecting_columns_the_kernel_frame_has_is_proven_not_to_raise(kernel) -> None:
    """``X = df[['a']]`` never raises when the probe listed every column: the finding after it is certain."""
    for cell in ("X = df[['a']]\np = reg.predict(X)\n", "s = df['b']\nX = df[['a']]\np = reg.predict(X)\n"):
        verdict = _pipeline_predict(kernel, FRAME_AND_MODEL, cell)
        last = cell.count("\n") - 1
        assert (verdict.crash, verdict.certainty, verdict.exception, verdict.line) == (
            True,
            "certain",
            "ValueError",
            last,
        ), verdict
        prepare(kernel, FRAME_AND_MODEL)
        assert run_cell(kernel, cell) == ("ValueError", last)


def test_columns_the_probe_did_not_list_all_of_stay_unproven(kernel) -> None:
    """A frame wider than the probe lists names of (2,000): ``wide['c2999']`` exists, but it is not
    proven, so the NameError after it is a Warning; the cell really raises it (the rule's near miss)."""
    setup = "import numpy as np\nimport pandas as pd\n"
    setup += "wide = pd.DataFrame(np.zeros((2, 3000)), columns=[f'c{i}' for i in range(3000)])\n"
    cell = "s = wide['c2999']\nprint(undefined_q)\n"
    verdict = _pipeline_predict(kernel, setup, cell)
    assert (verdict.crash, verdict.certainty, verdict.line) == (True, "predicted", 1)
    assert "raises at line 2 if reached" in verdict.message
    prepare(kernel, setup)
    assert run_cell(kernel, cell) == ("NameError", 1)


COUNT_ROWS = "def count_rows(d):\n    print(d.shape)\n    return len(d)\n"


def test_a_call_of_a_user_function_proven_line_by_line_keeps_the_finding_certain(kernel) -> None:
    """``n = count_rows(df)`` before the mismatch: the function's body (print of a shape, ``len`` of a
    frame) cannot raise with a frame, so the ValueError after it is certain (same cell, earlier cell)."""
    same_cell = COUNT_ROWS + "\nn = count_rows(df)\np = reg.predict(df[['a']])\n"
    for setup, cell, line in (
        (FRAME_AND_MODEL, same_cell, 5),
        (FRAME_AND_MODEL + COUNT_ROWS, "n = count_rows(df)\np = reg.predict(df[['a']])\n", 1),
    ):
        verdict = _pipeline_predict(kernel, setup, cell)
        assert (verdict.certainty, verdict.exception, verdict.line) == ("certain", "ValueError", line), (
            verdict
        )
        prepare(kernel, setup)
        assert run_cell(kernel, cell) == ("ValueError", line)


def test_a_user_function_whose_body_may_raise_leaves_it_a_warning(kernel) -> None:
    """The near misses: a body that reads a missing column, and one that reads a local before binding
    it, really raise inside the call, so the finding after the call is never certain (the first one is
    the ``user-function`` check's own certain KeyError on the call, which is what happens; the second
    call is not followed at all, so nothing after it is known)."""
    for body, raised in (
        ("def first(d):\n    return d['zz']\n", "KeyError"),
        ("def first(d):\n    print(n)\n    n = len(d)\n    return n\n", "UnboundLocalError"),
    ):
        setup = FRAME_AND_MODEL + body
        cell = "v = first(df)\np = reg.predict(df[['a']])\n"
        verdict = _pipeline_predict(kernel, setup, cell)
        if verdict.line == 1:
            assert verdict.certainty == "predicted" and "if reached" in verdict.message, verdict
        elif verdict.crash:
            assert (verdict.certainty, verdict.exception, verdict.line) == ("certain", raised, 0), verdict
        prepare(kernel, setup)
        assert run_cell(kernel, cell) == (raised, 0)


def test_which_user_function_calls_are_proven_not_to_raise(kernel) -> None:
    """``first_risky_line`` on a real snapshot: None when the call is proven, else the call's line (0)."""
    bodies = {
        "def f(d):\n    print(d.shape)\n    return len(d)\n": None,
        "def f(d, k=2):\n    m = len(d) * k\n    return m\n": None,
        "def f(d):\n    return d['zz']\n": 0,  # may raise (here it does)
        "def f(d):\n    print(n)\n    n = 1\n    return n\n": 0,  # UnboundLocalError
        "def f(d):\n    return f(d)\n": 0,  # recursion is not followed
        "def f(d):\n    global seen\n    seen = 1\n    return 0\n": 0,  # changes a global
        "def f(d, k=len):\n    return k\n": 0,  # a default that is not a literal
    }
    for body, risky in bodies.items():
        setup = FRAME_AND_MODEL + body
        prepare(kernel, setup)
        for cell, want in (("v = f(df)\nz = 1\n", risky), ("v = f(d=df, e=1)\nz = 1\n", 0)):
            facts, snap = facts_and_snapshot(kernel, cell)
            assert first_risky_line(facts, snap, 1) == want, (body, cell)


def test_a_function_name_rebound_to_another_function_is_not_followed_as_the_old_def(kernel) -> None:
    """``f = g`` after ``def f``: the proof must not prove ``f(df)`` from the old body."""
    setup = FRAME_AND_MODEL + "def g(d):\n    return d['zz']\n"
    cell = "def f(d):\n    return len(d)\n\nf = g\nv = f(df)\nz = 1\n"
    prepare(kernel, setup)
    facts, snap = facts_and_snapshot(kernel, cell)
    assert first_risky_line(facts, snap, 5) == 4
    assert run_cell(kernel, cell) == ("KeyError", 4)
