"""The LLM's fix, end to end, in a REAL kernel: the dry run observes the crash, the LLM (the real openai
SDK against a fake server on 127.0.0.1) explains it and answers with an edit, and the jail dry-runs
that edit like any candidate. A right edit is offered as verified (and really runs); a wrong one is
dropped, and the note says that the LLM's fix was tried and why it was refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.fixes import offer_fixes
from crane_lsp.fixes.edit import apply
from crane_lsp.kernel.link import KernelLink
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel
from tests.fake_llm_servers import Answer, FakeLLMServer, crash_answer

pytestmark = pytest.mark.timeout(180)

SETUP = "import pandas as pd\nfl_df = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})"
CELL = "fl_mean = fl_df.groupby('region')['units'].average()\nfl_top = fl_mean.max()"
STATE = "(sorted(k for k in globals() if k.startswith('fl_')), get_ipython().execution_count)"


@pytest.fixture(scope="module")
def prepared(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    return kernel


@pytest.fixture
def fake_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeLLMServer() as server:
        yield server
    dialects.forget()


def edit(code: str) -> dict[str, Any]:
    return crash_answer(line=1, exception="AttributeError", fix={"line": 1, "code": code, "why": "w"})


async def _fixed(
    prepared: TestKernel, server: FakeLLMServer, limit: int | None = None
) -> tuple[Prediction, Prediction]:
    """(the verdict with the LLM's edit, the verdict after its candidates were dry-run)."""
    settings = Settings.model_validate(
        {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "base_url": server.openai_url,
            "dry_run": "on",
            "dry_run_budget_s": 5.0,
        }
    )
    llm = LLMPredictor(settings)
    try:
        async with await KernelLink.connect(prepared.connection_file) as link:
            runner = DryRunner(link, settings)
            pipeline = Pipeline(settings, link=link, llm=llm, dryrun=runner)
            prediction = (await pipeline.predict(CELL, layers={"dryrun", "llm"})).prediction
            fixed = await offer_fixes(runner, CELL, prediction, limit=limit)
    finally:
        await llm.aclose()
    assert prediction.certainty == "observed" and prediction.line == 0, prediction
    assert prediction.fix is not None and prediction.fix.layer == "llm", prediction.fix
    return prediction, fixed


async def test_a_right_edit_from_the_llm_is_verified_and_really_runs(
    prepared: TestKernel, fake_llm: FakeLLMServer
) -> None:
    right = "fl_mean = fl_df.groupby('region')['units'].agg('mean')"
    fake_llm.push(Answer(edit(right)))
    before = prepared.eval(STATE)
    _, fixed = await _fixed(prepared, fake_llm)
    top = fixed.fix
    assert top is not None and top.layer == "llm" and top.new_text == right, fixed.notes
    assert top.verified() and top.title == f"Use {right}"
    assert fixed.fixes[0] == top
    # the LLM's edit ranks first; the family's own repair is dry-run beside it (parallel forks)
    assert any(n.startswith("fixes: 2 candidate(s)") and "2 offered" in n for n in fixed.notes), fixed.notes
    assert fixed.fixes[1].layer == "dryrun-facts" and fixed.fixes[1].verified()
    assert not any("LLM fix" in n for n in fixed.notes)
    assert prepared.eval(STATE) == before  # the verification left no trace in the kernel
    edited = apply(CELL, top)
    assert edited is not None and prepared.run(edited)["status"] == "ok"  # the truth: it runs


async def test_an_edit_that_crashes_the_same_way_is_dropped_and_counted(
    prepared: TestKernel, fake_llm: FakeLLMServer
) -> None:
    fake_llm.push(Answer(edit("fl_mean = fl_df.groupby('region')['units'].avg()")))
    _, fixed = await _fixed(prepared, fake_llm)
    assert all(f.layer != "llm" for f in fixed.fixes)
    note = next(n for n in fixed.notes if n.startswith("fixes:"))
    assert "1 dropped (1 same crash); 1 LLM fix dropped (same crash)" in note, note
    # the family's own repair of the crash class still runs clean and is offered
    assert fixed.fix is not None and fixed.fix.layer == "dryrun-facts" and fixed.fix.verified(), fixed.notes


async def test_an_edit_that_raises_another_error_is_not_kept_as_the_fix(
    prepared: TestKernel, fake_llm: FakeLLMServer
) -> None:
    fake_llm.push(Answer(edit("fl_mean = fl_df.groupby('region')['unit'].mean()")))
    prediction, fixed = await _fixed(prepared, fake_llm, limit=1)  # the LLM's edit alone is tried
    assert prediction.fix is not None and prediction.fix.new_text is not None
    assert fixed.fixes == [] and fixed.fix is None  # refused by the dry run: no longer suggested
    note = next(n for n in fixed.notes if n.startswith("fixes:"))
    assert note.endswith("1 LLM fix dropped (raises another error)"), note
