"""``pandas.agg-spec``: the aggregation forms real notebooks write (a groupby, a groupby's column, a list, a
dict, named aggregation) with a function name pandas resolves nowhere (AttributeError) or a dict / named key
that is no column (KeyError), predicted from a real kernel and then run for real (pandas 3.1). Every valid
spelling runs clean with the check silent; a cell where something else raises first gets no finding.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.aggregations  # noqa: F401
from tests.check_util import assert_predicts, assert_silent_and_runs
from tests.lib_checks_util import Case, predict, verify

STATE = (
    "import numpy as np, pandas as pd\n"
    "df = pd.DataFrame({'g': ['a', 'b', 'a'], 'name': ['x', 'y', 'z'],\n"
    "                   'price': [1.0, 2.0, 3.0], 'q': [1, 2, 3]})\n"
    "num = df[['g', 'price', 'q']]\n"
    "nums = df[['price', 'q']]\n"
    "lab = pd.DataFrame({'g': [1, 2], 'v': [1.0, 2.0]}, index=['nme', 'b'])\n"
    "g = df.groupby('g')\n"
    "sg = df.groupby('g')['price']\n"
    "def spread(x):\n"
    "    return x.max() - x.min()\n"
)
SPEC, NAME = "pandas.agg-spec", "pandas.agg-name"

CASES = [
    Case("groupby-str", SPEC, STATE, "r = df.groupby('g').agg('nme')\n", "AttributeError"),
    Case("groupby-numpy-name", SPEC, STATE, "r = df.groupby('g').aggregate('amax')\n", "AttributeError"),
    Case("groupby-dict", SPEC, STATE, "r = df.groupby('g').agg({'price': 'nme'})\n", "AttributeError"),
    Case(
        "groupby-dict-list",
        SPEC,
        STATE,
        "r = df.groupby('g').agg({'q': ['size', 'nme']})\n",
        "AttributeError",
    ),
    Case("groupby-list", SPEC, STATE, "r = num.groupby('g').agg(['sum', 'nme'])\n", "AttributeError"),
    Case(
        "groupby-named",
        SPEC,
        STATE,
        "r = df.groupby('g', as_index=False).agg(total=('price', 'sum'), bad=('q', 'nme'))\n",
        "AttributeError",
    ),
    Case(
        "groupby-column-list",
        SPEC,
        STATE,
        "r = df.groupby('g')['price'].agg(['mean', 'nme'])\n",
        "AttributeError",
    ),
    Case(
        "groupby-column-str",
        SPEC,
        STATE,
        "x = 1\nr = df.groupby(['g'])['q'].agg('nme')\n",
        "AttributeError",
        1,
    ),
    Case(
        "groupby-named-agg",
        SPEC,
        STATE,
        "r = df.groupby('g').agg(n=pd.NamedAgg('q', 'size'), m=pd.NamedAgg('price', aggfunc='meen'))\n",
        "AttributeError",
    ),
    Case(
        "groupby-dict-missing-column", SPEC, STATE, "r = df.groupby('g').agg({'prise': 'sum'})\n", "KeyError"
    ),
    Case(
        "groupby-named-missing-column",
        SPEC,
        STATE,
        "r = df.groupby('g').agg(new=('prise', 'sum'))\n",
        "KeyError",
    ),
    Case("frame-dict", SPEC, STATE, "r = df.agg({'price': 'nme'})\n", "AttributeError"),
    Case("frame-dict-missing-column", SPEC, STATE, "r = df.agg({'prise': 'sum', 'q': 'nme'})\n", "KeyError"),
    Case("frame-list", SPEC, STATE, "r = nums.agg(['sum', 'nme'])\n", "AttributeError"),
    Case("frame-named", SPEC, STATE, "r = df.agg(new=('price', 'nme'))\n", "AttributeError"),
    Case("series-dict", SPEC, STATE, "r = df['price'].agg({'x': 'nme'})\n", "AttributeError"),
    Case("column-str", SPEC, STATE, "r = df['price'].agg('meen')\n", "AttributeError"),
    Case("list-with-callable-after", SPEC, STATE, "r = nums.agg(['meen', np.std])\n", "AttributeError"),
    Case(
        "groupby-dict-callable-after",
        SPEC,
        STATE,
        "r = df.groupby('g').agg({'price': ['meen', np.std, spread]})\n",
        "AttributeError",
    ),
    Case("column-list", SPEC, STATE, "r = df['q'].aggregate(['sum', 'stdd'])\n", "AttributeError"),
    Case(
        "groupby-column-named",
        SPEC,
        STATE,
        "r = df.groupby('g')['price'].agg(total='sum', spread='rnage')\n",
        "AttributeError",
    ),
    Case("kernel-groupby", NAME, STATE, "r = g.agg('nme')\n", "AttributeError"),
    Case("kernel-series-groupby", NAME, STATE, "r = sg.aggregate('nme')\n", "AttributeError"),
    Case(
        "valid-spellings",
        SPEC,
        STATE,
        "a = num.groupby('g').agg('mean')\n"
        "b = df.groupby('g').agg(['size', 'nunique', 'first'])\n"
        "c = df.groupby('g').agg({'price': ['mean', np.mean, lambda x: x.max(), spread], 'q': 'size'})\n"
        "d = df.groupby('g').agg(avg=('price', 'mean'), n=('q', 'nunique'), f=('name', 'first'))\n"
        "e = df.groupby('g').agg('price')\n"
        "f = df.agg({'price': 'mean', 'q': ['sum', 'amax']})\n"
        "h = df.groupby('g')['price'].agg(['mean', np.mean, spread])\n"
        "i = df.agg(total=('price', 'sum'))\n"
        "j = df['q'].agg({'n': 'nunique', 's': 'size'})\n"
        "k = df['q'].agg({'n': 'sum', 'm': 'amax'})\n"
        "m = df['price'].agg('amax')\nn = df['q'].agg(['sum', 'ptp', np.std])\n"
        "o = df.groupby('g')['price'].agg(total='sum', top=spread)\n"
        "p = df.groupby('g').agg(n=pd.NamedAgg('q', 'size'), m=pd.NamedAgg(column='price', aggfunc='max'))\n",
        None,
    ),
    Case(
        "valid-kernel-groupby",
        NAME,
        STATE,
        "a = g.agg('size')\nb = g.agg('price')\nc = sg.agg('nunique')\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agg_forms(kernel, case: Case) -> None:
    verify(kernel, case)


@pytest.mark.parametrize(
    ("cell", "raised"),
    [
        # 'mean' on the text column 'name' (the first one aggregated) raises TypeError before 'nme' is tried
        ("r = df.groupby('g').agg(['mean', 'nme'])\n", "TypeError"),
        # 'nme' is a label of the index: pandas selects it instead (and raises something else)
        ("r = lab.groupby('g').agg({'v': 'nme'})\n", "IndexError"),
        # a user function runs first: it may raise anything
        ("r = num.groupby('g').agg([spread, 'nme'])\n", "AttributeError"),
        # 'sum' on a text column is not proven harmless (here it joins the text): unchecked
        ("r = num.agg(['sum', 'nme'])\n", "AttributeError"),
    ],
)
def test_unproven_order_is_silent(kernel, cell: str, raised: str) -> None:
    """Where a function that may raise runs before the misspelt one, or the name is an index label, the
    check stays silent: whatever the cell really raises, it was not proven."""
    kernel.run("%reset -f")
    kernel.run(STATE)
    assert predict(kernel, SPEC, cell) == []
    reply = kernel.run(cell, allow_error=True)
    assert reply["status"] == "error" and reply["ename"] == raised


def test_all_checks_together(kernel) -> None:
    """Through the runner with every check: the first crash is the aggregation's, the valid forms are
    silent (the queried class chains are no missing-attribute findings)."""
    cell = "t = df['price'].sum()\nr = df.groupby('g').agg(low=('price', 'min'), top=('price', 'maxx'))\n"
    first = assert_predicts(kernel, STATE, cell, "AttributeError", 1, check_id=SPEC, message="maxx")
    assert "SeriesGroupBy" in first.message
    assert_silent_and_runs(kernel, STATE, CASES[-2].cell)
