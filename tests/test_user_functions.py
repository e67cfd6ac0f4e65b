"""Calls into functions the user defined, in the same cell or an earlier one, followed from their source.

Each case runs its earlier cell in a real kernel (so an earlier-cell function's source comes from the
kernel's linecache through the real probe), predicts the target cell, and then really runs it: a crash
must be predicted on the calling line with the exception the kernel raises; a near miss must run clean
with nothing found.
"""

from __future__ import annotations

from typing import Any

import pytest
from check_util import assert_predicts, assert_silent_and_runs, facts_and_snapshot, predict, prepare

from crane_lsp.checks.registry import Finding
from crane_lsp.pipeline import checks_phase
from crane_lsp.snapshot import ProbeQuery
from tests.lib_checks_util import Case
from tests.probe_util import snapshot

FRAME = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'c': [4.0, 5.0, 6.0]})\n"
PREP = "def prep(d):\n    out = d[['a', 'b']]\n    return out\n"
PREP_OK = "def prep(d):\n    out = d[['a', 'c']]\n    return out\n"
UF = "user-function"

#: Crash cases and near misses for the registry's meta-test (``tests/test_checks_registry.py``).
CASES = [
    Case("earlier-cell-prep", UF, FRAME + PREP, "X = prep(df)\nprint(X.shape)\n", "KeyError", 0),
    Case("earlier-cell-prep-fine", UF, FRAME + PREP_OK, "X = prep(df)\nprint(X.shape)\n", None),
]


def _first(kernel: Any, setup: str, cell: str) -> Finding:
    prepare(kernel, setup)
    found = predict(kernel, cell)
    assert found, f"nothing found for:\n{cell}"
    return found[0]


def _nothing_certain_yet_raises(kernel: Any, setup: str, cell: str, ename: str | None) -> None:
    """No certain user-function finding for ``cell`` (none, or one whose reach is unproven: a Warning),
    and the real run (if ``ename``) raises ``ename``."""
    prepare(kernel, setup)
    assert [f for f in predict(kernel, cell) if f.check_id == UF and not f.unproven_reach] == []
    if ename is not None:
        assert kernel.run(cell, allow_error=True).get("ename") == ename


def test_a_crash_inside_an_earlier_cell_function_is_shown_on_the_call(kernel: Any) -> None:
    f = assert_predicts(kernel, FRAME + PREP, "n = 1\nX = prep(df)\n", "KeyError", 1, check_id=UF)
    assert "raises in prep() (its line 2)" in f.message and "'b'" in f.message
    assert "df" in f.variables


def test_the_near_miss_of_an_earlier_cell_function_runs_clean(kernel: Any) -> None:
    assert_silent_and_runs(kernel, FRAME + PREP_OK, "n = 1\nX = prep(df)\n")


def test_a_crash_inside_a_same_cell_function(kernel: Any) -> None:
    cell = "def pick(frame, col='b'):\n    return frame[col]\n\ns = pick(df)\n"
    f = assert_predicts(kernel, FRAME, cell, "KeyError", 3, check_id=UF)
    assert "raises in pick() (its line 2)" in f.message


def test_the_near_miss_of_a_same_cell_function_runs_clean(kernel: Any) -> None:
    assert_silent_and_runs(
        kernel, FRAME, "def pick(frame, col='b'):\n    return frame[col]\n\ns = pick(df, 'c')\n"
    )


def test_a_keyword_argument_and_a_global_the_function_reads(kernel: Any) -> None:
    setup = FRAME + "def sel(k=0, *, col='a'):\n    return df[col]\n"
    f = assert_predicts(kernel, setup, "X = sel(1, col='zz')\n", "KeyError", 0, check_id=UF)
    assert "sel()" in f.message and "'zz'" in f.message
    assert_silent_and_runs(kernel, setup, "X = sel(1, col='c')\n")


def test_a_global_the_cell_rebinds_before_the_call_is_the_one_used(kernel: Any) -> None:
    setup = FRAME + "def sel(col):\n    return df[col]\n"
    # the call reads the cell's df (which has 'zz'), not the kernel's
    assert_silent_and_runs(kernel, setup, "df = df.assign(zz=1)\nX = sel('zz')\n")


