"""How fast is a jailed dry run, and what does it save?

Through the real ``KernelLink`` (probe ``dry_run``: fork, confine the child — descriptors, shared
mappings, thread pools, Landlock, seccomp —, run the cell, verdict over a pipe, kill and reap), for
a fast failing cell (a missing column: ``KeyError``) on a fresh kernel holding about 10 MB, then
about 1 GiB (goals: median fork-to-verdict at most 40 ms and 60 ms). Per run it records
- fork-to-verdict: the kernel-side ``round_trip_s`` (fork, jail, child runs, answer read);
- the jail: the child's CPU milliseconds per confinement step (summed), and its CPU time from the fork
  to the first line of the cell (on a loaded machine the wall time mostly measures the wait for a CPU);
- the host round trip: ``link.call`` as the pipeline sees it (silent execute + user_expressions);
- the phases, in wall milliseconds from the fork: ``dry_run`` entered (negative: transform, compile,
  filter forecast), fork returned, child started, limits, kernel muted, jail done (the cell starts),
  cell ended, answer written, answer read by the kernel, reaped/returned;
- the child's private dirty memory (what copy-on-write really copied), in 3 extra runs that ask for
  it (reading ``smaps_rollup`` costs 10-25 ms, so the timed runs do not);
- the prepared path (``dry_run_prepare`` while the user types, then the dry run): request-to-verdict,
  from ``dry_run()`` entered to the verdict read (goals: median at most 40 ms and 60 ms), and the
  prepare call's own time in the kernel (the fork; the child jails itself after it returns).
Beside it, the cost the dry run saves: re-running a notebook from the top in a fresh kernel after a crash
(kernel start + replay of the bundled example ``examples/sklearn_housing``, and of one JunoBench replay
case from the shipped ``crane_lsp/data/junoreplay``), and rebuilding the 1 GiB state itself.

Run by hand: ``python benchmarks/dryrun_speed.py [--runs 20] [--big-gib 1.0] [--no-replay]``. On a
loaded machine the niced child waits for the CPU: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.replay import start_and_replay
from crane_lsp.notebook import read_notebook

REPO = Path(__file__).resolve().parents[1]
FAILING = "totals = df.groupby('region')['units'].sum()\ntotals['Region']\nmissing = df['Region']"
SMALL_STATE = (
    "import numpy as np, pandas as pd\n"
    "rng = np.random.default_rng(0)\n"
    "df = pd.DataFrame({'region': rng.choice(['n', 's', 'e', 'w'], 200_000),"
    " 'units': rng.integers(0, 100, 200_000), 'price': rng.random(200_000)})\n"
    "arr = rng.random(600_000)  # with df: about 10 MB"
)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


async def measure(link: KernelLink, runs: int) -> Measured:
    out: dict[str, list[float]] = {
        "fork_to_verdict": [],
        "host": [],
        "child": [],
        "fork": [],
        "setup": [],
        "jail": [],
        "cpu": [],
        "dirty_mb": [],
        "child_cpu": [],
    }
    phases: dict[str, list[float]] = {}
    await link.call("dry_run", {"source": FAILING, "budget_s": 3.0}, timeout=15)  # warm-up
    for _ in range(3):
        payload = {"source": FAILING, "budget_s": 3.0, "measure_memory": True}
        r = await link.call("dry_run", payload, timeout=15)
        out["dirty_mb"].append((r.get("child_private_dirty_kb") or 0) / 1024)
    kernel_cpu = await kernel_cpu_s(link)
    for _ in range(runs):
        t0 = time.perf_counter()
        r = await link.call("dry_run", {"source": FAILING, "budget_s": 3.0}, timeout=15)
        host = time.perf_counter() - t0
        assert r["outcome"] == "raised" and r["exception"] == "KeyError", r
        out["fork_to_verdict"].append(r["round_trip_s"])
        out["host"].append(host)
        out["child"].append(r["elapsed_s"])
        out["fork"].append(r.get("fork_s") or 0.0)
        out["setup"].append(r.get("setup_s") or 0.0)
        steps = {k: v for k, v in (r.get("jail_ms") or {}).items() if k not in ("before", "forecast")}
        out["jail"].append(sum(steps.values()) / 1000)
        out["cpu"].append(r.get("setup_cpu_s") or 0.0)
        out["child_cpu"].append(r.get("child_cpu_s") or 0.0)
        for name, ms in (r.get("phases_ms") or {}).items():
            phases.setdefault(name, []).append(ms)
    out["kernel_cpu"] = [(await kernel_cpu_s(link) - kernel_cpu) / runs]
    return out, phases


async def measure_prepared(
    link: KernelLink, runs: int, gap_s: float, source: str = FAILING, exception: str = "KeyError"
) -> dict[str, list[float]]:
    """The prepared path: prepare, ``gap_s`` of typing (the child jails itself meanwhile), dry run."""
    out: dict[str, list[float]] = {"request_to_verdict": [], "round_trip": [], "host": [], "prepare": []}
    out["prepare_host"] = []
    out["child_cpu"], out["cell_cpu"] = [], []
    kernel_cpu = 0.0
    for i in range(runs + 1):
        if i == 1:
            kernel_cpu = await kernel_cpu_s(link)  # an execute: before a prepare, never between
        t0 = time.perf_counter()
        answer = await link.call("dry_run_prepare", {}, timeout=15)
        prepare_host = time.perf_counter() - t0
        assert answer["outcome"] == "prepared" and answer["fresh"], answer
        await asyncio.sleep(gap_s)
        t0 = time.perf_counter()
        r = await link.call("dry_run", {"source": source, "budget_s": 3.0}, timeout=15)
        host = time.perf_counter() - t0
        assert r["outcome"] == "raised" and r["exception"] == exception and r["prepared"], r
        if i == 0:
            continue  # warm-up
        phases = r["phases_ms"]
        out["request_to_verdict"].append((phases["verdict_read"] - phases["called"]) / 1000)
        for name in WARM_PHASES_NAMES:  # from dry_run() entered, on the child's clock
            if name in phases:
                out.setdefault(f"phase:{name}", []).append(phases[name] - phases["called"])
        out["child_cpu"].append(r.get("child_cpu_s") or 0.0)
        out["cell_cpu"].append((r.get("child_cpu_s") or 0.0) - (r.get("setup_cpu_s") or 0.0))
        out["round_trip"].append(r["round_trip_s"])
        out["host"].append(host)
        out["prepare"].append(answer["prepare_ms"] / 1000)
        out["prepare_host"].append(prepare_host)
    out["kernel_cpu"] = [(await kernel_cpu_s(link) - kernel_cpu) / runs]
    return out


REAL_CELL = (
    "import time as _bt\n_b0 = _bt.perf_counter()\n_tmp = df.groupby('region')['units'].sum()\n"
    "df['price2'] = df['price'] * 2\nprint(_bt.perf_counter() - _b0)"
)


async def real_cell_cost(link: KernelLink, runs: int = 7) -> tuple[float, float]:
    """What a live prepared child costs the user's kernel: median seconds of a real cell (a groupby
    and a new column, in the kernel) without a child, and right after a prepare (its writes to pages
    shared with the child are copied first)."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for i in range(2 * runs + 2):
        with_child = bool(i % 2)
        if with_child:
            await link.call("dry_run_prepare", {}, timeout=15)
            await asyncio.sleep(0.1)  # the child has jailed itself: it now only waits
        res = await link.execute(REAL_CELL)
        assert res.ok, res.evalue
        if i >= 2:
            times[with_child].append(float(res.stdout.strip()))
    await link.call("dry_run", {"source": "pass"}, timeout=15)  # discards the last child
    return statistics.median(times[False]), statistics.median(times[True])


