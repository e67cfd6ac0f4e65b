"""The dry-run layer through the REAL link and pipeline, on real kernels.

A raised exception comes back as an ``observed`` prediction on the exact (0-based) line; a clean cell
as the final "ran clean" note; ``safe`` mode screens out a cell that writes outside its files and
says why (a save is dry-run: the jail keeps the file in memory); ``off`` does
nothing; the kernel's namespace and execution count are untouched; and ``crane-lsp check`` observes
the crash of every bundled example notebook.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from crane_lsp import cli
from crane_lsp.analysis.parse import analyze
from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from tests.conftest import REPO, TestKernel

SETUP = (
    "import pandas as pd\n"
    "layer_df = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})\n"
    "layer_items = [1, 2]\n"
    "layer_counter = 0"
)
FAILING = "by_region = layer_df.groupby('region')['units'].sum()\ntotal = by_region.sum()\nlayer_df['Units']"
STATE = (
    "(layer_df.to_dict('list'), layer_items, layer_counter,"
    " sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count, len(In))"
)


@pytest.fixture(scope="module")
def prepared(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    return kernel


def _pipeline(link: KernelLink, mode: str, budget: float = 3.0) -> Pipeline:
    settings = Settings(dry_run=mode, dry_run_budget_s=budget)  # type: ignore[arg-type]
    return Pipeline(settings, link=link, dryrun=DryRunner(link, settings))


async def test_raised_is_observed_on_the_exact_line(prepared: TestKernel) -> None:
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (await _pipeline(link, "on").predict(FAILING, layers={"dryrun"})).prediction
    assert prediction.crash
    assert prediction.certainty == "observed"
    assert prediction.exception == "KeyError"
    assert prediction.line == 2  # 0-based: the third line
    assert prediction.source.layer == "dryrun"
    assert "'Units'" in prediction.message
    assert any("observed in a sandboxed copy" in n for n in prediction.notes)
    # the truth: really running the cell raises the same exception
    real = prepared.run(FAILING, allow_error=True)
    assert real["status"] == "error" and real["ename"] == "KeyError"


async def test_clean_cell_ran_clean_note(prepared: TestKernel) -> None:
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (
            await _pipeline(link, "safe").predict(
                "summary = layer_df.groupby('region')['units'].sum()\nsummary.max()", layers={"dryrun"}
            )
        ).prediction
    assert not prediction.crash
    assert prediction.certainty == "none"
    assert prediction.source.layer == "dryrun"
    assert prediction.message == "ran clean in a sandboxed copy of the kernel"
    assert any(n.startswith("ran clean in a sandboxed copy in ") for n in prediction.notes)


async def test_safe_mode_skips_a_cell_that_writes_outside_its_files(
    prepared: TestKernel, tmp_path: Path
) -> None:
    pushed = "layer_df.to_sql('sales', layer_con)\nlayer_df['nope']"
    target = tmp_path / "out.csv"
    saves = f"layer_df.to_csv({str(target)!r})\nlayer_df['nope']"
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (await _pipeline(link, "safe").predict(pushed, layers={"dryrun"})).prediction
        assert not prediction.crash and prediction.source.layer == "none"
        assert "not dry-run (writes outside its files: layer_df.to_sql())" in prediction.notes
        # a save is dry-run in both modes: the copy keeps the file in its memory and reaches the KeyError
        for mode in ("safe", "on"):
            saved = (await _pipeline(link, mode).predict(saves, layers={"dryrun"})).prediction
            assert saved.crash and saved.exception == "KeyError" and saved.line == 1, (mode, saved)
    assert not target.exists()


async def test_off_mode_does_nothing(prepared: TestKernel) -> None:
    async with await KernelLink.connect(prepared.connection_file) as link:
        settings = Settings(dry_run="off")
        runner = DryRunner(link, settings)
        assert await runner.dry_run(FAILING, analyze(FAILING)) is None
        prediction = (
            await Pipeline(settings, link=link, dryrun=runner).predict(FAILING, layers={"dryrun"})
        ).prediction
    assert not prediction.crash
    assert prediction.source.layer == "none"
    assert not any("dry" in n or "sandbox" in n for n in prediction.notes)


async def test_kernel_state_unchanged_after_dry_runs(prepared: TestKernel) -> None:
    before = prepared.eval(STATE)
    cells = [
        "layer_df['units'] = 0\nlayer_df.drop(columns=['region'], inplace=True)\nlayer_items.append(3)\n"
        "layer_counter = 99\nbrand_new = 1",
        "layer_items.clear()\nlayer_df['missing']",
        "from IPython.display import display\ndisplay(layer_df)\nprint('hello')\nlayer_df.units",
    ]
    async with await KernelLink.connect(prepared.connection_file) as link:
        pipeline = _pipeline(link, "on")
        outcomes = [(await pipeline.predict(cell, layers={"dryrun"})).prediction for cell in cells]
    assert [p.source.layer for p in outcomes] == ["dryrun", "dryrun", "dryrun"]
    assert [p.crash for p in outcomes] == [False, True, False]
    assert prepared.eval(STATE) == before
    assert "brand_new" not in before


async def test_child_output_goes_nowhere(prepared: TestKernel) -> None:
    """display(), figures and tracebacks shown by magics in the child must not reach the notebook; the
    child is cut off the kernel's sockets, and an error a magic only *shows* (``%time``) is observed."""
    kernel = prepared
    cells = [
        "from IPython.display import display\ndisplay(layer_df)\nprint('out')\nlayer_df['zz']",
        "%time layer_df['zz']",
    ]
    while kernel.client.iopub_channel.msg_ready():
        kernel.client.get_iopub_msg(timeout=1)
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = _pipeline(link, "on")
        results = [(await pipeline.predict(cell, layers={"dryrun"})).prediction for cell in cells]
        await asyncio.sleep(0.5)
    seen = []
    while kernel.client.iopub_channel.msg_ready():
        seen.append(kernel.client.get_iopub_msg(timeout=1)["msg_type"])
    assert not {"display_data", "stream", "error", "execute_result"} & set(seen), seen
    assert [(p.exception, p.line) for p in results] == [("KeyError", 3), ("KeyError", 0)]
    import IPython

    # IPython 8's %time shows the traceback and goes on; IPython 9's re-raises it (a plain raise)
    shown = any("shown by IPython" in n for n in results[1].notes)
    assert shown is (IPython.version_info[0] < 9), results[1].notes


