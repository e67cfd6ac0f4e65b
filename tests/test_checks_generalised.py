"""Check classes in the forms real notebooks write them: values built inside the call (``np.zeros((3, 2))``,
``df.drop(columns=...)``, ``df[['a', 'b']]``), names bound earlier in the cell, attributes of kernel objects
(a scikit-learn ``Bunch``). Every crash really raises in a real kernel; every near miss really runs clean.
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.containers
import crane_lsp.checks.frame_keys
import crane_lsp.checks.frame_ops
import crane_lsp.checks.pandas
import crane_lsp.checks.python
import crane_lsp.checks.sklearn  # noqa: F401
from tests.lib_checks_util import Case, verify

STATE = (
    "import numpy as np, pandas as pd\n"
    "from sklearn.linear_model import LinearRegression\n"
    "from sklearn.datasets import load_iris\n"
    "df = pd.DataFrame({'a': [1, 2, 3], 'b': [1.5, 2.5, 3.0], 'name': ['x', 'y', 'z']})\n"
    "df2 = pd.DataFrame({'a': [1, 2, 3], 'c': [4, 5, 6]})\n"
    "df3 = df2.set_index('a')\n"
    "iris = load_iris()\n"
    "small = [1, 2, 3]\n"
    "X3 = np.zeros((5, 2, 2))\n"
    "y = np.arange(5.0)\n"
    "lr = LinearRegression().fit(np.zeros((5, 2)), y)\n"
)
MK = "pandas.merge-keys"
FL = "pandas.frame-labels"
BA = "python.bunch-attribute"
MKEY = "python.missing-key"
SIV = "sklearn.input-values"
SIG = "python.call-signature"
CK = "python.computed-key"

MERGE = [
    Case("merge-on-missing-right", MK, STATE, "m = df.merge(df2, on='c')\n", "KeyError"),
    Case("pd-merge-on-missing", MK, STATE, "m = pd.merge(df, df2, on='zz')\n", "KeyError"),
    Case("merge-right-on", MK, STATE, "m = df.merge(df2, left_on='a', right_on='zz')\n", "KeyError"),
    Case(
        "merge-keys-bound-earlier",
        MK,
        STATE,
        "keys = ['a', 'q']\nm = pd.merge(df, df2, on=keys, how='inner')\n",
        "KeyError",
        1,
    ),
    Case("join-on-built-inside", MK, STATE, "j = df.join(df2.set_index('a'), on='zz')\n", "KeyError"),
    Case(
        "merge-keys-fine",
        MK,
        STATE,
        "m = df.merge(df2, on='a', how='left')\nn = df.merge(df2, left_on='b', right_on='c')\n"
        "keys = ['a']\no = pd.merge(df, df2, on=keys)\nj = df.join(df2, on='a', rsuffix='_r')\n"
        "k = df.merge(df3, on='a')\nl = df.merge(df2.set_index('c'), on='a')\n",
        None,
    ),
]

FRAME_LABELS = [
    Case(
        "columns-vs-array-built-inside",
        FL,
        STATE,
        "f = pd.DataFrame(np.zeros((3, 2)), columns=['a', 'b', 'c'])\n",
        "ValueError",
    ),
    Case(
        "columns-vs-random-array",
        FL,
        STATE,
        "f = pd.DataFrame(np.random.rand(4, 3), columns=['a', 'b'])\n",
        "ValueError",
    ),
    Case(
        "columns-vs-rows-literal",
        FL,
        STATE,
        "f = pd.DataFrame([[1, 2], [3, 4]], columns=['a'])\n",
        "ValueError",
    ),
    Case(
        "columns-vs-kernel-slice",
        FL,
        STATE,
        "f = pd.DataFrame(X3[0], columns=['a', 'b', 'c'])\n",
        "ValueError",
    ),
    Case("index-vs-rows", FL, STATE, "f = pd.DataFrame(np.ones((4, 1)), index=['a', 'b'])\n", "ValueError"),
    Case(
        "frame-labels-fine",
        FL,
        STATE,
        "f = pd.DataFrame(np.zeros((3, 2)), columns=['a', 'b'])\n"
        "g = pd.DataFrame([[1, 2], [3, 4]], columns=['a', 'b'])\n"
        "h = pd.DataFrame(X3[0], columns=['a', 'b'])\ni = pd.DataFrame({'a': [1, 2]}, columns=['a'])\n"
        "j = pd.DataFrame(df, columns=['a'])\nk = pd.DataFrame(iris.data, columns=iris.feature_names)\n",
        None,
    ),
]

CONTAINERS = [
    Case("bunch-attribute-missing", BA, STATE, "names = iris.target_name\n", "AttributeError"),
    Case(
        "bunch-attribute-fine",
        BA,
        STATE,
        "names = iris.target_names\nk = iris.keys()\niris.extra = 1\ne = iris.extra\n",
        None,
    ),
    Case("bunch-key-missing", MKEY, STATE, "d = iris['datas']\n", "KeyError"),
    Case("bunch-key-fine", MKEY, STATE, "d = iris['data']\nf = iris['feature_names'][0]\n", None),
    Case("list-position", MKEY, STATE, "v = small[5]\n", "IndexError"),
    Case("computed-key-name", CK, STATE + "d = {'alpha': 1}\n", "k = 'gamma'\nv = d[k]\n", "KeyError", 1),
    Case(
        "computed-key-loop",
        CK,
        STATE + "d = {'alpha': 1, 'beta': 2}\n",
        "for key in ['alpha', 'zeta']:\n    print(d[key])\n",
        "KeyError",
        1,
    ),
    Case(
        "computed-key-alias-and-guard",
        CK,
        STATE + "d = {'alpha': 1}\n",
        "k = 'gamma'\ntry:\n    v = d[k]\nexcept KeyError:\n    v = 0\ne = d\ne[k] = 1\nw = d[k]\n",
        None,
    ),
    Case("computed-position", CK, STATE, "i = 2\nv = small[i + 1]\n", "IndexError", 1),
    Case(
        "computed-key-fine",
        CK,
        STATE + "d = {'alpha': 1, 'beta': 2}\n",
        "for key in ['alpha', 'beta']:\n    print(d[key])\n"
        "k = 'gamma'\nd[k] = 3\nv = d[k]\ni = 1\nw = small[i + 1]\n",
        None,
    ),
]

ESTIMATOR_INPUTS = [
    Case("text-column-selected", SIV, STATE, "lr.fit(df[['a', 'name']], df['b'])\n", "ValueError"),
    Case(
        "text-column-left-by-drop",
        SIV,
        STATE,
        "X = df.drop('b', axis=1)\nlr.fit(X, df['b'])\n",
        "ValueError",
        1,
    ),
    Case("text-column-drop-inside", SIV, STATE, "lr.fit(df.drop(columns='b'), df['b'])\n", "ValueError"),
    Case("3d-built-inside", SIV, STATE, "p = lr.predict(np.zeros((2, 2, 2)))\n", "ValueError"),
    Case("3d-kernel-fit", SIV, STATE, "lr.fit(X3, y)\n", "ValueError"),
    Case(
        "estimator-inputs-fine",
        SIV,
        STATE,
        "lr.fit(df[['a', 'b']], df['b'])\nX = df.drop(columns=['name'])\nlr.fit(X, df['b'])\n"
        "p = lr.predict(X)\n",
        None,
    ),
]

KEYWORDS = [
    Case("fit-unknown-keyword", SIG, STATE, "lr.fit(X3[:, 0], y, epochs=3)\n", "TypeError"),
    Case("class-unknown-keyword", SIG, STATE, "m = LinearRegression(normalize=True)\n", "TypeError"),
    Case("reader-unknown-keyword", SIG, STATE, "d = pd.read_csv('x.csv', sepp=',')\n", "TypeError"),
    Case(
        "keywords-fine",
        SIG,
        STATE,
        "m = LinearRegression(fit_intercept=False)\nlr.fit(X3[:, 0], y, sample_weight=None)\n"
        "z = df[['a', 'b']].mean(0)\n",
        None,
    ),
]

WRONG_AXIS_AND_TEXT = [
    Case("drop-column-without-axis", "pandas.missing-label", STATE, "d = df.drop('name')\n", "KeyError"),
    Case(
        "drop-columns-axis0", "pandas.missing-label", STATE, "d = df.drop(['a', 'b'], axis=0)\n", "KeyError"
    ),
    Case(
        "drop-bound-names-without-axis",
        "pandas.missing-label",
        STATE,
        "cols = ['a', 'b']\nd = df.drop(cols)\n",
        "KeyError",
        1,
    ),
    Case(
        "drop-rows-fine",
        "pandas.missing-label",
        STATE,
        "d = df.drop([0, 1])\ne = df.drop('name', axis=1)\ncols = ['a']\nf = df.drop(cols, axis=1)\n"
        "rows = [0]\ng = df.drop(rows)\n",
        None,
    ),
    Case(
        "mutated-list-stays-silent",
        "pandas.missing-column",
        STATE,
        "cols = ['a', 'zz']\ncols.remove('zz')\nx = df[cols]\n",
        None,
    ),
    Case("number-plus-text", "pandas.text-arithmetic", STATE, "s = df['a'] + df['name']\n", "TypeError"),
    Case("number-times-text", "pandas.text-arithmetic", STATE, "s = df['a'] * df['name']\n", None),
]


@pytest.mark.parametrize(
    "case", MERGE + FRAME_LABELS + CONTAINERS + ESTIMATOR_INPUTS + KEYWORDS + WRONG_AXIS_AND_TEXT, ids=str
)
def test_generalised_check(kernel, case: Case) -> None:
    verify(kernel, case)
