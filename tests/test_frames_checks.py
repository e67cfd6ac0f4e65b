"""Missing columns in Polars and Dask frames: each crash really raises where predicted; near misses run."""

from __future__ import annotations

from typing import Any

import pytest

import crane_lsp.checks.frames  # noqa: F401  (registers the check)
from tests.lib_checks_util import Case, verify

pytest.importorskip("polars")
pytest.importorskip("dask.dataframe")

MC = "frames.missing-column"
PL = (
    "import polars as pl\n"
    "df = pl.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'x'], 'price': [1.0, 2.0, 3.0]})\n"
    "other = pl.DataFrame({'a': [1, 2], 'c': [5, 6]})\n"
    "lf = df.lazy()\n"
)
DD = (
    "import pandas as pd, dask.dataframe as dd\n"
    "ddf = dd.from_pandas(pd.DataFrame({'a': [1, 2, 3, 4], 'b': list('wxyz')}), npartitions=2)\n"
    "right = dd.from_pandas(pd.DataFrame({'a': [1, 2], 'c': [5, 6]}), npartitions=1)\n"
)
CNF = "ColumnNotFoundError"
DT = "frames.dtype"
IOE = "InvalidOperationError"

CASES = [
    # Polars DataFrame: raises at the call
    Case("pl-subscript", MC, PL, "x = df['prices']\n", CNF, 0),
    Case("pl-subscript-list", MC, PL, "x = df[['a', 'zz']]\n", CNF, 0),
    Case("pl-select-str", MC, PL, "y = 1\nx = df.select('a', 'zz')\n", CNF, 1),
    Case("pl-select-col", MC, PL, "x = df.select(pl.col('zz') * 2)\n", CNF, 0),
    Case("pl-filter", MC, PL, "x = df.filter((pl.col('a') > 1) & (pl.col('zz') < 3))\n", CNF, 0),
    Case("pl-with-columns", MC, PL, "x = df.with_columns(d=pl.col('Price').round(1))\n", CNF, 0),
    Case("pl-sort-after-filter", MC, PL, "x = df.filter(pl.col('a') > 1).sort('zz')\n", CNF, 0),
    Case("pl-group-by-agg", MC, PL, "x = df.group_by('zz').agg(pl.len())\n", CNF, 0),
    Case("pl-agg-expr", MC, PL, "x = df.group_by('b').agg(pl.col('zz').sum())\n", CNF, 0),
    Case("pl-join-on", MC, PL, "x = df.join(other, on='b')\n", CNF, 0),
    Case("pl-drop", MC, PL, "x = df.drop('zz')\n", CNF, 0),
    Case(
        "pl-fine",
        MC,
        PL,
        "x = df.select('a', pl.col('price') * 2)\n"
        "y = df.filter(pl.col('b') == 'x').sort('price')\n"
        "z = df.with_columns(n=pl.col('a') + 1).select('n')\n"
        "g = df.group_by('b').agg(pl.col('price').sum())\n"
        "j = df.join(other, on='a')\n"
        "d = df.drop('zz', strict=False)\n"
        "r = df.select(pl.col('^p.*$'))\n"
        "k = df['a']\n",
        None,
    ),
    Case("pl-column-added-first", MC, PL, "df = df.with_columns(zz=pl.lit(1))\nx = df.select('zz')\n", None),
    Case("pl-col-in-lambda", MC, PL, "f = lambda: df.select(pl.col('zz'))\nx = df.select('a')\n", None),
    Case("pl-col-in-conditional", MC, PL, "x = df.select(pl.col('zz') if False else pl.col('a'))\n", None),
    # Polars LazyFrame: nothing raises until collect
    Case("lazy-collect", MC, PL, "x = lf.filter(pl.col('zz') > 1).collect()\n", CNF, 0),
    Case("lazy-named-plan", MC, PL, "plan = lf.select('a', 'zz')\nn = 1\nout = plan.collect()\n", CNF, 2),
    Case("lazy-from-eager", MC, PL, "x = df.lazy().with_columns(pl.col('zz')).collect()\n", CNF, 0),
    Case("lazy-no-collect", MC, PL, "plan = lf.select('zz')\nn = plan.explain\n", None),
    Case("lazy-fine", MC, PL, "x = lf.filter(pl.col('a') > 1).select('b').collect()\n", None),
    Case("lazy-rebound", MC, PL, "plan = lf.select('zz')\nplan = lf.select('a')\nx = plan.collect()\n", None),
    # Polars dtypes: arithmetic between a String column and a number
    Case("pl-str-arith", DT, PL, "x = df.with_columns(n=pl.col('b') + 1)\n", IOE, 0),
    Case("pl-str-arith-filter", DT, PL, "x = df.filter(pl.col('a') > 0).select(2 * pl.col('b'))\n", IOE, 0),
    Case("pl-str-arith-lazy", DT, PL, "plan = lf.select(pl.col('b') * 2)\nx = plan.collect()\n", IOE, 1),
    Case(
        "pl-str-arith-fine",
        DT,
        PL,
        "x = df.with_columns(n=pl.col('a') + 1, s=pl.col('b') + 'x', t=pl.col('b').str.len_chars() + 1)\n"
        "plan = lf.select(pl.col('b') * 2)\n",
        None,
    ),
    # Dask: KeyError at the call (checked against _meta)
    Case("dask-subscript", MC, DD, "x = ddf['zz']\n", "KeyError", 0),
    Case("dask-subscript-list", MC, DD, "x = ddf[['a', 'zz']]\n", "KeyError", 0),
    Case("dask-groupby", MC, DD, "x = ddf.groupby('zz').a.sum()\n", "KeyError", 0),
    Case("dask-set-index", MC, DD, "x = ddf.set_index('zz')\n", "KeyError", 0),
    Case("dask-merge", MC, DD, "x = ddf.merge(right, on='b')\n", "KeyError", 0),
    Case("dask-drop", MC, DD, "x = ddf.drop(columns=['zz'])\n", "KeyError", 0),
    Case(
        "dask-fine",
        MC,
        DD,
        "x = ddf['a']\ny = ddf.groupby('b').a.sum()\nm = ddf.merge(right, on='a')\n"
        "d = ddf.drop(columns='zz', errors='ignore')\ns = ddf.sort_values('zz')\n",
        None,
    ),
    Case("dask-assigned-first", MC, DD, "ddf['zz'] = 1\nx = ddf['zz']\n", None),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_frame_columns(kernel: Any, case: Case) -> None:
    verify(kernel, case)
