"""How the jail's outcomes reach the user, through the REAL link and pipeline and the CLI's JSON.

A timeout is never "no certain crash found": the headline says the dry run did not finish in N s;
an explicit Re-check waits longer (``dryRunRecheckBudget``) and observes a crash after 3 s of work;
a blocked operation and a cell that ends the kernel say so up front; ``on`` gets the same jail as
``safe`` (a delete the screen does not see is still stopped).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from conftest import TestKernel

from crane_lsp import cli
from crane_lsp.commands.render import verdict_text
from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.server.presentation import hover_markdown
from crane_lsp.settings import Settings

SLOW_CRASH = "import time\ntime.sleep(3.5)\n1 / 0"


def _pipeline(link: KernelLink, mode: str = "safe", budget: float = 1.0, recheck: float = 8.0) -> Pipeline:
    settings = Settings(dry_run=mode, dry_run_budget_s=budget, dry_run_recheck_budget_s=recheck)  # type: ignore[arg-type,call-arg]
    return Pipeline(settings, link=link, dryrun=DryRunner(link, settings))


async def test_timeout_headline_and_longer_recheck(kernel: TestKernel) -> None:
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = _pipeline(link)
        typing = (await pipeline.predict(SLOW_CRASH, layers={"dryrun"})).prediction
        rechecked = (await pipeline.predict(SLOW_CRASH, layers={"dryrun"}, bypass_cache=True)).prediction
    assert not typing.crash and (typing.verdict, typing.no_verdict) == ("no-verdict", "timeout")
    assert typing.message == "no verdict: the dry run did not finish in 1 s"
    assert "did not finish in 1 s" in str(verdict_text(typing))
    assert hover_markdown(typing).startswith("**crane: no verdict: the dry run did not finish in 1 s**")
    assert rechecked.crash and rechecked.exception == "ZeroDivisionError" and rechecked.line == 2


async def test_blocked_and_exits_say_so(kernel: TestKernel, tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    target.write_bytes(b"kept")
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = _pipeline(link, mode="on", budget=3.0)
        # the screen does not see through getattr; the jail does not need to
        blocked = (
            await pipeline.predict(
                f"import os\nw = getattr(os, 'remove')\nw({str(target)!r})", layers={"dryrun"}
            )
        ).prediction
        ends = (await pipeline.predict("import os\nos._exit(1)", layers={"dryrun"})).prediction
        clean = (await pipeline.predict("vk_total = sum(range(10))", layers={"dryrun"})).prediction
        raised = (await pipeline.predict("vk_d = {'a': 1}\nvk_d['b']", layers={"dryrun"})).prediction
    # the kind of answer is a field: clean (the whole cell ran), a crash with the library's own message
    assert (clean.verdict, clean.no_verdict, clean.crash) == ("clean", None, False), clean
    assert raised.verdict == "crash" and raised.raw_message == "'b'", raised
    assert not blocked.crash and blocked.message.startswith(
        "no verdict: the dry run was stopped (deletes a file or folder"
    )
    assert (blocked.verdict, blocked.no_verdict) == ("no-verdict", "blocked")
    assert (ends.verdict, ends.no_verdict) == ("no-verdict", "ends-kernel")
    assert target.read_bytes() == b"kept"
    assert (
        ends.message.startswith("the dry run saw the cell end the kernel") and "os._exit(1)" in ends.message
    )
    assert kernel.eval("1 + 1") == "2"


def test_check_json_reports_the_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notebook = tmp_path / "slow.py"
    notebook.write_text("# %%\nimport time\n\n# %%\ntime.sleep(5)\nint('x')\n")
    code = cli.main(
        [
            "check",
            str(notebook),
            "--cell",
            "2",
            "--json",
            "--dry-run",
            "on",
            "--predictors",
            "dryrun",
            "--provider",
            "none",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert "did not finish in 3 s" in out[0]["message"], out
    assert (out[0]["verdict"], out[0]["no_verdict"]) == ("no-verdict", "timeout"), out


async def test_a_kernel_that_dies_during_the_dry_run_is_reported(fresh_kernel: TestKernel) -> None:
    pid = int(fresh_kernel.eval("__import__('os').getpid()"))
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        pipeline = _pipeline(link, mode="on", budget=20.0)
        task = asyncio.create_task(pipeline.predict("import time\ntime.sleep(15)", layers={"dryrun"}))
        await asyncio.sleep(2.0)  # the dry run is under way
        os.kill(pid, signal.SIGKILL)
        prediction = (await asyncio.wait_for(task, 60)).prediction
    assert (prediction.verdict, prediction.no_verdict) == ("no-verdict", "unavailable"), prediction
    assert prediction.message == "no verdict: the kernel died during the dry run", prediction
