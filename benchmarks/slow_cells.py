"""Slow cells: the real run time, the time to crane's verdict, and the verdict, per case.

Each case of ``tests/slow_cells_util.py`` (a row-wise apply, a loop over groups, a KMeans with many
restarts, a pairwise-distance loop, a torch training loop where torch imports; each ending in a real
crash after 20 s or more of real work, with a clean twin) and each trap (a cell that runs clean in
full but would crash on a naive sample) is dry-run through the real link and pipeline with the
typing budget, then run for real in the same kernel. The aim: a crash after 20 s or more observed
in under 3 s, and no false alarm.

With ``--data`` the cases of ``tests/test_slow_cells_data.py`` instead: a torch dataset used
directly, arrays inside a dict, a counted while loop, a comprehension over range, and a Keras fit on
a tf.data pipeline where TensorFlow imports (each with its clean twin), and their traps.

    python benchmarks/slow_cells.py [--budget 3] [--no-torch] [--data]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel, start_test_kernel, stop_test_kernel
from tests.slow_cells_util import (
    CASES,
    SETUP,
    TORCH_CASE,
    TORCH_SETUP,
    TRAP_SLOW,
    TRAPS,
    Case,
    Trap,
    truth,
)


def _verdict(p: Prediction) -> str:
    text = f"{p.certainty} {p.exception} at line {(p.line or 0) + 1}: {p.message}" if p.crash else p.message
    return text if len(text) <= 150 else text[:149] + "…"


async def _crane(
    connection_file: str, cells: dict[str, str], budget: float
) -> dict[str, tuple[Prediction, float]]:
    settings = Settings(dry_run="on", dry_run_budget_s=budget)
    out = {}
    async with await KernelLink.connect(connection_file) as link:
        pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
        for name, cell in cells.items():
            started = time.perf_counter()
            prediction = (await pipeline.predict(cell, layers={"dryrun"})).prediction
            out[name] = (prediction, time.perf_counter() - started)
    return out


def _data_set(kernel: TestKernel) -> tuple[dict[str, str], list[Case], list[tuple[Trap, str]]]:
    """The cells of ``tests/test_slow_cells_data.py``, set up in ``kernel``; their truth is run later."""
    from tests import test_slow_cells_data as data

    kernel.run(data.SETUP, timeout=900)
    if data.HAS_TF:
        kernel.run(data.TF_SETUP, timeout=900)
    cells: dict[str, str] = {}
    for case in data.ALL_CASES:
        cells[f"{case.name}: crash"] = case.slow + case.crash
        cells[f"{case.name}: clean twin"] = case.slow + case.clean
    for trap, slow in data.TRAPS:
        cells[f"trap: {trap.name}"] = slow + trap.tail
    return cells, data.ALL_CASES, data.TRAPS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=3.0, help="the dry run's budget (s)")
    parser.add_argument("--no-torch", action="store_true", help="leave the torch case out")
    parser.add_argument("--data", action="store_true", help="datasets, containers, while loops, tf.data")
    args = parser.parse_args()
    console = Console(width=240)
    with_torch = not args.no_torch and importlib.util.find_spec("torch") is not None
    cases = [*CASES, *([TORCH_CASE] if with_torch else [])]
    kernel = start_test_kernel(tempfile.mkdtemp(prefix="slow-cells-"))
    try:
        console.print("setting up (the work is calibrated to this machine) ...")
        cells: dict[str, str] = {}
        real: dict[str, tuple[float, str]] = {}
        data_traps: list[tuple[Trap, str]] = []
        if args.data:
            cells, cases, data_traps = _data_set(kernel)
        else:
            kernel.run(SETUP, timeout=900)
            if with_torch:
                kernel.run(TORCH_SETUP, timeout=900)
            for case in cases:
                cells[f"{case.name}: crash"] = case.slow + case.crash
                cells[f"{case.name}: clean twin"] = case.slow + case.clean
            for trap in TRAPS:
                cells[f"trap: {trap.name}"] = TRAP_SLOW + trap.tail
        said = asyncio.run(_crane(kernel.connection_file, cells, args.budget))
        for case in cases:
            console.print(f"running {case.name} for real ...")
            found = truth(kernel, case.slow, {"crash": case.crash, "clean": case.clean})
            real[f"{case.name}: crash"] = (found.slow_s, found.raised["crash"] or "runs clean")
            real[f"{case.name}: clean twin"] = (found.slow_s, found.raised["clean"] or "runs clean")
        if args.data:
            for trap, slow in data_traps:
                found = truth(kernel, "pass", {"whole": slow + trap.tail})
                real[f"trap: {trap.name}"] = (0.0, found.raised["whole"] or "runs clean")
        else:
            found = truth(kernel, TRAP_SLOW, {t.name: t.tail for t in TRAPS})
            for trap in TRAPS:
                real[f"trap: {trap.name}"] = (found.slow_s, found.raised[trap.name] or "runs clean")
    finally:
        stop_test_kernel(kernel)
    table = Table(title=f"slow cells: shortened dry run, budget {args.budget:g} s")
    for column in ("cell", "real run", "really", "crane's verdict in", "crane's verdict", "right"):
        table.add_column(column)
    false_alarms = misses = 0
    for name, (prediction, took) in said.items():
        slow_s, really = real[name]
        crashes = really != "runs clean"
        right = prediction.crash == crashes and (not crashes or prediction.exception == really)
        false_alarms += prediction.crash and not crashes
        misses += crashes and not prediction.crash
        shown = f"{slow_s:.1f} s" if not name.startswith("trap: ") or not args.data else "-"
        table.add_row(name, shown, really, f"{took:.2f} s", _verdict(prediction), "yes" if right else "NO")
    console.print(table)
    crashes_in_all = sum(r[1] != "runs clean" for r in real.values())
    console.print(f"false alarms: {false_alarms}; crashes missed: {misses} of {crashes_in_all}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