def test_the_returned_value_flows_back_to_the_caller(kernel: Any) -> None:
    setup = (
        "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n"
        + FRAME
        + "m = LogisticRegression().fit(np.zeros((4, 3)) + np.arange(4)[:, None], [0, 1, 0, 1])\n"
        + "def feats(d):\n    return d[['a', 'c']]\n"
    )
    f = _first(kernel, setup, "p = m.predict(feats(df))\n")
    assert f.exception == "ValueError" and f.span.line == 0, f
    assert kernel.run("p = m.predict(feats(df))\n", allow_error=True).get("ename") == "ValueError"


def test_a_body_that_crashes_or_may_raise_first_returns_no_value(kernel: Any) -> None:
    setup = (
        "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n"
        + FRAME
        + "m = LogisticRegression().fit(np.zeros((4, 3)) + np.arange(4)[:, None], [0, 1, 0, 1])\n"
        + "def f(d):\n    x = d[['zz']]\n    return d[['a', 'c']]\n"
        + "def g(d):\n    np.linalg.inv(np.zeros((2, 2)))\n    return d[['a', 'c']]\n"
    )
    # predict() would see 2 features, but f's KeyError comes first
    assert_predicts(kernel, setup, "p = m.predict(f(df))\n", "KeyError", 0, check_id=UF)
    prepare(kernel, setup)
    assert predict(kernel, "p = m.predict(g(df))\n") == []
    assert kernel.run("p = m.predict(g(df))\n", allow_error=True).get("ename") == "LinAlgError"


def test_the_value_of_a_pure_function_reaches_later_lines(kernel: Any) -> None:
    setup = (
        "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n"
        + FRAME
        + "m = LogisticRegression().fit(np.zeros((4, 3)) + np.arange(4)[:, None], [0, 1, 0, 1])\n"
        + "def feats(d):\n    return d[['a', 'c']]\n"
    )
    cell = "X = feats(df)\nn = 2\np = m.predict(X)\n"
    f = _first(kernel, setup, cell)
    assert f.exception == "ValueError" and f.span.line == 2 and "df" in f.variables, f
    assert kernel.run(cell, allow_error=True).get("ename") == "ValueError"
    near = "X = feats(df)\np = m.predict(np.c_[X, X['a']])\n"
    assert_silent_and_runs(kernel, setup, near)


SK = (
    "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n"
    "X = np.arange(12.0).reshape(4, 3)\ny = [0, 1, 0, 1]\nX_test = np.zeros((2, 5))\n"
    "clf = LogisticRegression().fit(X, y)\nclf5 = LogisticRegression().fit(np.c_[X, X[:, :2]], y)\n"
    "def score(m):\n    return m.predict(X_test)\n"
    "def train(m, X):\n    m.fit(X, y)\n    return m.predict(X_test)\n"
)


def test_a_feature_count_mismatch_inside_an_earlier_cell_function(kernel: Any) -> None:
    f = assert_predicts(kernel, SK, "p = score(clf)\n", "ValueError", 0, check_id=UF)
    assert "raises in score() (its line 2)" in f.message and "clf" in f.variables
    assert_silent_and_runs(kernel, SK, "p = score(clf5)\n")


def test_a_fit_before_the_mismatch_may_raise_first_so_nothing_is_certain(kernel: Any) -> None:
    _nothing_certain_yet_raises(kernel, SK, "p = train(LogisticRegression(), X)\n", "ValueError")


def test_an_earlier_line_of_the_body_that_may_raise_makes_it_uncertain(kernel: Any) -> None:
    setup = (
        FRAME + "import numpy as np\ndef prep(d):\n    np.linalg.inv(np.zeros((2, 2)))\n    return d[['b']]\n"
    )
    _nothing_certain_yet_raises(kernel, setup, "X = prep(df)\n", "LinAlgError")


def test_a_crash_after_a_body_line_that_may_raise_is_a_warning_naming_that_line(kernel: Any) -> None:
    """The crash on body line 3 is shown as "raises ... if reached": body line 2 may raise first (here it
    does not, and the cell raises the KeyError the Warning names)."""
    setup = FRAME + "import numpy as np\n"
    setup += "def prep(d):\n    q = np.linalg.inv(np.eye(2))\n    return d[['b']]\n"
    cell = "n = 1\nX = prep(df)\n"
    prepare(kernel, setup)
    facts, snap = facts_and_snapshot(kernel, cell)
    findings, prediction = checks_phase(facts, snap, [setup], cell)
    assert findings and findings[0].check_id == UF
    assert findings[0].unproven_reach == "line 2 of prep() may raise before its line 3 is reached"
    assert prediction is not None and prediction.certainty == "predicted"
    assert (prediction.exception, prediction.line) == ("KeyError", 1)
    assert "if reached" in prediction.message and findings[0].unproven_reach in prediction.notes
    assert kernel.run(cell, allow_error=True).get("ename") == "KeyError"


