"""Verified fixes through the REAL pipeline and dry run, on a real kernel: each candidate is applied to
the cell and dry-run from the kernel's state; runs-clean is offered as verified, gets-further marked,
same-crash and does-less dropped (the notes count them); the kernel is left as it was."""

from __future__ import annotations

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.fixes import offer_fixes
from crane_lsp.fixes.edit import apply
from crane_lsp.fixes.verify import verify_one
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.prediction import Fix, Prediction
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

pytestmark = pytest.mark.timeout(180)

SETUP = (
    "import numpy as np\nimport pandas as pd\n"
    "fx_df = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})\n"
    "fx_w = np.ones((3, 4))\nfx_x = np.ones((3, 5))"
)
STATE = (
    "(sorted(k for k in globals() if k.startswith('fx_')), fx_df.columns.tolist(),"
    " get_ipython().execution_count)"
)


@pytest.fixture(scope="module")
def prepared(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    return kernel


def _settings() -> Settings:
    return Settings(dry_run="on", dry_run_budget_s=5.0)


async def _predict(link: KernelLink, cell: str, layers: set[str]) -> tuple[Prediction, DryRunner]:
    settings = _settings()
    runner = DryRunner(link, settings)
    pipeline = Pipeline(settings, link=link, dryrun=runner)
    run = await pipeline.predict(cell, layers=layers)  # type: ignore[arg-type]
    return run.prediction, runner


async def test_missing_column_check_fix_runs_clean(prepared: TestKernel) -> None:
    cell = "by_region = fx_df.groupby('Region')['units'].sum()\ntop = by_region.max()"
    before = prepared.eval(STATE)
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"checks"})
        assert prediction.certainty == "certain" and prediction.fix is not None
        fixed = await offer_fixes(runner, cell, prediction)
    assert fixed.fixes, fixed.notes
    top = fixed.fixes[0]
    assert top.layer == "check" and top.title == "Use 'region'"
    assert top.verification is not None and top.verification.outcome == "runs-clean"
    assert any("binds by_region, top" in n for n in top.verification.notes), top.verification.notes
    assert fixed.fix == top and top.new_text == "by_region = fx_df.groupby('region')['units'].sum()"
    # the truth: the fixed cell really runs (in the user's kernel, on purpose, after the checks)
    edited = apply(cell, top)
    assert edited is not None
    assert prepared.eval(STATE) == before  # verification left no trace
    assert prepared.run(edited)["status"] == "ok"


async def test_observed_matmul_gets_a_transpose_that_runs_clean(prepared: TestKernel) -> None:
    cell = "fx_prod = fx_w @ fx_x\nfx_total = fx_prod.sum()"
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"dryrun"})
        assert prediction.certainty == "observed" and prediction.line == 0
        fixed = await offer_fixes(runner, cell, prediction)
    assert fixed.fix is not None and fixed.fix.verified(), fixed.notes
    assert fixed.fix.layer == "dryrun-facts"
    assert fixed.fix.new_text == "fx_prod = fx_w.T @ fx_x"


async def test_same_crash_is_dropped_and_counted(prepared: TestKernel) -> None:
    cell = "fx_prod = fx_w @ fx_x\nfx_total = fx_prod.sum()"
    useless = Fix(
        description="d", start_line=0, end_line=1, new_text="fx_prod = fx_w @ (fx_x * 2)", layer="llm"
    )
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"dryrun"})
        checked = await verify_one(runner, cell, prediction, useless, explicit=False)
        assert checked.verification is not None and checked.verification.outcome == "same-crash"
        prediction.fix = useless
        fixed = await offer_fixes(runner, cell, prediction, limit=1)
    assert fixed.fixes == [] and fixed.fix is None
    assert any("1 dropped (1 same crash)" in n for n in fixed.notes), fixed.notes


async def test_a_fix_that_does_less_is_refused_without_a_dry_run(prepared: TestKernel) -> None:
    cell = "fx_prod = fx_w @ fx_x\nfx_total = fx_prod.sum()"
    wrapped = "try:\n    fx_prod = fx_w @ fx_x\nexcept ValueError:\n    pass"
    cases = {
        "wraps the failing code in try/except": Fix(
            description="d", start_line=0, end_line=1, new_text=wrapped
        ),
        "removes or comments out the failing call": Fix(
            description="d", start_line=0, end_line=1, new_text="fx_prod = fx_w  # @ fx_x"
        ),
        "no longer binds fx_total": Fix(
            description="d", start_line=0, end_line=2, new_text="fx_prod = fx_w.T @ fx_x"
        ),
    }
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"dryrun"})
        for why, fix in cases.items():
            checked = await verify_one(runner, cell, prediction, fix, explicit=False)
            v = checked.verification
            assert v is not None and v.outcome == "no-verdict" and why in v.notes[0], (why, v)


async def test_gets_further_is_offered_marked(prepared: TestKernel) -> None:
    cell = "fx_prod = fx_w @ fx_x\nfx_total = fx_prod.sum()\nfx_df['nope']"
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"dryrun"})
        fixed = await offer_fixes(runner, cell, prediction)
    assert fixed.fix is not None, fixed.notes
    v = fixed.fix.verification
    assert v is not None and v.outcome == "gets-further" and v.line == 2 and v.exception == "KeyError"
    assert "line 1 now passes; line 3 raises KeyError" in v.notes[0]


def test_dropping_an_argument_is_a_repair_only_when_python_refused_the_binding() -> None:
    """Python's binding rule says the call has one argument too many: dropping one whole argument is
    then the repair; any other crash keeps the rule that a fix has no fewer operations."""
    from crane_lsp.fixes.guard import does_less, rejects_binding

    call = "plt.scatter(c[:, 0], c[:, 1], c[:, 2], marker='X', s=200)"
    dropped = "plt.scatter(c[:, 0], c[:, 1], marker='X', s=200)"
    assert rejects_binding("TypeError", "scatter() got multiple values for argument 's'")
    assert not rejects_binding("ValueError", "got multiple values for argument 's'")
    assert does_less(call, dropped, 0, binding=True).refused == ""
    assert does_less(call, dropped, 0).refused  # the same edit for another crash does less
    # a dropped subscript that is not a whole argument is still less work, binding or not
    assert does_less("t = df['gone'].sum()", "t = df.sum()", 0, binding=True).refused


async def test_a_fix_that_runs_clean_but_leaves_a_name_unbound_does_less(prepared: TestKernel) -> None:
    """The static guard sees ``fx_sum`` still assigned; the run in the child shows it never is (the
    branch is never taken): a fix that binds less than the original would is refused after its run."""
    cell = "fx_sum = fx_df['unit'].sum()\nfx_mean = fx_df['units'].mean()"
    hidden = Fix(
        description="d", start_line=0, end_line=1, new_text="if False: fx_sum = fx_df['units'].sum()"
    )
    honest = Fix(description="d", start_line=0, end_line=1, new_text="fx_sum = fx_df['units'].sum()")
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction, runner = await _predict(link, cell, {"dryrun"})
        refused = (await verify_one(runner, cell, prediction, hidden, explicit=False)).verification
        kept = (await verify_one(runner, cell, prediction, honest, explicit=False)).verification
    assert refused is not None and refused.outcome == "no-verdict", refused
    assert refused.notes[0] == "does less: the run left fx_sum unbound", refused
    assert kept is not None and kept.outcome == "runs-clean" and "bound after the run" in kept.notes[-1], kept
    assert "fx_sum" not in prepared.eval("sorted(k for k in globals() if k.startswith('fx_'))")
