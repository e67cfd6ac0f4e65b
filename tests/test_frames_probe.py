"""Polars and Dask frames in a real kernel: summarised from their schema, nothing computed or imported."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from crane_lsp.kernel.probe_install import call_expression
from crane_lsp.render import render_snapshot
from tests.probe_util import _user_expressions, install_probe, snapshot

pytest.importorskip("polars")
pytest.importorskip("dask.dataframe")

POLARS = (
    "import polars as pl\n"
    "calls = []\n"
    "def _count(s):\n"
    "    calls.append(1)\n"
    "    return s\n"
    "pdf = pl.DataFrame({'a': [1, 2, None, 4], 'b': ['x', 'y', 'x', 'z'],\n"
    "                    'c': [0.5, float('nan'), 2.0, 3.0]})\n"
    "lf = pdf.lazy().with_columns(a2=pl.col('a').map_batches(_count, return_dtype=pl.Int64))\n"
    "lf = lf.filter(pl.col('a') > 0)\n"
    "bad_lf = pdf.lazy().select(pl.col('zz'))\n"
)

DASK = (
    "import pandas as pd, dask, dask.dataframe as dd\n"
    "from dask.callbacks import Callback\n"
    "tasks = []\n"
    "class _Spy(Callback):\n"
    "    def _pretask(self, key, dsk, state):\n"
    "        tasks.append(key)\n"
    "_spy = _Spy(); _spy.register()\n"
    "ddf = dd.from_pandas(pd.DataFrame({'k': [1, 2, 3, 4], 'v': [1.5, 2.5, 3.5, 4.5], 's': list('wxyz')}),\n"
    "                     npartitions=2)\n"
    "dser = ddf['v'] * 2\n"
    "by_s = ddf.set_index('s')\n"
)


def _modules(kernel: Any) -> set[str]:
    return set(ast.literal_eval(kernel.eval("sorted(__import__('sys').modules)")))


def test_polars_frames_from_schema_without_collect(kernel: Any) -> None:
    kernel.reset()
    kernel.run(POLARS)
    before = _modules(kernel)
    snap = snapshot(kernel, {"names": ["pdf", "lf", "bad_lf"]})
    df, lf, bad = snap.variables["pdf"], snap.variables["lf"], snap.variables["bad_lf"]
    assert df.kind == "polars_dataframe" and df.shape == [4, 3]
    pairs = [(c.name, c.dtype) for c in df.columns or []]
    assert pairs == [("a", "Int64"), ("b", "String"), ("c", "Float64")]
    a, b, c = (col.stats for col in df.columns or [])
    assert a is not None and (a.nan_count, a.min, a.max, a.distinct) == (1, 1, 4, 3)
    assert b is not None and b.distinct == 3 and b.value_kind == "categorical"
    assert c is not None and c.has_nan and c.nan_count == 1
    assert lf.kind == "polars_lazyframe" and lf.frame is not None and lf.frame.lazy
    assert [col.name for col in lf.columns or []] == ["a", "b", "c", "a2"] and lf.shape == [None, 4]
    assert bad.kind == "polars_lazyframe" and bad.columns is None
    assert "ColumnNotFoundError" in (bad.error or "")
    # no plan ran (the UDF in lf counts executions), nothing new imported (not numpy, not dask)
    assert kernel.eval("len(calls)") == "0"
    new = {m.split(".")[0] for m in _modules(kernel) - before}
    assert not new & {"numpy", "pandas", "pyarrow", "dask", "pyspark"}, new
    kernel.run("lf.collect()")
    assert kernel.eval("len(calls)") == "1"  # the spy works: collecting does run the plan
    text = render_snapshot(snap)
    assert "schema (4): a: Int64, b: String, c: Float64, a2: Int64" in text


def test_polars_sampled_within_budget(kernel: Any) -> None:
    kernel.reset()
    kernel.run(
        "import polars as pl\nn = 300_000\n"
        "big = pl.DataFrame({'i': range(n), 's': [str(i % 7) for i in range(n)]})"
    )
    snap = snapshot(kernel, {"names": ["big"], "sample_rows": 10_000})
    cols = snap.variables["big"].columns or []
    i, s = cols[0].stats, cols[1].stats
    assert i is not None and i.sampled and i.min == 0 and i.max == 299_999 and i.nan_count == 0
    assert s is not None and s.distinct == 7 and s.value_kind == "categorical"


def test_dask_frames_from_meta_without_tasks(kernel: Any) -> None:
    kernel.reset()
    kernel.run(DASK)
    snap = snapshot(kernel, {"names": ["ddf", "dser", "by_s"]})
    ddf, dser, by_s = snap.variables["ddf"], snap.variables["dser"], snap.variables["by_s"]
    assert ddf.kind == "dask_dataframe" and ddf.shape == [None, 3]
    assert [(c.name, c.dtype) for c in ddf.columns or []][:2] == [("k", "int64"), ("v", "float64")]
    assert ddf.frame is not None and ddf.frame.npartitions == 2 and ddf.frame.known_divisions
    assert ddf.frame.divisions == ["0", "2", "3"]
    assert dser.kind == "dask_series" and dser.dtype == "float64" and dser.frame is not None
    assert dser.frame.npartitions == 2  # blockwise on data in hand: known without a task
    # set_index must sort to know its divisions: left unknown rather than computed
    assert by_s.kind == "dask_dataframe" and by_s.frame is not None and by_s.frame.npartitions is None
    assert [c.name for c in by_s.columns or []] == ["k", "v"]
    assert kernel.eval("len(tasks)") == "0"
    assert (
        "dask lazy (nothing runs until collect/compute/an action), npartitions 2, divisions known [0, 2, 3]"
        in (render_snapshot(snap))
    )
    kernel.run("ddf['v'].sum().compute()")
    assert int(kernel.eval("len(tasks)")) > 0  # the spy works: computing runs tasks


def test_user_subclass_of_a_frame_is_not_read(kernel: Any) -> None:
    """A subclass may override anything the summary would call: it gets a type and no schema."""
    kernel.reset()
    kernel.run("import polars as pl\nclass Mine(pl.DataFrame):\n    pass\nm = Mine({'a': [1]})")
    snap = snapshot(kernel, {"names": ["m"]})
    assert snap.variables["m"].kind == "other" and snap.variables["m"].columns is None


def test_dry_run_refuses_polars_cells_once_its_pool_runs(kernel: Any) -> None:
    """Polars' worker threads do not survive fork(): a forked Polars cell would hang to the budget."""
    kernel.reset()
    kernel.run(
        "import polars as pl\nn = 100_000\n"
        "df = pl.DataFrame({'a': range(n), 'b': [i % 7 for i in range(n)]})\n"
        "g = df.group_by('b').agg(pl.col('a').sum())\n"
    )
    install_probe(kernel)

    def dry(source: str) -> dict[str, Any]:
        expr = call_expression("dry_run", {"source": source, "budget_s": 5.0})
        result: dict[str, Any] = _user_expressions(kernel, "", {"r": expr}, 60)["r"]["data"][
            "application/json"
        ]
        return result

    polars_cell = dry("y = df.group_by('b').agg(pl.col('a').sum())\n")
    assert polars_cell["outcome"] == "unavailable" and "Polars' thread pool" in polars_cell["message"]
    other = dry("z = sum(range(10))\n")  # touches no Polars object: not refused for Polars
    assert "Polars" not in (other.get("message") or "")
    assert other["outcome"] in ("completed", "unavailable")