def test_a_function_with_side_effects_is_not_certain(kernel: Any) -> None:
    setup = FRAME + "seen = []\ndef prep(d):\n    seen.append(1)\n    d['a'] = 0\n    return d[['b']]\n"
    _nothing_certain_yet_raises(kernel, setup, "X = prep(df)\n", "KeyError")
    assert kernel.eval("seen") == "[1]"


def test_a_function_cut_short_by_an_early_return_is_not_pure(kernel: Any) -> None:
    # the walk stops at the ``if`` holding a return: what comes after it (a new column) is not seen
    body = "    n = 1\n    if flag:\n        return n\n    df['b'] = n\n    return n\n"
    setup = FRAME + "def add(flag):\n" + body
    assert_silent_and_runs(kernel, setup, "add(False)\nY = df['b']\n")


def test_what_the_kernel_says_of_its_own_d_is_not_said_of_the_parameter_d(kernel: Any) -> None:
    setup = (
        FRAME
        + "d = pd.DataFrame({'b': [1.0, None]})\ndf2 = pd.DataFrame({'b': [1.0, 2.0]})\n"
        + "def conv(d):\n    return d['b'].astype(int)\n"
    )
    # the cell makes the probe answer for the kernel's ``d['b']`` (with a NaN); ``conv``'s d is df2
    assert_silent_and_runs(kernel, setup, "if len(d) > 5:\n    print(d['b'])\nv = conv(df2)\n")
    f = assert_predicts(kernel, setup, "v = conv(d)\n", "IntCastingNaNError", 0, check_id=UF)
    assert "raises in conv() (its line 2)" in f.message


def test_a_local_read_before_it_is_bound_is_not_the_kernel_value(kernel: Any) -> None:
    setup = FRAME + "out = df\ndef prep(d):\n    n = out.shape\n    out = d[['b']]\n    return out\n"
    _nothing_certain_yet_raises(kernel, setup, "X = prep(df)\n", "UnboundLocalError")


def test_a_global_write_is_not_followed(kernel: Any) -> None:
    setup = FRAME + "n = 0\ndef prep(d):\n    global n\n    n += 1\n    return d[['b']]\n"
    _nothing_certain_yet_raises(kernel, setup, "X = prep(df)\n", None)


@pytest.mark.timeout(60)
def test_recursion_and_depth_are_bounded(kernel: Any) -> None:
    setup = (
        FRAME
        + "def rec(d, k):\n    return rec(d, k - 1) if k else d[['b']]\n"
        + "def f1(d):\n    return f2(d)\ndef f2(d):\n    return f3(d)\ndef f3(d):\n    return d[['b']]\n"
    )
    _nothing_certain_yet_raises(kernel, setup, "X = rec(df, 3)\n", None)
    assert [f for f in predict(kernel, "X = f1(df)\n") if f.check_id == UF] == []  # three calls deep
    f = _first(kernel, setup, "X = f2(df)\n")  # two calls deep: followed
    assert f.check_id == UF and "raises in f2() (its line 2)" in f.message, f
    assert kernel.run("X = f2(df)\n", allow_error=True).get("ename") == "KeyError"


HOSTILE = """
import pandas as pd
df = pd.DataFrame({'a': [1]})
touched = []
class Sly:
    def __getattribute__(self, name):
        touched.append(name)
        return object.__getattribute__(self, name)
    def __getattr__(self, name):
        touched.append(name)
        raise AttributeError(name)
    def __call__(self, d):
        touched.append('call')
        return d[['b']]
prep = Sly()
"""


def test_a_function_like_object_is_never_touched_by_the_probe(kernel: Any) -> None:
    prepare(kernel, HOSTILE)
    found = [f for f in predict(kernel, "X = prep(df)\n") if f.check_id == UF]
    assert found == []
    assert kernel.eval("touched") == "[]"


