"""A check's finding after a line that may raise is a Warning "raises at line k if reached" in the
editor too, and a dry run that gives no verdict (here: it runs out of time) does not withdraw it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, end_session, has, open_script, start, wait_for

pytestmark = pytest.mark.timeout(120)

BUDGET_S = 1.0


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_if_reached_warning_survives_a_dry_run_without_verdict(
    client: LanguageClient, kernel: TestKernel
) -> None:
    await start(client, {"debounce": 100, "dryRun": "on", "dryRunBudget": BUDGET_S})
    uri = "file:///tmp/crane-tests/reach.py"
    text = "# %%\nimport time\ntime.sleep(30)\nsrv_reach_undefined + 1\n"
    open_script(client, uri, text, kernel.connection_file)
    diags = await wait_for(client, uri, has("NameError", line=3))
    (found,) = [d for d in diags if d.code == "NameError"]
    assert found.severity == types.DiagnosticSeverity.Warning and "if reached" in found.message
    await asyncio.sleep(BUDGET_S + 4)  # the dry run times out and its empty answer arrives
    assert has("NameError", line=3)(client.diagnostics.get(uri) or []), client.diagnostics.get(uri)
