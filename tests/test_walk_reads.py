"""A value the cell bound stays known after a builtin only reads it (``print(X.shape)``, ``len(X)``).

Passing a value on may let someone else change it later (``pipe = make_pipeline(model)``), so the walk
forgets it; a builtin that keeps no reference to its arguments is not such a hand-over. Each case runs
for real in a kernel: the crash is predicted on its line, the near miss runs clean.
"""

from __future__ import annotations

from typing import Any

import pytest
from check_util import assert_predicts, assert_silent_and_runs

SETUP = (
    "import pandas as pd\nfrom sklearn.linear_model import LinearRegression\n"
    "df = pd.DataFrame({'a': [1.0, 2.0, 3.0], 'c': [4.0, 5.0, 7.0]})\n"
    "reg = LinearRegression().fit(df[['a', 'c']], df['a'])\n"
)
READS = [
    "print(X.shape)",
    "print(f'{X.shape} rows={len(X)}')",
    "n = len(X)",
    "ok = isinstance(X, pd.DataFrame)",
]


@pytest.mark.parametrize("read", READS)
def test_a_feature_mismatch_after_a_builtin_read_the_frame(kernel: Any, read: str) -> None:
    cell = f"X = df[['a']]\n{read}\np = reg.predict(X)\n"
    assert_predicts(kernel, SETUP, cell, "ValueError", 2, check_id="sklearn.features")


@pytest.mark.parametrize("read", READS)
def test_the_near_miss_runs_clean(kernel: Any, read: str) -> None:
    assert_silent_and_runs(kernel, SETUP, f"X = df[['a', 'c']]\n{read}\np = reg.predict(X)\n")


def test_a_value_handed_to_a_call_inside_print_is_forgotten(kernel: Any) -> None:
    """``print(keep(X))``: ``keep`` may hold on to ``X``; what the walk knew of ``X`` is not reused."""
    from check_util import predict, prepare

    setup = SETUP + "kept = []\ndef keep(v):\n    kept.append(v)\n    return v\n"
    prepare(kernel, setup)
    cell = "X = df[['a']]\nprint(keep(X))\np = reg.predict(X)\n"
    assert [f for f in predict(kernel, cell) if f.check_id == "sklearn.features"] == []
