"""The dry run's wire contract (``kernel/agent/dryrun_wire.py``): the client's models carry exactly
its keys and refuse any other, and real answers from a real kernel validate against them: a raised
cell with the facts at its line, a clean one, a blocked one, one that ends the kernel, a prepared
child, and a slow cell whose full run did not finish beside its shortened runs.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from crane_lsp.dryrun import DryRunner, DryRunOutcome, DryRunPrepared
from crane_lsp.dryrun.shortened import ShortenedFacts, ShortenedRun, ShortenedRuns, ShortenedWhat, ShortenPlan
from crane_lsp.kernel.agent import dryrun_wire as wire
from crane_lsp.kernel.link import KernelLink
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

PAIRS: list[tuple[type[BaseModel], type]] = [
    (DryRunOutcome, wire.DryRunWire),
    (DryRunPrepared, wire.DryRunPreparedWire),
    (ShortenedRuns, wire.ShortenedRunsWire),
    (ShortenedRun, wire.ShortenedRunWire),
    (ShortenPlan, wire.ShortenPlanWire),
    (ShortenedFacts, wire.ShortenedFactsWire),
    (ShortenedWhat, wire.ShortenedWhatWire),
]


@pytest.mark.parametrize(("model", "shape"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_each_model_has_exactly_its_wire_keys(model: type[BaseModel], shape: type) -> None:
    assert set(model.model_fields) == set(shape.__annotations__)
    assert model.model_config.get("extra") == "forbid"


def test_outcome_names_are_one_list_on_both_sides() -> None:
    assert typing.get_args(DryRunOutcome.model_fields["outcome"].annotation) == typing.get_args(
        wire.DryRunOutcomeName
    )
    assert tuple(ShortenedRun.model_fields) == wire.SHORTENED_RUN_KEYS


def test_a_misspelt_or_unknown_key_fails_validation() -> None:
    with pytest.raises(ValidationError, match="exceptoin"):
        DryRunOutcome.model_validate({"outcome": "raised", "exceptoin": "KeyError"})
    with pytest.raises(ValidationError, match="outcome"):
        DryRunOutcome.model_validate({"outcome": "finished"})
    with pytest.raises(ValidationError, match="rowz"):
        ShortenedRun.model_validate({"outcome": "raised", "plan": {"rowz": 263}})


SLOW = (
    "import numpy as np, pandas as pd\n"
    "_g = np.random.default_rng(0)\n"
    "dw_df = pd.DataFrame({'user': _g.integers(0, 50_000, 150_000), 'amount': _g.random(150_000)})\n"
)
SLOW_CELL = (
    "dw_stats = {}\n"
    "for user, part in dw_df.groupby('user'):\n"
    "    dw_stats[user] = part['amount'].sum() - part['amount'].max()\n"
    "dw_top = pd.Series(dw_stats).sort_values().plott()\n"
)


async def test_real_answers_validate_against_the_wire(kernel: TestKernel, tmp_path: Path) -> None:
    kernel.run(SLOW + "dw_a = np.ones((2, 3))\ndw_b = np.ones((4, 5))\n")
    settings = Settings(dry_run="on", dry_run_budget_s=2.0)  # type: ignore[call-arg]
    async with await KernelLink.connect(kernel.connection_file) as link:
        runner = DryRunner(link, settings)
        prepared = DryRunPrepared.model_validate(await link.call("dry_run_prepare", {}, timeout=10))
        raised = await runner.run_outcome("dw_c = dw_a @ dw_b", False)
        clean = await runner.run_outcome("dw_d = dw_a.sum()", False)
        (tmp_path / "x.txt").write_text("kept")
        blocked = await runner.run_outcome(f"import os\nos.remove({str(tmp_path / 'x.txt')!r})", False)
        ends = await runner.run_outcome("import os\nos._exit(3)", False)
        slow = await runner.run_outcome(SLOW_CELL, False)
    assert prepared.outcome in ("prepared", "skipped"), prepared
    assert raised.outcome == "raised" and raised.facts is not None and raised.facts.values, raised
    assert raised.prepared and raised.phases_ms, raised  # the child prepared ahead ran it
    assert clean.outcome == "completed", clean
    assert blocked.outcome == "blocked" and (tmp_path / "x.txt").exists(), blocked
    assert ends.outcome == "exits", ends
    assert slow.outcome == "timeout" and slow.shortened is not None and slow.shortened.runs, slow
    first = slow.shortened.runs[0]
    assert first.plan.rows and first.shortened is not None and first.shortened.rows, first
    assert kernel.eval("len(dw_stats) if 'dw_stats' in dir() else 'unset'") == "'unset'"