async def test_stdin_and_cell_magic_lines(prepared: TestKernel) -> None:
    async with await KernelLink.connect(prepared.connection_file) as link:
        pipeline = _pipeline(link, "on")
        asked = (
            await pipeline.predict("name = input('who? ')\nlayer_df[name]", layers={"dryrun"})
        ).prediction
        timed = (await pipeline.predict("%%time\nx = 1\ny = layer_df['zz']", layers={"dryrun"})).prediction
    # input() would wait for a person: blocked, not an observed EOFError/StdinNotImplementedError
    assert not asked.crash
    assert any(n.startswith("dry run blocked: reads from stdin") for n in asked.notes), asked.notes
    assert (timed.crash, timed.exception, timed.line) == (True, "KeyError", 2)


async def test_a_broken_repr_shown_by_ipython_is_not_a_crash(prepared: TestKernel) -> None:
    cell = (
        "class LayerBroken:\n    def _repr_html_(self):\n        raise ValueError('bad repr')\n"
        "from IPython.display import display\ndisplay(LayerBroken())"
    )
    async with await KernelLink.connect(prepared.connection_file) as link:
        prediction = (await _pipeline(link, "on").predict(cell, layers={"dryrun"})).prediction
    assert prediction.source.layer == "dryrun" and not prediction.crash, prediction
    assert prepared.run(cell, allow_error=True)["status"] == "ok"  # the truth: IPython shows it, goes on


async def test_busy_kernel_falls_through_with_a_note(prepared: TestKernel) -> None:
    prepared.client.execute("import time\ntime.sleep(4)")
    try:
        async with await KernelLink.connect(prepared.connection_file) as link:
            await asyncio.sleep(0.3)
            prediction = (await _pipeline(link, "on").predict(FAILING, layers={"dryrun"})).prediction
    finally:
        prepared.run("pass", timeout=30)  # wait for the sleeping cell to finish
    assert not prediction.crash
    assert any(n.startswith("dry run unavailable") and "busy" in n for n in prediction.notes), (
        prediction.notes
    )


def _examples() -> list[Path]:
    return sorted((REPO / "examples").glob("*/*.ipynb"))


def _expected_exception(notebook: Path) -> tuple[str, int]:
    """From the example's first (markdown) cell: the exception class; and the last code cell (1-based)."""
    cells = json.loads(notebook.read_text())["cells"]
    intro = "".join(cells[0]["source"])
    match = re.search(r"`([A-Z]\w*(?:Error|Exception))\b", intro)
    assert match, f"{notebook.name}: the first cell names no exception"
    return match.group(1), sum(c["cell_type"] == "code" for c in cells)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", _examples(), ids=lambda p: p.parent.name)
def test_check_observes_every_bundled_example(notebook: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected, last = _expected_exception(notebook)
    status = cli.main(["check", str(notebook), "--cell", str(last), "--predictors", "dryrun", "--json"])
    out = capsys.readouterr().out
    [result] = json.loads(out)
    assert status == 1, out
    assert result["certainty"] == "observed", result
    assert result["source"] == "dryrun"
    assert result["exception"] == expected
    assert isinstance(result["line"], int) and result["line"] >= 1


def test_examples_are_found() -> None:
    assert len(_examples()) >= 5


async def test_llm_explains_an_observed_crash_without_overriding_it(
    prepared: TestKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an LLM configured, the observed exception and line stay; the model is told what was seen."""
    from crane_lsp.llm.predictor import LLMPredictor
    from tests.fake_llm_servers import Answer, FakeLLMServer, crash_answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with FakeLLMServer() as server:
        explanation = "layer_df has a 'units' column; 'Units' differs only in case."
        server.push(Answer(crash_answer(line=1, exception="TypeError", reasoning=explanation)))
        settings = Settings.model_validate(
            {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.openai_url, "dry_run": "on"}
        )
        async with await KernelLink.connect(prepared.connection_file) as link:
            pipeline = Pipeline(
                settings, link=link, llm=LLMPredictor(settings), dryrun=DryRunner(link, settings)
            )
            prediction = (await pipeline.predict(FAILING, layers={"dryrun", "llm"})).prediction
        sent = json.dumps(server.requests[-1].json)
    assert prediction.certainty == "observed"
    assert prediction.exception == "KeyError"  # the model's guess (TypeError, line 1) never replaces it
    assert prediction.line == 2
    assert explanation in prediction.diagnosis
    assert "KeyError" in sent  # the observed exception reached the prompt as a fact
