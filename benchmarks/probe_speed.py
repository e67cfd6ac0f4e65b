"""How fast is a probe round trip, and what would exact statistics cost instead?

Starts a fresh kernel and measures, through the real ``KernelLink`` (silent execute + user_expressions):
1. a trivial probe (empty query): the fixed cost of one round trip;
2. a typical notebook state: a few DataFrames, arrays, a fitted model, containers;
3. a 5M x 20 mixed-dtype DataFrame (sampled summaries under the probe's budgets);
4. the same in Polars, a Polars LazyFrame's schema and a 50-column Spark frame (schema only, no job);
beside the cost of exact full-length statistics (nunique, NaN counts, min/max, value counts) on the
same frame, computed in the kernel. ``--baseline REV`` also installs git revision REV's agent in the
same kernel and times both inside it, alternating rounds, so the ratio holds under a shared machine's
load. ``--pandas2 DIR`` (``pip install --target DIR "pandas>=2.2,<3"``, as ``.ci/run`` does) adds a
second kernel with DIR laid over the venv: the big frame's probe on pandas 2 and on the venv's pandas
(3) side by side, rounds alternating between the two kernels, wall and CPU time inside each kernel
(the CPU time is what a shared machine's load does not inflate). Run by hand:
``python benchmarks/probe_speed.py [--rows N] [--baseline REV] [--pandas2 DIR] [--side-by-side-only]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.kernel import probe_install
from crane_lsp.kernel.link import KernelLink
from crane_lsp.snapshot import ProbeQuery

TYPICAL = """
import numpy as np, pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
train_df = pd.DataFrame(rng.normal(size=(20_000, 30)), columns=[f"f{i}" for i in range(30)])
train_df["label"] = rng.integers(0, 2, 20_000)
train_df["city"] = rng.choice(["paris", "oslo", "lima"], 20_000)
test_df = train_df.drop(columns=["label"]).head(5_000)
small = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
X = train_df[[f"f{i}" for i in range(30)]].to_numpy()
y = train_df["label"].to_numpy()
images = rng.random((256, 32, 32, 3), dtype=np.float32)
model = LogisticRegression(max_iter=200).fit(X, y)
forest = RandomForestClassifier(n_estimators=10, max_depth=4).fit(X[:2000], y[:2000])
params = {"lr": 0.01, "epochs": 10, "layers": [64, 32]}
names = [f"n{i}" for i in range(1000)]
"""
TYPICAL_NAMES = [
    "train_df",
    "test_df",
    "small",
    "X",
    "y",
    "images",
    "model",
    "forest",
    "params",
    "names",
    "np",
    "pd",
]

BIG = """
import numpy as np, pandas as pd
_r = np.random.default_rng(1)
_n = {rows}
big = pd.DataFrame({{
    **{{f"f{{i}}": _r.normal(size=_n) for i in range(8)}},
    **{{f"i{{i}}": _r.integers(0, 1000, _n) for i in range(4)}},
    **{{f"c{{i}}": pd.Series(_r.choice(["red", "green", "blue", "cyan"], _n), dtype=object)
        for i in range(3)}},
    "flag": _r.integers(0, 2, _n).astype(bool),
    "when": pd.date_range("2020-01-01", periods=_n, freq="s"),
    "cat": pd.Categorical(_r.choice(["a", "b", "c"], _n)),
    "nan_f": np.where(_r.random(_n) < 0.1, np.nan, 1.0),
    "id": np.arange(_n),
}})
del _r, _n
print(big.shape)
"""

EXACT = """
import time as _t
_t0 = _t.perf_counter()
_exact = {c: (big[c].nunique(), int(big[c].isna().sum()), big[c].value_counts().head(3).to_dict())
          for c in big}