async def kernel_cpu_s(link: KernelLink) -> float:
    """The kernel process's CPU seconds so far (user + system: fork's own work is system time)."""
    res = await link.execute("print(sum(__import__('os').times()[:2]))")
    return float(res.stdout.strip())


WARM_PHASES = (
    ("requested", "kernel: request sent (transform, compile, marshal before it)"),
    ("handover", "kernel: seccomp listener taken (sent at prepare)"),
    ("received", "child: request read, cell starts"),
    ("cell_end", "child: cell ended"),
    ("answer", "child: verdict written"),
    ("verdict_read", "kernel: verdict read"),
    ("returned", "kernel: dry_run() returns"),
)
WARM_PHASES_NAMES = dict(WARM_PHASES)

PHASES = (
    ("called", "dry_run() entered (before the fork)"),
    ("forked", "fork() returned in the kernel"),
    ("child_start", "child runs its first line"),
    ("limits", "child: process limits set"),
    ("muted", "child: kernel sockets muted"),
    ("handover", "kernel: seccomp listener received"),
    ("confined", "child: jail done, cell starts"),
    ("cell_end", "child: cell ended"),
    ("answer", "child: verdict written"),
    ("verdict_read", "kernel: verdict read"),
    ("reaped", "kernel: child killed/reaper started"),
    ("returned", "kernel: dry_run() returns"),
)


Measured = tuple[dict[str, list[float]], dict[str, list[float]]]