NOT_A_CELL = """
import os, tempfile
import pandas as pd
df = pd.DataFrame({'a': [1]})
folder = os.path.join(tempfile.mkdtemp(), 'ipykernel_1')
os.makedirs(folder)
fake = os.path.join(folder, 'abc.py')
with open(fake, 'w') as fh:
    fh.write("def prep(d):\\n    return d[['b']]\\n")
exec(compile("def prep(d):\\n    return d[['a']]\\n", fake, 'exec'))
"""


def test_a_function_whose_cell_text_is_not_in_linecache_is_not_read_from_disk(kernel: Any) -> None:
    # its file name looks like a cell's, and a file of that name exists, but linecache has no entry
    prepare(kernel, NOT_A_CELL)
    snap = snapshot(kernel, ProbeQuery(names=["prep"]))
    assert snap.variables["prep"].source is None
    assert snap.variables["prep"].source_note == "source not in linecache"
    assert_silent_and_runs(kernel, NOT_A_CELL, "X = prep(df)\n")


# ---- after a call the walk followed and found to change nothing, its arguments are trusted again

SHOW = "def show(d):\n    n = len(d)\n    return n\n"


@pytest.mark.parametrize(
    ("setup", "cell", "line"),
    [
        (FRAME + SHOW, "k = show(df)\ng = df.groupby('zz')\n", 1),  # an earlier cell's function
        (FRAME, SHOW + "k = show(df)\nv = df['zz']\n", 4),  # the same cell's
        # a global the function reads
        (FRAME, "def total():\n    return df['a'].sum()\nt = total()\nv = df['zz']\n", 3),
    ],
)
def test_a_frame_passed_to_a_function_that_changes_nothing_is_still_known(
    kernel: Any, setup: str, cell: str, line: int
) -> None:
    assert_predicts(kernel, setup, cell, "KeyError", line, check_id="pandas.missing-column")


def test_the_near_miss_after_a_pure_call_runs_clean(kernel: Any) -> None:
    assert_silent_and_runs(kernel, FRAME + SHOW, "k = show(df)\ng = df.groupby('a')['c'].sum()\n")


@pytest.mark.parametrize(
    "body",
    [
        "    d['zz'] = 1\n    return 0\n",  # adds the very column the next line reads
        "    d.insert(0, 'zz', 1)\n    return 0\n",
    ],
)
def test_a_function_that_changes_its_argument_keeps_it_distrusted(kernel: Any, body: str) -> None:
    assert_silent_and_runs(kernel, FRAME + "def spoil(d):\n" + body, "k = spoil(df)\nv = df['zz']\n")


def test_a_pure_call_beside_one_that_may_change_the_frame_vouches_only_for_itself(kernel: Any) -> None:
    """In a loop and in the branches of ``a if t else b``, ``show(df)`` changes nothing but ``spoil(df, k)``
    may add the column: the frame stays distrusted after them (the pure call's own events are not the
    other call's)."""
    prepare(kernel, FRAME + SHOW + "def spoil(d, k):\n    if k:\n        d['zz'] = 1\n    return 0\n")
    for cell in (
        "for k in range(2):\n    show(df)\n    spoil(df, k)\nv = df['zz']\n",
        "k = show(df) if len(df) else spoil(df, 1)\nv = df['zz']\n",
    ):
        assert [f for f in predict(kernel, cell) if f.check_id == "pandas.missing-column"] == [], cell


def test_two_calls_of_one_statement_do_not_follow_each_other_forever(kernel: Any, caplog: Any) -> None:
    """Reading ``df`` for one call asks whether the other call changes it, which follows that call, whose
    argument asks about the first one again: a call met again while it is followed is opaque."""
    setup = FRAME + SHOW + "def add_log(d, col):\n    d['log_' + col] = d[col] + 1\n    return d\n"
    cell = "total = show(df) if len(df) else add_log(df, 'a')\nv = df['log_a']\n"
    prepare(kernel, setup)
    with caplog.at_level("ERROR", logger="crane_lsp.analysis.userfuncs"):
        found = predict(kernel, cell)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    assert [f for f in found if f.check_id == "pandas.missing-column"] == []  # ``add_log`` may have run
    assert kernel.run(cell, allow_error=True).get("ename") == "KeyError"  # it did not
