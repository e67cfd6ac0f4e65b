"""Checks inside ``for`` loops over known items: every pass is walked with the loop name bound to its item.

Each case really runs in a real kernel: a crash must be predicted on the line in the body, with the
exception the kernel raises; a near miss must run clean with the check silent.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.pandas  # noqa: F401  (registers the checks)
from crane_lsp.analysis.parse import analyze
from crane_lsp.checks.registry import REGISTRY
from crane_lsp.snapshot import ProbeQuery
from tests.lib_checks_util import Case, predict, verify
from tests.probe_util import snapshot

DF = (
    "import pandas as pd, numpy as np\n"
    "df = pd.DataFrame({'Age': [22.0, 38.0, 26.0], 'Fare': [7.25, np.nan, 8.05], 'Sex': ['m', 'f', 'f'],\n"
    "                   'n': [1, 2, 3]})\n"
    "cols = ['Age', 'Sex', 'Cabin']\n"
    "feats = ('n', 'Age')\n"
    "nums = ['Age', 'Fare']\n"
    "gen = (c for c in ['Age', 'Sex'])\n"
    "many = ['Age'] * 60 + ['Cabin']\n"
)
MC = "pandas.missing-column"
AI = "pandas.astype-int"

CASES = [
    Case(
        "literal-item-3",
        MC,
        DF,
        "total = 0\nfor col in ['Age', 'Fare', 'Cabin']:\n    s = df[col]\n",
        "KeyError",
        2,
    ),
    Case("kernel-list-item", MC, DF, "for c in cols:\n    print(df[c].head(1))\n", "KeyError", 1),
    Case("tuple-literal", MC, DF, "for c in ('n', 'Age', 'zz'):\n    x = df[c]\n", "KeyError", 1),
    Case(
        "astype-int-second-pass",
        AI,
        DF,
        "for c in ['Age', 'Fare']:\n    print(df[c].astype(int).sum())\n",
        "IntCastingNaNError",
        1,
    ),
    Case(
        "astype-int-kernel-list",
        AI,
        DF,
        "for c in nums:\n    v = df[c].astype('int64')\n",
        "IntCastingNaNError",
        1,
    ),
    Case("range-loop", "pandas.iloc-range", DF, "for i in range(5):\n    r = df.iloc[i]\n", "IndexError", 1),
    Case("range-loop-fine", "pandas.iloc-range", DF, "for i in range(1, 3):\n    r = df.iloc[i]\n", None),
    # near misses
    Case("all-present", MC, DF, "for c in feats:\n    x = df[c]\n", None),
    Case(
        "created-in-earlier-pass",
        MC,
        DF,
        "prev = 'Age'\nfor c in ['x1', 'x2']:\n    df[c] = df[prev] + 1\n    prev = c\n",
        None,
    ),
    Case(
        "break-before-bad-item",
        MC,
        DF,
        "for c in ['Age', 'Sex', 'Cabin']:\n    if c == 'Sex':\n        break\n    x = df[c]\n",
        None,
    ),
    Case("unknown-contents", MC, DF, "for c in gen:\n    x = df[c]\n", None),
    Case(
        "frame-reassigned",
        MC,
        DF,
        "for c in ['Age', 'Cabin']:\n    df = pd.DataFrame({'Age': [1], 'Cabin': ['C']})\n    x = df[c]\n",
        None,
    ),
    Case(
        "frame-reassigned-after-read",
        MC,
        DF,
        "for c in ['Age', 'Cabin']:\n    x = df[c]\n    df = pd.DataFrame({'Age': [1], 'Cabin': ['C']})\n",
        None,
    ),
    Case(
        "column-added-then-read",
        MC,
        DF,
        "for c in ['Cabin', 'Cabin']:\n    df[c] = 'U'\n    x = df[c]\n",
        None,
    ),
    # a name bound to a new object (an aggregate) is the cell's own: pure calls on it keep df trusted
    Case(
        "after-aggregate-of-aggregate",
        MC,
        DF,
        "by_sex = df.groupby('Sex')['Age'].sum()\ntotal = by_sex.sum()\nx = df['Cabin']\n",
        "KeyError",
        2,
    ),
    Case(
        "aggregate-mutated-in-place",
        MC,
        DF,
        "by_sex = df.groupby('Sex')['Age'].sum()\nby_sex.drop('m', inplace=True)\nx = df['Age']\n",
        None,
    ),
    Case(
        "list-mutated-in-body",
        MC,
        DF,
        "for c in cols:\n    if c == 'Sex':\n        cols.remove('Cabin')\n    x = df[c]\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_loop_check(kernel, case: Case) -> None:
    verify(kernel, case)


def test_message_names_the_item(kernel) -> None:
    kernel.run("%reset -f")
    kernel.run(DF)
    found = predict(kernel, MC, "for col in ['Age', 'Fare', 'Cabin']:\n    s = df[col]\n")
    assert found and "'Cabin'" in found[0].message
    assert "loop item 3 of 3" in found[0].message


def test_long_kernel_list_stays_silent(kernel) -> None:
    """61 items: more than the probe lists, so the items are unknown and the loop is not walked (the cell
    does crash, on its last item)."""
    kernel.run("%reset -f")
    kernel.run(DF)
    cell = "for c in many:\n    x = df[c]\n"
    assert predict(kernel, MC, cell) == []
    assert kernel.run(cell, allow_error=True).get("ename") == "KeyError"  # silent, not because it runs


def test_privacy_mode_hides_kernel_list_values(kernel) -> None:
    """In privacy mode the probe omits the items of a kernel list, so a loop over it is not walked."""
    kernel.run("%reset -f")
    kernel.run(DF)
    cell = "for c in cols:\n    x = df[c]\n"
    facts = analyze(cell)
    query = ProbeQuery(**facts.probe_query_fields(), privacy=True, object_budget_s=10, request_budget_s=30)
    snap = snapshot(kernel, query)
    assert snap.variables["cols"].values is None
    assert REGISTRY.checks[MC](facts, snap) == []
    # control: without privacy mode the same loop is walked and the missing column caught
    query = ProbeQuery(**facts.probe_query_fields(), object_budget_s=10, request_budget_s=30)
    assert REGISTRY.checks[MC](facts, snapshot(kernel, query))


COLS = (
    "import pandas as pd\n"
    "full = pd.DataFrame({'Amount': [1.0, 2.0], 'Class': [0, 1], 'Hour': [3.0, 4.0]})\n"
    "part = pd.DataFrame({'Amount': [1.0, 2.0], 'Class': [0, 1]})\n"
)
COLUMN_CASES = [
    Case(
        "columns-of-other-frame",
        MC,
        COLS,
        "var = full.columns.values\ni = 0\nt0 = part.loc[part['Class'] == 0]\n"
        "for feature in var:\n    i += 1\n    print(i, t0[feature].sum())\n",
        "KeyError",
        5,
    ),
    Case(
        "columns-of-same-frame",
        MC,
        COLS,
        "t0 = part[part['Class'] == 0]\nfor feature in part.columns:\n    print(t0[feature].sum())\n",
        None,
    ),
]


@pytest.mark.parametrize("case", COLUMN_CASES, ids=str)
def test_loop_over_columns(kernel, case: Case) -> None:
    verify(kernel, case)