_exact_num = big.select_dtypes("number").agg(["min", "max"])
print(f"EXACT {_t.perf_counter() - _t0:.3f}")
del _exact, _exact_num, _t0, _t
"""


POLARS = """
import polars as pl, numpy as np
_r = np.random.default_rng(2)
_n = {rows}
pbig = pl.DataFrame({{
    **{{f"f{{i}}": _r.normal(size=_n) for i in range(8)}},
    **{{f"i{{i}}": _r.integers(0, 1000, _n) for i in range(4)}},
    **{{f"c{{i}}": _r.choice(["red", "green", "blue", "cyan"], _n) for i in range(3)}},
    "flag": _r.integers(0, 2, _n).astype(bool),
    "when": pl.datetime_range(pl.datetime(2020, 1, 1), pl.datetime(2020, 1, 1) + pl.duration(seconds=_n - 1),
                              "1s", eager=True),
    "cat": pl.Series(_r.choice(["a", "b", "c"], _n)).cast(pl.Categorical),
    "nan_f": np.where(_r.random(_n) < 0.1, np.nan, 1.0),
    "id": np.arange(_n),
}})
plazy = pbig.lazy().filter(pl.col("i0") > 10).with_columns(z=pl.col("f0") * 2)
del _r, _n
print(pbig.shape)
"""

SPARK = """
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[1]").config("spark.driver.memory", "512m")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
swide = spark.range(1000).select(*[(F.col("id") * i).cast("double").alias(f"c{i}") for i in range(50)])
_ = swide.schema  # first schema fetch of the frame (later ones are cached by pyspark)
swide2 = swide.select(*[F.col(f"c{i}") for i in range(50)])  # a frame whose schema is not fetched yet
jobs0 = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
"""


def _ms(values: list[float]) -> str:
    p90 = sorted(values)[min(len(values) - 1, math.ceil(len(values) * 0.9) - 1)]
    return f"{statistics.median(values):.1f} ms (p90 {p90:.1f})"


async def _timed_snapshots(
    link: KernelLink, query: ProbeQuery, repeat: int
) -> tuple[list[float], list[float]]:
    round_trips, in_kernel = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        snap = await link.snapshot(query, timeout=120)
        round_trips.append((time.perf_counter() - t0) * 1000)
        if snap.elapsed_ms is not None:
            in_kernel.append(snap.elapsed_ms)
    return round_trips, in_kernel


def _baseline_source(rev: str) -> str:
    """The joined kernel source of git revision ``rev`` (its own ``probe_install`` joins its own files)."""
    root = Path(__file__).resolve().parent.parent
    tmp = Path(tempfile.mkdtemp(prefix="crane-probe-base-"))
    archive = subprocess.run(
        ["git", "archive", rev, "crane_lsp/kernel"], cwd=root, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    spec = importlib.util.spec_from_file_location("_base_install", tmp / "crane_lsp/kernel/probe_install.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.PROBE_SOURCE)


async def _in_kernel_ms(link: KernelLink, module: str, query: ProbeQuery, repeat: int) -> list[float]:
    """``snapshot()`` of ``module`` timed inside the kernel (no transport): what the agent's code costs."""
    code = (
        "import sys as _s, json as _j, time as _t\n"
        f"_m, _q, _ts = _s.modules[{module!r}], {json.dumps(query.model_dump_json())}, []\n"
        f"for _ in range({repeat}):\n"
        "    _t0 = _t.perf_counter(); _m.snapshot(_q); _ts.append((_t.perf_counter() - _t0) * 1000)\n"
        "print('TIMES', _j.dumps(_ts)); del _s, _j, _t, _m, _q, _ts, _t0\n"
    )
    result = await link.execute(code, timeout=600)
    line = next(x for x in result.stdout.splitlines() if x.startswith("TIMES "))
    times: list[float] = json.loads(line[6:])
    return times


#: Inside the kernel: ``snapshot()`` of the big frame timed (wall and this thread's CPU), and how many of
#: its columns got their statistics; printed as one JSON line.
TIMED_BIG = (
    "import sys as _s, json as _j, time as _t\n"
    "_m, _q, _out = _s.modules[{module!r}], {query}, []\n"
    "for _ in range({repeat}):\n"
    "    _t0, _c0 = _t.perf_counter(), _t.thread_time()\n"
    "    _a = _m.snapshot(_q)._repr_json_(); _j.dumps(_a)\n"
    "    _cols = _a['variables']['big']['columns']\n"
    "    _out.append(((_t.perf_counter() - _t0) * 1000, (_t.thread_time() - _c0) * 1000,\n"
    "                 sum(1 for c in _cols if c.get('stats')), len(_cols)))\n"
    "print('TIMES', _j.dumps(_out)); del _s, _j, _t, _m, _q, _out, _t0, _c0, _a, _cols\n"
)


#: the default budgets, and none that a loaded machine could hit (what every column costs)
SIDE_BUDGETS = {"default": {}, "unbudgeted": {"object_budget_s": 60.0, "request_budget_s": 120.0}}


async def _timed_big(
    link: KernelLink, module: str, repeat: int, budgets: dict[str, float]
) -> list[tuple[float, float, int, int]]:
    query = json.dumps(ProbeQuery(names=["big"]).model_copy(update=budgets).model_dump_json())
    result = await link.execute(TIMED_BIG.format(module=module, query=query, repeat=repeat), timeout=600)
    line = next((x for x in result.stdout.splitlines() if x.startswith("TIMES ")), None)
    if line is None:
        raise RuntimeError(f"timing failed: {result.ename}: {result.evalue}")
    return [tuple(x) for x in json.loads(line[6:])]  # type: ignore[misc]


