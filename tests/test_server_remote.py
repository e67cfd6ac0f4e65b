"""Kernels on a Jupyter server crane cannot see the files of: attached by URL, found by session.

A real ``jupyter server`` (127.0.0.1, a token, its own runtime dir: crane's server process runs with
another, so no ``kernel-<id>.json`` is in its reach) runs the notebook's kernel; crane reaches it only
through the server's API and token: the ``crane/attachKernel`` notification's ``kernelUrl`` with the
token in ``JUPYTER_TOKEN``, the ``connectionFile`` setting holding a URL, and ``jupyterServerUrl`` +
``jupyterToken`` (the notebook's session). Every message the server sends and every line it logs (at
DEBUG, where pygls logs each message, the settings with the token included) is captured: the token
appears in none of them. A wrong token is said once, clearly.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from jupyter_client.blocking.client import BlockingKernelClient
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from crane_lsp.server.redact import MASK
from tests.jupyterlab_util import JupyterProc, wait_kernel_ready, write_notebook
from tests.server_client import SERVER_ENV, Notebook, end_session, has, start, wait_for, wait_status

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]  # a ceiling: a cold kernel start takes minutes

_DIRS = Path(tempfile.mkdtemp(prefix="crane-remote-server-"))
ROOT = _DIRS / "root"
LOG = _DIRS / "crane-lsp.log"  # every crane-lsp process of this module appends its stderr here
TOKEN = secrets.token_hex(24)
WRONG = secrets.token_hex(24)
CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"price": [1.5, 2.0], "qty": [3, 4]})',
    'total = df["prise"].sum()',
]


def _config(**env: str) -> ClientServerConfig:
    command = [
        "sh",
        "-c",
        'exec "$@" 2>>"$CRANE_REMOTE_TEST_LOG"',
        "sh",
        sys.executable,
        "-m",
        "crane_lsp.cli",
        "serve",
    ]
    base = {k: v for k, v in SERVER_ENV.items() if k != "JUPYTER_TOKEN"}
    return ClientServerConfig(
        server_command=command,
        server_env={**base, "CRANE_LSP_LOG_LEVEL": "DEBUG", "CRANE_REMOTE_TEST_LOG": str(LOG), **env},
    )


@pytest.fixture(scope="module")
def jserver() -> Iterator[dict[str, Any]]:
    """The server, one session (``remote.ipynb``) whose kernel holds ``df``, and its URL."""
    ROOT.mkdir(parents=True, exist_ok=True)
    write_notebook(ROOT / "remote.ipynb", CELLS)
    proc = JupyterProc(root=ROOT, dirs=_DIRS / "jupyter", token=TOKEN)
    proc.start()
    try:
        kernel_id = proc.start_session("remote.ipynb")["kernel"]["id"]
        kc = BlockingKernelClient(connection_file=str(proc.runtime_dir / f"kernel-{kernel_id}.json"))
        kc.load_connection_file()
        kc.start_channels()
        try:
            wait_kernel_ready(kc)
            reply = kc.execute_interactive(CELLS[0], timeout=180, output_hook=lambda msg: None)
            assert reply["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
        yield {"proc": proc, "url": f"{proc.url}api/kernels/{kernel_id}", "kernel_id": kernel_id}
    finally:
        proc.stop()


def _capture(client: LanguageClient) -> list[str]:
    """Every JSON object the server sends, as text (each message and every object inside it)."""
    seen: list[str] = []
    protocol = client.protocol
    structure = protocol.structure_message

    def grab(data: Any) -> Any:
        seen.append(repr(data))
        return structure(data)

    protocol.structure_message = grab  # type: ignore[method-assign]
    return seen


def _assert_no_token(seen: list[str], *tokens: str) -> None:
    log = LOG.read_text(errors="replace") if LOG.exists() else ""
    assert "crane-lsp" in log, "the server's log was not captured"
    for token in tokens:
        assert not [m for m in seen if token in m], "a message the server sent holds the token"
        assert token not in log, "the server's log holds the token"


def _notebook(client: LanguageClient, uri: str | None = None) -> Notebook:
    nb = Notebook(client, [(CELLS[0], 1), (CELLS[1], None)], name="remote")
    if uri is not None:
        nb.uri = uri
        nb.cell_uris = [f"vscode-notebook-cell:{uri.removeprefix('file://')}#C{i}" for i in range(2)]
    nb.open()
    return nb


async def _hover(client: LanguageClient, nb: Notebook) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[1]), position=types.Position(0, 10)
        )
    )
    assert hover is not None
    return str(hover.contents)


@pytest_lsp.fixture(config=_config(JUPYTER_TOKEN=TOKEN))
async def env_client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_a_kernel_attached_by_url_with_the_token_from_the_environment(
    env_client: LanguageClient, jserver: dict[str, Any]
) -> None:
    client = env_client
    seen = _capture(client)
    statuses = await start(client, {"debounce": 50})
    nb = _notebook(client)
    client.protocol.notify("crane/attachKernel", {"notebookUri": nb.uri, "kernelUrl": jserver["url"]})
    diags = await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
    assert "prise" in diags[0].message
    status = await wait_status(statuses, lambda s: s.get("kernelUrl") == jserver["url"], timeout=30)
    assert status["connectionFile"] is None and status["kernel"] in ("attached", "busy")
    assert f"reads the kernel of kernel at {jserver['url']}" in LOG.read_text()  # said at INFO: no news
    assert "prise" in await _hover(client, nb)
    # a crash only running the cell shows: the dry run, in a jailed fork of the remote kernel
    nb.edit(1, "import json\nsettings = json.loads('{\"rows\": 3,}')")
    observed = await wait_for(client, nb.cell_uris[1], has("JSONDecodeError"), timeout=180)
    assert observed[0].range.start.line == 1, observed
    nb.edit(1, CELLS[1])
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=60)
    verdict = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.cellVerdict", arguments=[{"cell": nb.cell_uris[1]}])
    )
    assert verdict is not None
    _assert_no_token(seen, TOKEN)


@pytest_lsp.fixture(config=_config())
async def settings_client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_the_notebook_session_is_found_on_the_server_with_the_token_setting(
    settings_client: LanguageClient, jserver: dict[str, Any]
) -> None:
    """``jupyterServerUrl`` + ``jupyterToken``: no attach at all, the session of ``remote.ipynb``."""
    client = settings_client
    seen = _capture(client)
    proc = jserver["proc"]
    statuses = await start(client, {"debounce": 50, "jupyterServerUrl": proc.url, "jupyterToken": TOKEN})
    nb = _notebook(client, uri=f"file://{ROOT}/remote.ipynb")
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
    await wait_status(statuses, lambda s: s.get("kernelUrl") == jserver["url"], timeout=30)
    # a kernel URL pasted with its token, in the connectionFile setting: shown without it
    pasted = f"{jserver['url']}?token={TOKEN}"
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"crane": {"debounce": 50, "connectionFile": pasted}})
    )
    nb2 = _notebook(client)
    await wait_for(client, nb2.cell_uris[1], has("KeyError", 0), timeout=180)
    _assert_no_token(seen, TOKEN)
    assert MASK in LOG.read_text()  # pygls logged the settings at DEBUG: the token was there to hide


@pytest_lsp.fixture(config=_config(JUPYTER_TOKEN=WRONG))
async def wrong_client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_a_wrong_token_is_said_once_and_clearly_then_the_right_one_attaches(
    wrong_client: LanguageClient, jserver: dict[str, Any]
) -> None:
    client = wrong_client
    seen = _capture(client)
    statuses = await start(client, {"debounce": 50})
    nb = _notebook(client)
    client.protocol.notify("crane/attachKernel", {"notebookUri": nb.uri, "kernelUrl": jserver["url"]})
    status = await wait_status(statuses, lambda s: bool(s.get("message")), timeout=60)
    assert status["kernel"] == "none" and "refused the token" in status["message"], status
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "refused the token" in errors[0] and jserver["url"] in errors[0], errors
    await wait_for(client, nb.cell_uris[1], lambda ds: not ds, timeout=30)  # no verdict made up
    # the right token in the settings: the kernel the user named is attached, without a new attach
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"crane": {"debounce": 50, "jupyterToken": TOKEN}})
    )
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=120)
    await wait_status(
        statuses, lambda s: s.get("kernelUrl") == jserver["url"] and not s["message"], timeout=30
    )
    _assert_no_token(seen, TOKEN, WRONG)


async def test_a_busy_remote_kernel_still_answers(
    env_client: LanguageClient, jserver: dict[str, Any]
) -> None:
    """A cell runs for 30 s in the remote kernel (another client's): an edit is still checked, while
    the cell runs, against the kernel's state (a subshell over the websocket)."""
    client = env_client
    await start(client, {"debounce": 50})
    nb = _notebook(client)
    client.protocol.notify("crane/attachKernel", {"notebookUri": nb.uri, "kernelUrl": jserver["url"]})
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
    proc: JupyterProc = jserver["proc"]
    kc = BlockingKernelClient(connection_file=str(proc.runtime_dir / f"kernel-{jserver['kernel_id']}.json"))
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.execute("import time\ntime.sleep(30)")
        time.sleep(1.0)
        started = time.monotonic()
        nb.edit(1, 'total = df["qty"].sum() + df["quantity"].sum()')
        diags = await wait_for(
            client, nb.cell_uris[1], lambda ds: any("quantity" in d.message for d in ds), 25
        )
        assert time.monotonic() - started < 25 and diags[0].code == "KeyError"
    finally:
        kc.stop_channels()


async def test_a_restart_of_the_remote_kernel_is_followed(
    env_client: LanguageClient, jserver: dict[str, Any]
) -> None:
    """Restarted through the server's API (as JupyterLab's button does): the state is gone, and the
    verdict follows it (runs last of the module's tests on this kernel: it empties it)."""
    client = env_client
    statuses = await start(client, {"debounce": 50})
    nb = _notebook(client)
    client.protocol.notify("crane/attachKernel", {"notebookUri": nb.uri, "kernelUrl": jserver["url"]})
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
    jserver["proc"].api("POST", f"api/kernels/{jserver['kernel_id']}/restart", {})
    await wait_for(client, nb.cell_uris[1], has("NameError", 0), timeout=120)
    await wait_status(
        statuses, lambda s: s.get("kernelUrl") == jserver["url"] and s["kernel"] != "none", timeout=60
    )


@pytest_lsp.fixture(config=_config())
async def comeback_client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


def _session_with_state(proc: JupyterProc, name: str) -> str:
    kernel_id = str(proc.start_session(name)["kernel"]["id"])
    kc = BlockingKernelClient(connection_file=str(proc.runtime_dir / f"kernel-{kernel_id}.json"))
    kc.load_connection_file()
    kc.start_channels()
    try:
        wait_kernel_ready(kc)
        assert (
            kc.execute_interactive(CELLS[0], timeout=180, output_hook=lambda msg: None)["content"]["status"]
            == "ok"
        )
    finally:
        kc.stop_channels()
    return kernel_id


@pytest.mark.timeout(600)  # its own waits add up to more than the default 300 s on a busy machine
async def test_the_server_going_away_and_coming_back(comeback_client: LanguageClient, tmp_path: Path) -> None:
    """Found by its session on ``jupyterServerUrl``; the server stops (its kernels with it): no kernel,
    said; the server starts again on its port, the notebook's kernel too: found and read again."""
    client = comeback_client
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "back.ipynb", CELLS)
    proc = JupyterProc(root=root, dirs=tmp_path / "jupyter", token=TOKEN)
    proc.start()
    try:
        first = _session_with_state(proc, "back.ipynb")
        statuses = await start(client, {"debounce": 50, "jupyterServerUrl": proc.url, "jupyterToken": TOKEN})
        nb = _notebook(client, uri=f"file://{root}/back.ipynb")
        await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
        await wait_status(
            statuses, lambda s: s.get("kernelUrl") == f"{proc.url}api/kernels/{first}", timeout=30
        )
        proc.stop()
        gone = await wait_status(
            statuses, lambda s: s["kernel"] in ("none", "unresponsive") and bool(s["message"]), 90
        )
        assert TOKEN not in gone["message"]
        await wait_for(client, nb.cell_uris[1], lambda ds: not has("KeyError")(ds), timeout=60)  # withdrawn
        proc.start()
        second = _session_with_state(proc, "back.ipynb")
        await wait_status(
            statuses, lambda s: s.get("kernelUrl") == f"{proc.url}api/kernels/{second}", timeout=120
        )
        nb.edit(1, 'total = df["prise"].sum() ')  # a re-check on the new kernel's state
        await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=120)
    finally:
        proc.stop()
