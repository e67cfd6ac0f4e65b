"""The contract the VS Code extension relies on, replayed against a real ``crane-lsp serve`` and kernel.

Every message here comes from ``vscode-client/test/fixtures/contract.json``, which the extension's own
tests pin to its source (``vscode-client/test/contract.test.ts``): the server arguments, the
initialization options for default settings, the ``crane/attachKernel`` parameter names, the code the
extension runs in the kernel to learn its connection file, the configuration-change payload and the
command arguments. If either side drifts, one of the two suites fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from crane_lsp.server.config import plain
from tests.conftest import TestKernel
from tests.server_client import SERVER_ENV, Notebook, capabilities, end_session, has, wait_for, wait_status

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[1]
CONTRACT: dict[str, Any] = json.loads((REPO / "vscode-client/test/fixtures/contract.json").read_text())
CONFIG = ClientServerConfig(server_command=[sys.executable, *CONTRACT["serverArgs"]], server_env=SERVER_ENV)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    statuses: list[dict[str, Any]] = []
    lsp_client.feature(CONTRACT["statusNotification"])(lambda params: statuses.append(plain(params)))
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(), initialization_options=CONTRACT["initializationOptions"]
        )
    )
    lsp_client.statuses = statuses  # type: ignore[attr-defined]
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


def connection_file_as_the_extension_reads_it(kernel: TestKernel) -> str:
    """Runs the extension's code in the kernel and reads the marker from stdout, as the extension does."""
    stdout: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            stdout.append(msg["content"]["text"])

    reply = kernel.client.execute_interactive(CONTRACT["connectionFileCode"], timeout=60, output_hook=hook)
    assert reply["content"]["status"] == "ok"
    line = next(ln for ln in "".join(stdout).splitlines() if CONTRACT["connectionFileMarker"] in ln)
    return json.loads(line)[CONTRACT["connectionFileMarker"]]


def notebook_types(sync: Any) -> set[str]:
    found: set[str] = set()
    for selector in getattr(sync, "notebook_selector", None) or []:
        notebook = getattr(selector, "notebook", None)
        found.add(notebook if isinstance(notebook, str) else getattr(notebook, "notebook_type", None) or "*")
    return found


async def test_server_provides_what_the_extension_routes(client: LanguageClient) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    commands = set(caps.execute_command_provider.commands)
    assert set(CONTRACT["serverCommands"]) <= commands
    types_synced = notebook_types(caps.notebook_document_sync)
    assert "*" in types_synced or set(CONTRACT["notebookTypes"]) <= types_synced
    await wait_status(client.statuses, lambda s: "kernel" in s)  # type: ignore[attr-defined]


def test_the_extension_code_finds_the_connection_file_and_leaves_no_names(kernel: TestKernel) -> None:
    names = "sorted(k for k in globals() if not k.startswith('_'))"
    before = kernel.eval(names)
    assert connection_file_as_the_extension_reads_it(kernel) == kernel.connection_file
    assert kernel.eval(names) == before


async def test_attach_kernel_as_the_extension_does_then_diagnostics(
    client: LanguageClient, kernel: TestKernel
) -> None:
    kernel.run("import pandas as pd\nvsc_df = pd.DataFrame({'a': [1, 2]})")
    nb = Notebook(client, [("import pandas as pd\nvsc_df = pd.DataFrame({'a': [1, 2]})", 1), ("", None)])
    nb.open()
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=CONTRACT["didChangeConfiguration"]["settings"])
    )
    values = {"notebookUri": nb.uri, "connectionFile": connection_file_as_the_extension_reads_it(kernel)}
    params = {name: values[name] for name in CONTRACT["attachKernel"]["paramNames"]}
    client.protocol.notify(CONTRACT["attachKernel"]["method"], params)
    statuses = client.statuses  # type: ignore[attr-defined]
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))

    nb.edit(1, "print(vsc_df.shape)\nprint(vsc_not_defined)\n")
    await wait_for(client, nb.cell_uris[1], has("NameError", line=1))

    # "crane: Re-check cell" / "crane: Show last prompt" from the palette: the cell URI as the only argument
    recheck, _attach, show_prompt = CONTRACT["serverCommands"][:3]
    rechecked = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=recheck, arguments=[nb.cell_uris[1]])
    )
    assert rechecked["checked"] and rechecked["prediction"]["exception"] == "NameError"
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=show_prompt, arguments=[nb.cell_uris[1]])
    )
    assert shown is None  # provider "none": no LLM exchange to show

    # the run guard: the verdict for the cell's text as the editor shows it holds the run; for any
    # other text (an edit the server has not seen yet) it does not
    guard = CONTRACT["cellVerdict"]
    shown_text = "print(vsc_df.shape)\nprint(vsc_not_defined)\n"
    for text, blocks in ((shown_text, True), ("print(vsc_df.shape)\n", False)):
        values = {"uri": nb.cell_uris[1], "cell": nb.cell_uris[1], "text": text}
        argument = {name: values[name] for name in guard["argumentNames"]}
        verdict = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=guard["command"], arguments=[argument])
        )
        assert verdict[guard["blockField"]] is blocks and verdict["exception"] == "NameError", verdict
        assert verdict["stale"] is not blocks and verdict["line"] == 1, verdict
        assert verdict["question"].startswith("crane: this cell raises NameError at line 2 ("), verdict

    nb.edit(1, "print(vsc_df.shape)\n")
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)
