"""``crane.previewCell`` through the real server (issue 37): a notebook's code cell, by its 1-based
position, tried in the dry run's jailed copy of the notebook's real kernel: the answer's shape, the
change in words, the kernel untouched, and each refusal in one line."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, end_session, open_script, start, wait_status

pytestmark = pytest.mark.timeout(90)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def _preview(client: LanguageClient, *arguments: Any) -> dict[str, Any]:
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.previewCell", arguments=list(arguments))
    )
    assert isinstance(answer, dict), answer
    return answer


async def test_preview_cell_answers_what_the_cell_would_do_and_leaves_the_kernel_alone(
    client: LanguageClient, kernel: TestKernel
) -> None:
    kernel.run("import pandas as pd\nps_df = pd.DataFrame({'a': [1.0, 2.0], 'b': [4.0, 8.0]})")
    statuses = await start(client, {"debounce": 200, "dryRun": "on", "dryRunRecheckBudget": 5})
    added = "ps_df['ratio'] = ps_df.a / ps_df.b\nprint('rows', len(ps_df))\nps_df.ratio.tolist()"
    nb = Notebook(client, [("ps_df = pd.DataFrame({'a': [1.0, 2.0], 'b': [4.0, 8.0]})", 1), (added, None)])
    nb.open()
    assert (await _preview(client, {"uri": nb.uri, "cell": 2})) == {"error": "no kernel attached"}
    nb.attach(kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    count = kernel.eval("get_ipython().execution_count")
    answer = await _preview(client, {"uri": nb.uri, "cell": 2})
    assert answer == {
        "stdout": "rows 2\n",
        "result": "[0.25, 0.25]",
        "diff": [{"name": "ps_df", "change": "adds column `ratio` to `ps_df`"}],
        "verdict": "ran clean",
        "outcome": "completed",
        "cell": 2,
    }, answer
    crash = await _preview(client, nb.uri, 1)  # positional arguments, as a code action sends them
    assert crash["verdict"] == "ran clean" and crash["diff"][0]["change"].startswith("rebinds `ps_df`")
    nb.edit(0, "ps_gone = 1\nps_df.pop('b')\nps_df['zz']")
    crash = await _preview(client, {"uri": nb.uri, "cell": 1})
    assert crash["verdict"] == "raised KeyError at line 3: 'zz'" and crash["line"] == 3, crash
    assert [row["change"] for row in crash["diff"]] == ["creates `ps_gone`", "drops column `b` from `ps_df`"]
    assert kernel.eval("list(ps_df.columns), 'ps_gone' in dir()") == "(['a', 'b'], False)"
    assert kernel.eval("get_ipython().execution_count") == count

    for arguments, error in [
        ({"uri": nb.uri, "cell": 3}, "no code cell 3 (the notebook has 2)"),
        ({"uri": "file:///tmp/nowhere.ipynb", "cell": 1}, "no such notebook"),
    ]:
        assert await _preview(client, arguments) == {"error": error}
    by_uri = await _preview(client, {"uri": nb.cell_uris[1]})  # the cell under the cursor (VS Code)
    assert by_uri["cell"] == 2 and by_uri["result"] == "[0.25, 0.25]", by_uri
    for arguments in ({"uri": nb.uri, "cell": 0}, {"cell": 1}, {"uri": nb.uri, "cell": "two"}):
        assert (await _preview(client, arguments))["error"].startswith("bad arguments: "), arguments


async def test_preview_of_a_percent_script_cell_and_with_the_dry_run_off(
    client: LanguageClient, kernel: TestKernel
) -> None:
    statuses = await start(client, {"debounce": 200, "dryRun": "off"})
    uri = "file:///tmp/crane-tests/preview_script.py"
    open_script(client, uri, "# %%\nps_n = 1\n# %%\nps_n += 1\nps_n\n", kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    answer = await _preview(client, {"uri": uri, "cell": 2})
    assert answer == {"error": "the dry run is off (the crane.dryRun setting)"}
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"crane": {"dryRun": "on"}})
    )
    kernel.run("ps_n = 1")
    answer = {}
    for _ in range(50):  # the setting reaches the server
        answer = await _preview(client, {"uri": uri, "cell": 2})
        if "error" not in answer:
            break
        await asyncio.sleep(0.1)
    assert answer["result"] == "2" and answer["diff"] == [{"name": "ps_n", "change": "rebinds `ps_n`"}], (
        answer
    )
    assert kernel.eval("ps_n") == "1"