async def side_by_side(pandas2: str, rows: int, repeat: int, baseline: str | None) -> Table:
    """The big frame's probe in a pandas-3 kernel (the venv) and a pandas-2 kernel (``pandas2`` over the
    venv), both built alike, rounds alternating between the kernels (and agents) so both see one load."""
    links: dict[str, KernelLink] = {}
    saved = os.environ.get("PYTHONPATH")
    try:
        links["venv"] = await KernelLink.start(quiet=True)
        os.environ["PYTHONPATH"] = pandas2 + (os.pathsep + saved if saved else "")
        links["pandas2"] = await KernelLink.start(quiet=True)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    agents = {"this tree": probe_install.MODULE_NAME}
    if baseline:
        agents[baseline] = "_crane_probe_base"
    try:
        versions = {}
        for label, link in links.items():
            await link.snapshot(ProbeQuery())  # installs this tree's agent
            if baseline:
                code = probe_install.install_code(_baseline_source(baseline), "base", agents[baseline])
                await link.execute(code, timeout=60)
            result = await link.execute(
                BIG.format(rows=rows) + "print('PANDAS', pd.__version__)", timeout=600
            )
            assert result.ok, result.evalue
            versions[label] = next(x for x in result.stdout.splitlines() if x.startswith("PANDAS")).split()[1]
        times: dict[tuple[str, str, str], list[tuple[float, float, int, int]]] = {}
        for _ in range(max(1, repeat // 3)):
            for budget, budgets in SIDE_BUDGETS.items():
                for label, link in links.items():
                    for agent, module in agents.items():
                        runs = await _timed_big(link, module, 3, budgets)
                        times.setdefault((budget, label, agent), []).extend(runs)
    finally:
        for link in links.values():
            await link.close()
    table = Table(title=f"{rows:,} x 20 frame, in-kernel snapshot(): pandas 2 and 3 side by side (one run)")
    for col in (
        "budgets",
        "pandas",
        "agent",
        "wall ms (median, p90)",
        "CPU ms (median)",
        "columns with stats",
    ):
        table.add_column(col)
    for (budget, label, agent), runs in times.items():
        covered = sorted({f"{n}/{total}" for _, _, n, total in runs})
        table.add_row(
            budget,
            versions[label],
            agent,
            _ms([w for w, _, _, _ in runs]),
            f"{statistics.median([c for _, c, _, _ in runs]):.0f}",
            ", ".join(covered),
        )
    return table


async def compare_baseline(link: KernelLink, rev: str, queries: dict[str, ProbeQuery], repeat: int) -> Table:
    """This tree's agent beside revision ``rev``'s in the same kernel, alternating rounds (same load)."""
    base = "_crane_probe_base"
    await link.execute(probe_install.install_code(_baseline_source(rev), "base", base), timeout=60)
    table = Table(title=f"in-kernel snapshot(): this tree vs {rev} (median of {repeat}, alternating rounds)")
    for col in ("what", "this tree", rev, "ratio (this / base)"):
        table.add_column(col)
    for what, query in queries.items():
        now: list[float] = []
        old: list[float] = []
        for _ in range(max(1, repeat // 5)):  # rounds of 5 calls each, alternating
            now += await _in_kernel_ms(link, probe_install.MODULE_NAME, query, 5)
            old += await _in_kernel_ms(link, base, query, 5)
        ratio = statistics.median(now) / statistics.median(old)
        table.add_row(what, _ms(now), _ms(old), f"{ratio:.2f}")
    return table


async def main(
    rows: int,
    repeat: int,
    exact: bool,
    frames: bool = True,
    pandas: bool = True,
    baseline: str | None = None,
    pandas2: str | None = None,
    only_side_by_side: bool = False,
) -> None:
    console = Console(width=160)
    console.print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if pandas2:
        console.print(await side_by_side(pandas2, rows, repeat, baseline))
        if only_side_by_side:
            console.print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            return
    table = Table(title=f"probe round trips (median of {repeat}; fresh ipykernel, KernelLink)")
    for col in ("what", "round trip", "inside the probe", "notes"):
        table.add_column(col)
    async with await KernelLink.start(quiet=True) as link:
        await link.snapshot(ProbeQuery())  # installs the probe
        rt, inside = await _timed_snapshots(link, ProbeQuery(), repeat)
        table.add_row("trivial probe (empty query)", _ms(rt), _ms(inside) if inside else "-", "")

        if not pandas:
            await _frames(link, table, console, rows, repeat)
            console.print(table)
            return
        result = await link.execute(TYPICAL, timeout=300)
        assert result.ok, result.evalue
        query = ProbeQuery(names=TYPICAL_NAMES, chains=["model.predict", "train_df.append"])
        rt, inside = await _timed_snapshots(link, query, repeat)
        snap = await link.snapshot(query)
        table.add_row(
            f"typical state ({len(TYPICAL_NAMES)} objects)",
            _ms(rt),
            _ms(inside) if inside else "-",
            f"deadline hit: {snap.deadline_hit}",
        )

        console.print(f"building a {rows:,} x 20 mixed-dtype frame in the kernel ...")
        t0 = time.perf_counter()
        result = await link.execute(BIG.format(rows=rows), timeout=600)
        assert result.ok, result.evalue
        build_s = time.perf_counter() - t0
        big_repeat = max(1, repeat // 5)
        rt, inside = await _timed_snapshots(link, ProbeQuery(names=["big"]), big_repeat)
        snap = await link.snapshot(ProbeQuery(names=["big"]), timeout=120)
        big = snap.variables.get("big")
        sampled = sum(1 for c in (big.columns or []) if c.stats and c.stats.sampled) if big else 0
        table.add_row(
            f"{rows:,} x 20 frame (sampled)",
            _ms(rt),
            _ms(inside) if inside else "-",
            f"built in {build_s:.1f} s; {sampled} columns sampled; deadline hit: {snap.deadline_hit}",
        )
        if exact:
            result = await link.execute(EXACT, timeout=600)
            lines = result.stdout.splitlines()
            exact_s = next((float(ln.split()[1]) for ln in lines if ln.startswith("EXACT")), None)
            table.add_row(
                f"{rows:,} x 20 frame, exact stats",
                f"{exact_s * 1000:.0f} ms" if exact_s is not None else f"failed: {result.evalue}",
                "-",
                "nunique + NaN count + top-3 value_counts per column, min/max of numeric columns",
            )
        if frames:
            await _frames(link, table, console, rows, repeat)
        if baseline and pandas:
            queries = {
                "trivial probe (empty query)": ProbeQuery(),
                f"typical state ({len(TYPICAL_NAMES)} objects)": query,
                f"{rows:,} x 20 frame (sampled)": ProbeQuery(names=["big"]),
            }
            base_table = await compare_baseline(link, baseline, queries, repeat)
    console.print(table)
    if baseline and pandas:
        console.print(base_table)
    console.print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _frames(link: KernelLink, table: Table, console: Console, rows: int, repeat: int) -> None:
    """Polars (5M x 20 eager, and a lazy plan's schema) and a 50-column Spark frame (schema only)."""
    console.print(f"building a {rows:,} x 20 Polars frame in the kernel ...")
    result = await link.execute(POLARS.format(rows=rows), timeout=600)
    if not result.ok:
        table.add_row("polars", f"skipped: {result.ename}", "-", "")
    else:
        for names, what in (
            (["pbig"], f"polars {rows:,} x 20 frame (sampled)"),
            (["plazy"], "polars LazyFrame schema"),
        ):
            query = ProbeQuery(names=names)
            rt, inside = await _timed_snapshots(link, query, max(1, repeat // 5))
            snap = await link.snapshot(query, timeout=120)
            table.add_row(what, _ms(rt), _ms(inside) if inside else "-", f"deadline hit: {snap.deadline_hit}")
    console.print("starting Spark (local[1]) in the kernel ...")
    result = await link.execute(SPARK, timeout=600)
    if not result.ok:
        table.add_row("spark", f"skipped: {result.ename}", "-", "")
        return
    for name, what in (
        ("swide", "spark 50-column frame (schema cached)"),
        ("swide2", "spark 50-column frame"),
    ):
        query = ProbeQuery(names=[name])
        rt, inside = await _timed_snapshots(link, query, 1)  # the first probe fetches the schema
        first = rt[0]
        rt, inside = await _timed_snapshots(link, query, max(1, repeat // 5))
        snap = await link.snapshot(query, timeout=120)
        cols = snap.variables[name].n_columns
        table.add_row(
            what, _ms(rt), _ms(inside) if inside else "-", f"first probe {first:.1f} ms; {cols} columns"
        )
    result = await link.execute(
        "print('JOBS', len(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) - jobs0)", timeout=60
    )
    table.add_row("spark jobs run by probing", result.stdout.strip(), "-", "statusTracker")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-exact", action="store_true", help="skip the exact statistics (slow)")
    parser.add_argument("--no-frames", action="store_true", help="skip Polars and Spark")
    parser.add_argument("--frames-only", action="store_true", help="only Polars and Spark")
    parser.add_argument(
        "--baseline", metavar="REV", help="also time git revision REV's agent in the same kernel"
    )
    parser.add_argument("--pandas2", metavar="DIR", help="a pandas 2 --target install: side by side")
    parser.add_argument("--side-by-side-only", action="store_true", help="with --pandas2: only that")
    args = parser.parse_args()
    asyncio.run(
        main(
            args.rows,
            args.repeat,
            not args.no_exact,
            not args.no_frames,
            not args.frames_only,
            args.baseline,
            args.pandas2,
            args.side_by_side_only,
        )
    )
