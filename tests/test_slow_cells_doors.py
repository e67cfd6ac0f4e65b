"""Both front doors give a slow cell its shortened verdict: the server (while typing, and on
"Re-check cell" with its longer budget, through a real pytest-lsp client and a real kernel) and
``crane-lsp check --dry-run-budget`` (``--json`` says which run observed what).

The cell loops over 100,000 groups, three reductions each (12 s in full on an idle machine, more than
twice the Re-check budget: at one reduction an idle machine finished it within 5 s and the full run, rightly,
observed the crash itself) and then crashes; the truth is proved once, for real, at the end of the
server test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from crane_lsp import cli
from tests.conftest import TestKernel
from tests.server_client import CONFIG, end_session, has, open_script, start, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = (
    "import numpy as np, pandas as pd\n"
    "_g = np.random.default_rng(0)\n"
    "sd_df = pd.DataFrame({'user': _g.integers(0, 100_000, 300_000), 'amount': _g.random(300_000)})\n"
)
SLOW = (
    "sd_stats = {}\n"
    "for user, part in sd_df.groupby('user'):\n"
    "    sd_stats[user] = (part['amount'].sum() - part['amount'].min() - part['amount'].max()) / len(part)\n"
    "sd_top = pd.Series(sd_stats).sort_values().tail(10).to_frame('mean').plott()\n"
)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_server_typing_and_recheck_show_the_shortened_verdict(
    client: LanguageClient, kernel: TestKernel
) -> None:
    kernel.run(SETUP)
    await start(client, {"debounce": 100, "dryRun": "on", "dryRunBudget": 3.0, "dryRunRecheckBudget": 5.0})
    uri = "file:///tmp/crane-tests/slow_cells.py"
    open_script(client, uri, "# %%\n" + SLOW, kernel.connection_file)
    diags = await wait_for(client, uri, has("AttributeError", line=4), timeout=60)
    (found,) = [d for d in diags if d.code == "AttributeError"]
    assert found.severity == types.DiagnosticSeverity.Error
    assert "in a shortened run:" in found.message and "rows (sd_df)" in found.message
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=4, character=8)
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert "full dry run: did not finish in 3 s" in text and "shortened run 2 (" in text, text
    started = time.monotonic()
    rechecked = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.recheckCell", arguments=[{"uri": uri, "line": 2}])
    )
    assert rechecked["checked"], rechecked
    prediction = rechecked["prediction"]
    assert prediction["exception"] == "AttributeError" and "in a shortened run" in prediction["message"]
    assert any("did not finish in 5 s" in n for n in prediction["notes"]), prediction["notes"]
    assert time.monotonic() - started >= 4.5  # Re-check lets the full run go on to its own budget
    # the truth, once: the whole cell, for real, runs past the budget and then raises as said
    begun = time.perf_counter()
    real = kernel.run(SLOW, allow_error=True, timeout=600)
    assert real["status"] == "error" and real["ename"] == "AttributeError"
    assert time.perf_counter() - begun > 5.0  # past the Re-check budget, for real


def test_check_dry_run_budget_json_says_which_run_observed_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "slow.py"
    script.write_text("# %%\n" + SETUP + "\n# %%\n" + SLOW)
    args = ["check", str(script), "--cell", "2", "--json", "--dry-run", "on", "--predictors", "dryrun"]
    code = cli.main([*args, "--provider", "none", "--dry-run-budget", "3"])
    (row,) = json.loads(capsys.readouterr().out)
    assert code == 1, row
    assert row["crash"] and row["exception"] == "AttributeError" and row["certainty"] == "observed"
    assert "in a shortened run:" in row["message"]
    assert any(n.startswith("shortened run 1 (263 of 300,000 rows (sd_df))") for n in row["notes"]), row
    assert row["evidence"][0]["fact"] == "shortened dry run"


def test_check_rejects_a_bad_dry_run_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "x.py"
    script.write_text("# %%\nx = 1\n")
    assert cli.main(["check", str(script), "--dry-run-budget", "0"]) == 2
    assert "dry_run_budget" in capsys.readouterr().err.replace("-", "_").lower()