def prepared_table(states: list[tuple[str, float, Measured]], warm: list[dict[str, list[float]]],
                   args: argparse.Namespace) -> Table:  # fmt: skip
    """The prepared path beside the cold one, per kernel state (ms)."""
    table = Table(
        title=f"prepared child vs cold fork, {args.runs} runs each ({args.gap:g} s from prepare to dry run)"
    )
    for col in ("kernel state", "cold fork-to-verdict median", "cold p95",
                "prepared request-to-verdict median", "prepared p95",
                "prepared dry_run() round trip median", "prepared host round trip median",
                "prepare in the kernel median", "prepare host round trip median"):  # fmt: skip
        table.add_column(col, justify="right")
    for (name, _rss, (m, _)), w in zip(states, warm, strict=True):
        table.add_row(
            name,
            f"{statistics.median(m['fork_to_verdict']) * 1000:.1f}",
            f"{p95(m['fork_to_verdict']) * 1000:.1f}",
            f"{statistics.median(w['request_to_verdict']) * 1000:.1f}",
            f"{p95(w['request_to_verdict']) * 1000:.1f}",
            f"{statistics.median(w['round_trip']) * 1000:.1f}",
            f"{statistics.median(w['host']) * 1000:.1f}",
            f"{statistics.median(w['prepare']) * 1000:.1f}",
            f"{statistics.median(w['prepare_host']) * 1000:.1f}",
        )
    return table


def warm_phase_table(states: list[tuple[str, float, Measured]], warm: list[dict[str, list[float]]]) -> Table:
    """Median wall milliseconds from ``dry_run()`` entered to each phase of the prepared path."""
    table = Table(title="prepared path: median wall ms since dry_run() was entered")
    table.add_column("phase")
    for name, _rss, _m in states:
        table.add_column(name, justify="right")
    for key, label in WARM_PHASES:
        cells = [
            f"{statistics.median(w[f'phase:{key}']):.1f}" if w.get(f"phase:{key}") else "-" for w in warm
        ]
        table.add_row(f"{label} [{key}]", *cells)
    table.add_row(
        "child CPU (jail at prepare + cell)",
        *(f"{statistics.median(w['child_cpu']) * 1000:.1f}" for w in warm),
    )
    return table


def phase_table(states: list[tuple[str, float, Measured]]) -> Table:
    """Median wall milliseconds from the start of the fork to each phase, per kernel state."""
    table = Table(
        title="where the time goes: median wall ms since the fork began (one clock for both processes)"
    )
    table.add_column("phase")
    for name, _rss, _m in states:
        table.add_column(name, justify="right")
    for key, label in PHASES:
        cells = []
        for _name, _rss, (_m, phases) in states:
            values = phases.get(key)
            cells.append(f"{statistics.median(values):.1f}" if values else "-")
        table.add_row(f"{label} [{key}]", *cells)
    return table


async def rss_mb(link: KernelLink) -> float:
    res = await link.execute("print(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])")
    return int(res.stdout.strip()) / 1024


async def replay_cost(path: Path) -> tuple[float, int]:
    nb = read_notebook(path)
    cells = nb.code_cells
    tagged = [i for i, c in enumerate(cells) if "replay-target" in c.tags]
    target = tagged[-1] if tagged else len(cells) - 1
    t0 = time.perf_counter()
    link, report = await start_and_replay(nb, target, cell_timeout=300)
    elapsed = time.perf_counter() - t0
    await link.close()
    return elapsed, len(report.runs)


