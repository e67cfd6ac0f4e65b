"""pandas checks: every crash case really raises in a real kernel; every near miss really runs clean."""

from __future__ import annotations

import pytest

import crane_lsp.checks.pandas  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, predict, verify

DF = (
    "import pandas as pd, numpy as np\n"
    "df = pd.DataFrame({'a': [1, 2, 3], 'b': [1.5, np.nan, 3.0], 'name': ['x', 'y', 'z'],\n"
    "                   'when': pd.to_datetime(['2020-01-01', '2020-02-01', '2020-03-01']),\n"
    "                   'txt': ['1', '46.0', '3'], 'ok': ['1', '2', '3']})\n"
    "df.index.name = 'rid'\n"
    "other = pd.DataFrame({'a': [1, 2, 3], 'c': [4, 5, 6]})\n"
    "other2 = pd.DataFrame({'c': [4, 5, 6]})\n"
)

ROWS = DF + (
    "rows = pd.DataFrame({'v': [1, 2, 3]}, index=[10, 11, 13])\n"
    "named = pd.DataFrame({'v': [1, 2]}, index=['x', 'y'])\n"
    "ser = pd.Series([1, 2], index=['x', 'y'])\n"
    "fl = pd.DataFrame({'v': [1]}, index=[5.0])\n"
)
ML = "pandas.missing-label"

