"""One pass down: a prediction reads the target cell once, and the dry-run layer screens the facts
the ``Ask`` carries instead of analysing the cell again (issue 28). A REAL kernel and pipeline; the
analysis functions are wrapped only to count their calls on the target."""

from __future__ import annotations

import ast
import collections
from collections.abc import Callable
from typing import Any

import pytest

import crane_lsp.analysis.origins
import crane_lsp.dryrun.runner
import crane_lsp.dryrun.screen
from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from tests.conftest import TestKernel

SETUP = "import pandas as pd\none_pass_df = pd.DataFrame({'units': [1, 2, 3]})"
FAILING = "total = one_pass_df['units'].sum()\none_pass_df['Units']"


def _counting(counts: collections.Counter[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(source: str, *args: Any, **kwargs: Any) -> Any:
        if source == FAILING:
            counts[name] += 1
        return real(source, *args, **kwargs)

    return wrapper


async def test_a_safe_mode_predict_analyses_the_target_once(
    kernel: TestKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel.run(SETUP)
    counts: collections.Counter[str] = collections.Counter()
    for module in (crane_lsp.dryrun.runner, crane_lsp.dryrun.screen, crane_lsp.analysis.origins):
        for name in ("analyze", "analyze_whole"):
            if hasattr(module, name):  # each module that reads a cell, by the names it imported
                monkeypatch.setattr(module, name, _counting(counts, name, getattr(module, name)))
    crane_lsp.analysis.origins.analyze_cached.cache_clear()  # an earlier test may have read the same text
    settings = Settings(dry_run="safe", dry_run_budget_s=3.0)
    async with await KernelLink.connect(kernel.connection_file) as link:
        run = await Pipeline(settings, link=link, dryrun=DryRunner(link, settings)).predict(
            FAILING, layers={"dryrun"}
        )
    assert run.prediction.exception == "KeyError" and run.prediction.source.layer == "dryrun"
    assert counts == {"analyze": 1}  # the pipeline's read; the dry run screened the Ask's facts


async def test_the_screen_walks_the_analysis_tree_of_an_ipython_cell(
    kernel: TestKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell escape is screened out in the tree the pipeline's analysis parsed: one parse of the
    IPython-transformed text in the whole prediction."""
    cell = "one_pass_n = 1\n!echo one-pass"
    parses: list[str] = []
    real_parse = ast.parse

    def counting_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str) and "echo one-pass" in source and "get_ipython()" in source:
            parses.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    crane_lsp.analysis.origins.analyze_cached.cache_clear()
    settings = Settings(dry_run="safe", dry_run_budget_s=3.0)
    async with await KernelLink.connect(kernel.connection_file) as link:
        run = await Pipeline(settings, link=link, dryrun=DryRunner(link, settings)).predict(
            cell, layers={"dryrun"}
        )
    assert "not dry-run (runs a shell command: !echo one-pass)" in run.prediction.notes, run.prediction.notes
    assert len(parses) == 1