async def main_async(args: argparse.Namespace) -> None:
    console = Console(width=210)
    table = Table(title=f"dry run of a failing cell, {args.runs} runs each (ms; fork/child columns: medians)")
    columns = (
        "kernel state",
        "RSS MB",
        "fork-to-verdict median",
        "fork-to-verdict p95",
        "host round trip median",
        "host round trip p95",
        "fork()",
        "child setup",
        "jail CPU",
        "child CPU to the cell",
        "child total",
        "child CPU",
        "child copied MB (max)",
    )
    for col in columns:
        table.add_column(col, justify="right")
    link = await KernelLink.start(REPO, quiet=True)
    try:
        res = await link.execute(SMALL_STATE)
        assert res.ok, res.evalue
        states = [("~10 MB", await rss_mb(link), await measure(link, args.runs))]
        trivial = await measure_prepared(link, args.runs, args.gap, "1 / 0", "ZeroDivisionError")
        warm = [await measure_prepared(link, args.runs, args.gap)]
        cow = [await real_cell_cost(link)]
        t0 = time.perf_counter()
        n = int(args.big_gib * 2**30 / 8)
        res = await link.execute(f"big = np.ones({n})  # {args.big_gib:g} GiB of float64, pages touched")
        build_big = time.perf_counter() - t0
        assert res.ok, res.evalue
        states.append((f"+{args.big_gib:g} GiB", await rss_mb(link), await measure(link, args.runs)))
        warm.append(await measure_prepared(link, args.runs, args.gap))
        cow.append(await real_cell_cost(link))
    finally:
        await link.close()
    for name, rss, (m, _) in states:
        table.add_row(
            name,
            f"{rss:.0f}",
            f"{statistics.median(m['fork_to_verdict']) * 1000:.1f}",
            f"{p95(m['fork_to_verdict']) * 1000:.1f}",
            f"{statistics.median(m['host']) * 1000:.1f}",
            f"{p95(m['host']) * 1000:.1f}",
            f"{statistics.median(m['fork']) * 1000:.1f}",
            f"{statistics.median(m['setup']) * 1000:.1f}",
            f"{statistics.median(m['jail']) * 1000:.1f}",
            f"{statistics.median(m['cpu']) * 1000:.1f}",
            f"{statistics.median(m['child']) * 1000:.1f}",
            f"{statistics.median(m['child_cpu']) * 1000:.1f}",
            f"{max(m['dirty_mb']):.1f}",
        )
    console.print(table)
    console.print(phase_table(states))
    console.print(prepared_table(states, warm, args))
    console.print(warm_phase_table(states, warm))
    goals = (40.0, 60.0)
    for (name, _rss, (m, _)), goal in zip(states, goals, strict=False):
        median = statistics.median(m["fork_to_verdict"]) * 1000
        verdict = "met" if median <= goal else "NOT met"
        console.print(f"fork-to-verdict median, {name}: {median:.1f} ms (goal <= {goal:g} ms: {verdict})")
        child_ms = statistics.median(m["child_cpu"]) * 1000
        to_cell_ms = statistics.median(m["cpu"]) * 1000
        console.print(
            f"  CPU per dry run (load-independent): child {child_ms:.1f} ms (to the cell {to_cell_ms:.1f}),"
            f" kernel {m['kernel_cpu'][0] * 1000:.1f} ms (incl. the request itself and fork)"
        )
    for (name, _rss, _m), w, goal in zip(states, warm, goals, strict=False):
        median = statistics.median(w["request_to_verdict"]) * 1000
        verdict = "met" if median <= goal else "NOT met"
        console.print(
            f"prepared request-to-verdict median, {name}: {median:.1f} ms (goal <= {goal:g} ms: {verdict})"
        )
        console.print(
            f"  CPU (load-independent): the child from the request to its verdict"
            f" {statistics.median(w['cell_cpu']) * 1000:.1f} ms (its jail ran at prepare);"
            f" kernel per prepare + dry run {w['kernel_cpu'][0] * 1000:.1f} ms"
        )
    console.print(
        "the prepared path's own cost (a trivial cell, 1 / 0, ~10 MB): request-to-verdict median"
        f" {statistics.median(trivial['request_to_verdict']) * 1000:.1f} ms,"
        f" child CPU {statistics.median(trivial['cell_cpu']) * 1000:.1f} ms"
    )
    for (name, _rss, _m), (alone, beside) in zip(states, cow, strict=True):
        console.print(
            f"a real cell in the kernel (groupby + new column), {name}: {alone * 1000:.1f} ms alone,"
            f" {beside * 1000:.1f} ms while a prepared child lives (copy-on-write in the kernel)"
        )
    console.print(f"building the {args.big_gib:g} GiB array in the kernel took {build_big:.2f} s")
    console.print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.no_replay:
        return

    costs = Table(title="what a crash costs instead: re-running the notebook from the top in a fresh kernel")
    costs.add_column("notebook")
    costs.add_column("cells replayed", justify="right")
    costs.add_column("kernel start + replay (s)", justify="right")
    candidates = [
        REPO / "examples" / "sklearn_housing" / "housing.ipynb",
        REPO / "examples" / "pandas_sales" / "sales.ipynb",
    ]
    juno = REPO / "crane_lsp" / "data" / "junoreplay"
    if juno.exists():
        candidates += [juno / "pandas_11" / "buggy.ipynb", juno / "sklearn_3" / "buggy.ipynb"]
    for path in candidates:
        if path.exists():
            seconds, cells = await replay_cost(path)
            costs.add_row(str(path.relative_to(path.parents[2])), str(cells), f"{seconds:.1f}")
    console.print(costs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--big-gib", type=float, default=1.0)
    parser.add_argument("--no-replay", action="store_true", help="skip the re-run-from-the-top costs")
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between prepare and the dry run")
    asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
