"""The shortened dry run on real slow cells in a real kernel, through the real link and pipeline.

Each crash case runs 20 s or more in full and then really crashes (proved once, for real, in the
same kernel after the dry runs: ``truth``); within the typing budget (3 s) crane observes the crash
on its line in a shortened run and says what was shortened, and the clean twin gets no squiggle
("no crash seen in a shortened run", never "ran clean"). Each trap runs clean in full (proved for
real) though a shortened run could crash for it: it gets no squiggle. The kernel's state is the
same before and after the dry runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel, start_test_kernel, stop_test_kernel
from tests.slow_cells_util import (
    CASES,
    SETUP,
    SLOW_FLOOR_S,
    TORCH_CASE,
    TORCH_SETUP,
    TRAP_SLOW,
    TRAPS,
    Case,
    Truth,
    truth,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # the truth: 20 s+ of real work per case
BUDGET_S = 3.0
HAS_TORCH = importlib.util.find_spec("torch") is not None
ALL_CASES = [*CASES, *([TORCH_CASE] if HAS_TORCH else [])]
STATE = "sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count"


@dataclass
class Seen:
    """What crane said about each cell (and how long it took), and what really happened."""

    said: dict[str, Prediction] = field(default_factory=dict)
    took_s: dict[str, float] = field(default_factory=dict)
    truths: dict[str, Truth] = field(default_factory=dict)
    state_before: str = ""
    state_after: str = ""


async def _verdicts(
    kernel: TestKernel, cells: dict[str, str]
) -> tuple[dict[str, Prediction], dict[str, float]]:
    settings = Settings(dry_run="on", dry_run_budget_s=BUDGET_S)
    said, took = {}, {}
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
        for name, cell in cells.items():
            started = time.perf_counter()
            said[name] = (await pipeline.predict(cell, layers={"dryrun"})).prediction
            took[name] = time.perf_counter() - started
    return said, took


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    kernel = start_test_kernel(tmp_path_factory.mktemp("slow-cells"))
    try:
        kernel.run(SETUP, timeout=600)
        if HAS_TORCH:
            kernel.run(TORCH_SETUP, timeout=600)
        cells = {}
        for case in ALL_CASES:
            cells[f"{case.name}: crash"] = case.slow + case.crash
            cells[f"{case.name}: clean"] = case.slow + case.clean
        for trap in TRAPS:
            cells[f"trap: {trap.name}"] = TRAP_SLOW + trap.tail
        result = Seen(state_before=kernel.eval(STATE))
        result.said, result.took_s = asyncio.run(_verdicts(kernel, cells))
        result.state_after = kernel.eval(STATE, timeout=180)  # a busy machine: its message says why
        for case in ALL_CASES:  # the truth, once per case: the slow part for real, then each ending
            result.truths[case.name] = truth(kernel, case.slow, {"crash": case.crash, "clean": case.clean})
        result.truths["traps"] = truth(kernel, TRAP_SLOW, {t.name: t.tail for t in TRAPS})
        yield result
    finally:
        stop_test_kernel(kernel)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_crash_after_slow_work_is_observed_in_a_shortened_run(seen: Seen, case: Case) -> None:
    real = seen.truths[case.name]
    assert real.slow_s >= SLOW_FLOOR_S, f"the slow part ran only {real.slow_s:.1f} s for real"
    assert real.raised["crash"] == case.exception  # the truth: it really crashes so
    said = seen.said[f"{case.name}: crash"]
    assert said.crash and said.certainty == "observed", (said.message, said.notes)
    assert said.exception == case.exception
    assert said.line == case.line - 1
    assert "in a shortened run:" in said.message and " of " in said.message
    assert said.evidence and said.evidence[0].fact == "shortened dry run"
    assert any(n.startswith("full dry run: did not finish in 3 s") for n in said.notes)
    raised = f"raised {case.exception} at line {case.line} in "
    assert any(n.startswith("shortened run 2 (") and raised in n for n in said.notes), said.notes
    assert seen.took_s[f"{case.name}: crash"] < BUDGET_S + 1.0  # the verdict comes within the budget


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_clean_twin_gets_no_squiggle(seen: Seen, case: Case) -> None:
    assert seen.truths[case.name].raised["clean"] is None  # the truth: the twin runs clean
    said = seen.said[f"{case.name}: clean"]
    assert not said.crash
    assert said.message.startswith("no crash seen in a shortened run ("), said.message
    assert "ran clean" not in said.message


@pytest.mark.parametrize("trap", TRAPS, ids=lambda t: t.name)
def test_trap_gets_no_invented_crash(seen: Seen, trap: object) -> None:
    name = trap.name  # type: ignore[attr-defined]
    assert seen.truths["traps"].raised[name] is None, "the trap must really run clean"
    said = seen.said[f"trap: {name}"]
    assert not said.crash, (said.message, said.notes)
    assert said.message.startswith(("no crash seen in a shortened run", "no verdict:")), said.message


def test_trap_prefix_is_slower_than_the_budget(seen: Seen) -> None:
    assert seen.truths["traps"].slow_s > BUDGET_S


def test_kernel_state_unchanged_by_the_shortened_runs(seen: Seen) -> None:
    assert seen.state_after == seen.state_before