CASES = [
    # missing columns
    Case("select-missing", "pandas.missing-column", DF, "x = df['price']\n", "KeyError"),
    Case("select-list-missing", "pandas.missing-column", DF, "x = df[['a', 'zz']]\n", "KeyError"),
    Case("loc-column-missing", "pandas.missing-column", DF, "x = df.loc[df['a'] > 1, 'zz']\n", "KeyError"),
    Case(
        "loc-column-fine",
        "pandas.missing-column",
        DF,
        "x = df.loc[df['a'] > 1, 'b']\ny = df.loc[:, ['a', 'b']]\n",
        None,
    ),
    Case("select-present", "pandas.missing-column", DF, "x = df['a']\ny = df[['a', 'b']]\n", None),
    Case("select-created-earlier", "pandas.missing-column", DF, "df['new'] = 1\nx = df['new']\n", None),
    Case("drop-columns-kw", "pandas.missing-column", DF, "df.drop(columns='zz', inplace=True)\n", "KeyError"),
    Case("drop-axis1", "pandas.missing-column", DF, "d = df.drop(['a', 'zz'], axis=1)\n", "KeyError", 0),
    Case("drop-reassign", "pandas.missing-column", DF, "df = df.drop(['zz'], axis='columns')\n", "KeyError"),
    Case(
        "drop-errors-ignore",
        "pandas.missing-column",
        DF,
        "df = df.drop(['zz'], axis=1, errors='ignore')\n",
        None,
    ),
    Case("drop-rows-not-columns", "pandas.missing-column", DF, "d = df.drop([0])\n", None),
    Case(
        "drop-twice",
        "pandas.missing-column",
        DF,
        "df.drop(columns='a', inplace=True)\ndf.drop(columns='b')\n",
        None,
    ),
    Case("groupby-missing", "pandas.missing-column", DF, "g = df.groupby('region').size()\n", "KeyError"),
    Case("groupby-index-name", "pandas.missing-column", DF, "g = df.groupby('rid').size()\n", None),
    Case("sort-missing", "pandas.missing-column", DF, "s = df.sort_values(by=['a', 'zz'])\n", "KeyError"),
    Case("sort-present", "pandas.missing-column", DF, "s = df.sort_values(by='a')\n", None),
    Case("set-index-missing", "pandas.missing-column", DF, "s = df.set_index('zz')\n", "KeyError"),
    Case("dropna-subset-missing", "pandas.missing-column", DF, "s = df.dropna(subset=['zz'])\n", "KeyError"),
    Case(
        "after-user-function",
        "pandas.missing-column",
        DF + "def add(d):\n    d['zz'] = 1\n",
        "add(df)\nx = df['zz']\n",
        None,
    ),
    # aliases: a change through another name must silence the checks (these all run clean)
    Case(
        "alias-loop-literal",
        "pandas.missing-column",
        DF,
        "for d in [df, other]:\n    d['zz'] = 1\nx = df['zz']\n",
        None,
    ),
    Case(
        "alias-kernel-list",
        "pandas.missing-column",
        DF + "combine = [df, other]\n",
        "for d in combine:\n    d['zz'] = 1\nx = df['zz']\n",
        None,
    ),
    Case("alias-assign", "pandas.missing-column", DF, "d2 = df\nd2['zz'] = 1\nx = df['zz']\n", None),
    Case(
        "alias-kernel",
        "pandas.missing-column",
        DF + "df_alias = df\n",
        "df_alias['zz'] = 1\nx = df['zz']\n",
        None,
    ),
    Case(
        "alias-inplace",
        "pandas.missing-column",
        DF + "df_alias = df\n",
        "df_alias.rename(columns={'a': 'zz'}, inplace=True)\nx = df['zz']\n",
        None,
    ),
    Case(
        "after-pure-calls",
        "pandas.missing-column",
        DF,
        "print(len(df))\ndf.head()\nn = df['a'].value_counts().sort_index()\nx = df['zz']\n",
        "KeyError",
        3,
    ),
    # row labels not in the index
    Case("drop-missing-row", ML, ROWS, "rows.drop([12], inplace=True)\n", "KeyError", 0),
    Case("drop-index-kw", ML, ROWS, "x = 1\nd = rows.drop(index=12)\n", "KeyError", 1),
    Case("drop-axis-index", ML, ROWS, "d = rows.drop([10, 12], axis='index')\n", "KeyError"),
    # a column label dropped along the rows (axis=0 is the default): KeyError, with the hint
    Case("drop-column-axis0", ML, DF, "n = len(df)\nd = df.drop('name', axis=0)\n", "KeyError", 1),
    Case("drop-column-default-axis", ML, DF, "d = df.drop(['a', 'b'])\n", "KeyError", 0),
    Case("drop-column-axis1-near", ML, DF, "d = df.drop('name', axis=1)\ne = df.drop(columns=['a'])\n", None),
    Case("loc-scalar-missing", ML, ROWS, "r = named.loc['q']\n", "KeyError"),
    Case("loc-list-one-missing", ML, ROWS, "r = named.loc[['x', 'q']]\n", "KeyError"),
    Case("loc-row-col-missing", ML, ROWS, "r = named.loc['q', 'v']\n", "KeyError"),
    Case("at-missing", ML, ROWS, "r = named.at['q', 'v']\n", "KeyError"),
    Case("series-loc-missing", ML, ROWS, "r = ser.loc['q']\n", "KeyError"),
    Case("str-label-int-index", ML, ROWS, "r = rows.loc['10']\n", "KeyError"),
    Case("range-index-loc", ML, ROWS, "r = df.loc[3]\n", "KeyError"),
    Case("float-index-missing", ML, ROWS, "d = fl.drop([5.5])\n", "KeyError"),
    Case("float-label-int-index", ML, ROWS, "d = rows.drop(labels=[11.5])\n", "KeyError"),
    Case(
        "labels-present",
        ML,
        ROWS,
        "a = named.loc['x']\nb = named.loc[['x', 'y']]\nc = rows.drop([10])\nd = named.at['y', 'v']\n"
        "e = fl.drop([5])\nf = rows.loc[11.0]\ng = ser.loc['y']\nh = df.loc[2, 'a']\n",
        None,
    ),
    Case("drop-errors-ignore", ML, ROWS, "rows.drop([12], errors='ignore', inplace=True)\n", None),
    Case("loc-store-enlarges", ML, ROWS, "named.loc['q'] = 1\nser.loc['q'] = 3\n", None),
    Case("added-then-dropped", ML, ROWS, "named.loc['q'] = 5\nnamed.drop(['q'], inplace=True)\n", None),
    Case("added-then-read", ML, ROWS, "named.loc['q'] = 5\nr = named.loc['q']\n", None),
    Case(
        "not-label-lookups",
        ML,
        ROWS,
        "a = rows.reindex([12])\nb = named.get('q')\nc = rows.iloc[0]\nd = rows.drop(['v'], axis=1)\n",
        None,
    ),
    Case("after-reset", ML, ROWS, "rows = rows.reset_index(drop=True)\nd = rows.drop([2])\n", None),
    Case(
        "after-inplace-reset",
        ML,
        ROWS,
        "rows.reset_index(drop=True, inplace=True)\nrows.drop([0], inplace=True)\n",
        None,
    ),
    # .iloc
    Case("iloc-row-out", "pandas.iloc-range", DF, "r = df.iloc[3]\n", "IndexError"),
    Case("iloc-col-out", "pandas.iloc-range", DF, "r = df.iloc[0, 6]\n", "IndexError"),
    Case("iloc-last", "pandas.iloc-range", DF, "r = df.iloc[-3]\nq = df.iloc[2, 5]\n", None),
    # accessors
    Case("str-on-int", "pandas.accessor-dtype", DF, "u = df['a'].str.upper()\n", "AttributeError"),
    Case("dt-on-object", "pandas.accessor-dtype", DF, "u = df['b'].dt.year\n", "AttributeError"),
    Case("cat-on-object", "pandas.accessor-dtype", DF, "u = df['name'].cat.codes\n", "AttributeError"),
    Case("str-on-frame", "pandas.accessor-dtype", DF, "u = df.str.upper()\n", "AttributeError"),
    Case(
        "cat-on-categorical",
        "pandas.accessor-dtype",
        DF,
        "c = pd.Categorical(df['a'], categories=range(4))\nc.cat.rename_categories(['p', 'q', 'r', 's'])\n",
        "AttributeError",
        1,
    ),
    Case(
        "accessors-fine",
        "pandas.accessor-dtype",
        DF,
        "u = df['name'].str.upper()\ny = df['when'].dt.year\nz = df['name'].astype('category').cat.codes\n",
        None,
    ),
    # astype(int)
    Case("astype-nan", "pandas.astype-int", DF, "v = df['b'].astype(int)\n", "IntCastingNaNError"),
    Case("astype-float-text", "pandas.astype-int", DF, "v = df['txt'].astype('int')\n", "ValueError"),
    Case(
        "astype-ok",
        "pandas.astype-int",
        DF,
        "v = df['ok'].astype('int')\nw = df['b'].fillna(0).astype(int)\n"
        "x = df['txt'].astype(float).astype(int)\n",
        None,
    ),
    Case("astype-float-text", "pandas.astype-int", DF, "v = df['name'].astype(float)\n", "ValueError"),
    Case("to-numeric-text", "pandas.astype-int", DF, "v = pd.to_numeric(df['name'])\n", "ValueError"),
    Case(
        "to-numeric-fine",
        "pandas.astype-int",
        DF,
        "v = pd.to_numeric(df['txt'])\nw = pd.to_numeric(df['name'], errors='coerce')\n"
        "x = df['txt'].astype(float)\n",
        None,
    ),
    # assignment lengths
    Case("assign-short-list", "pandas.length-mismatch", DF, "df['n'] = [1, 2]\n", "ValueError"),
    Case("assign-columns", "pandas.length-mismatch", DF, "df.columns = ['p', 'q']\n", "ValueError"),
    Case(
        "assign-fine", "pandas.length-mismatch", DF, "df['n'] = [1, 2, 3]\nother.columns = ['p', 'q']\n", None
    ),
    # truth values
    Case("if-frame", "pandas.truth-value", DF, "if df:\n    print(1)\n", "ValueError"),
    Case("if-compare-series", "pandas.truth-value", DF, "if df['a'] > 1:\n    print(1)\n", "ValueError"),
    Case("and-series", "pandas.truth-value", DF, "x = df['a'] and 1\n", "ValueError"),
    Case(
        "truth-fine",
        "pandas.truth-value",
        DF,
        "if not df.empty and (df['a'] > 1).any():\n    print(1)\n",
        None,
    ),
    # join
    Case("join-overlap", "pandas.join-overlap", DF, "j = df.join(other)\n", "ValueError"),
    Case(
        "join-fine",
        "pandas.join-overlap",
        DF,
        "j = df.join(other2)\nk = df.join(other, rsuffix='_o')\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pandas_check(kernel, case: Case) -> None:
    verify(kernel, case)


def test_dropping_a_column_along_the_rows_says_it_is_a_column(kernel) -> None:
    kernel.run("%reset -f")
    kernel.run(DF)
    found = predict(kernel, ML, "d = df.drop('name', axis=0)\n")
    assert len(found) == 1 and "'name' is a column: drop with columns= or axis=1" in found[0].message
    assert ("df.columns", "['a', 'b', 'name', 'when', 'txt', 'ok']") in found[0].evidence
