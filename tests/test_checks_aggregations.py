"""``pandas.agg-name``: an aggregation named by a string that pandas resolves nowhere (no method or attribute
of the object's class, no column / index label, no numpy function) really raises AttributeError in a real
kernel; every name pandas does resolve (a method, a column, a numpy function, a subclass' own method) runs.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.aggregations  # noqa: F401
from crane_lsp.analysis.parse import analyze
from crane_lsp.snapshot import ProbeQuery
from tests.check_util import assert_predicts, assert_silent_and_runs
from tests.lib_checks_util import Case, verify
from tests.probe_util import snapshot

# numpy is loaded (pandas imports it) but bound to no kernel name: the probe reads it from sys.modules
STATE = (
    "import pandas as pd\n"
    "df = pd.DataFrame({'a': [1, 2, 3], 'b': [1.5, 2.5, 3.0], 'total': [2.0, 4.0, 6.0]})\n"
    "s = pd.Series([1.0, 2.0, 4.0])\n"
    "labelled = pd.Series([1.0, 2.0], index=['x', 'meen'])\n"
    "class Frame(pd.DataFrame):\n"
    "    def meen(self):\n"
    "        return 0\n"
    "sub = Frame({'a': [1, 2]})\n"
)
AGG = "pandas.agg-name"

CASES = [
    Case("frame-agg-typo", AGG, STATE, "r = df.agg('meen')\n", "AttributeError"),
    Case(
        "frame-aggregate-func-keyword",
        AGG,
        STATE,
        "x = 1\nr = df.aggregate(func='averge')\n",
        "AttributeError",
        1,
    ),
    Case("series-agg-typo", AGG, STATE, "r = s.agg('summ')\n", "AttributeError"),
    Case("series-agg-list-typo", AGG, STATE, "r = s.agg(['mean', 'stdd'])\n", "AttributeError"),
    Case(
        "agg-names-resolved",
        AGG,
        STATE,
        "r = df.agg('mean')\nt = df.agg('total')\nc = df.agg('cumsum')\nm = df.agg('amax')\n"
        "l = labelled.agg('meen')\nu = sub.agg('meen')\nv = s.agg(['mean', 'max', 'ptp'])\n"
        "w = df.agg(['mean', 'sum'])\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agg_name(kernel, case: Case) -> None:
    verify(kernel, case)


def test_probe_reads_numpy_without_a_kernel_name(kernel) -> None:
    """The ``@numpy`` chain is answered from the loaded module, and is never reported as an undefined name."""
    kernel.run("%reset -f")
    kernel.run(STATE)
    facts = analyze("r = df.agg('meen')\nq = df.agg('amax')\n")
    fields = facts.probe_query_fields()
    assert "@numpy.meen" in fields["chains"] and "df.amax" in fields["chains"]
    snap = snapshot(kernel, ProbeQuery(**fields, object_budget_s=10, request_budget_s=30))
    assert snap.attributes["@numpy.meen"].exists is False
    assert snap.attributes["@numpy.amax"].exists is True
    assert snap.attributes["df.meen"].exists is False
    assert "@numpy" not in snap.undefined and "@numpy" not in snap.variables


def test_all_checks_together(kernel) -> None:
    """Through the runner with every check: the typo is the first finding; the resolved names raise nothing
    (the queried ``df.<name>`` chains the cell never spells are no missing-attribute findings)."""
    cell = "x = df['a'].sum()\nr = df.agg('meen')\n"
    first = assert_predicts(kernel, STATE, cell, "AttributeError", 1, check_id=AGG, message="'meen'")
    assert ("numpy.meen", "absent") in first.evidence
    assert_silent_and_runs(kernel, STATE, CASES[-1].cell)
