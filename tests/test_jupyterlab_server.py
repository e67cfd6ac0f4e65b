"""crane-lsp under jupyter-lsp without crane's extension: the virtual notebook document of
jupyterlab-lsp, and the notebook's own kernel found through a real Jupyter server's sessions.

Two notebooks run a kernel each on a real ``jupyter server``; the second kernel is the newer one,
so a server that took the newest kernel would read the wrong variables.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from jupyter_client.blocking.client import BlockingKernelClient
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from crane_lsp.kernel.connection import ConnectionNotFound
from crane_lsp.server.jupyter_sessions import discover_for_notebook
from crane_lsp.server.jupyter_spec import spec
from tests.jupyterlab_util import JupyterProc, wait_kernel_ready, write_notebook
from tests.server_client import SERVER_COMMAND, SERVER_ENV, end_session, has, start, wait_for, wait_status

pytestmark = pytest.mark.timeout(600)  # a ceiling: the fixture's cold start may take minutes

_DIRS = Path(tempfile.mkdtemp(prefix="crane-jl-server-"))
ROOT = _DIRS / "root"
CONFIG = ClientServerConfig(
    server_command=SERVER_COMMAND,
    server_env={**SERVER_ENV, "JUPYTER_RUNTIME_DIR": str(_DIRS / "runtime"), "XDG_RUNTIME_DIR": str(_DIRS)},
)


def _run(connection_file: str, code: str) -> None:
    """Run ``code`` in a kernel the Jupyter server started, as a user cell (it enters the history),
    once the kernel answers (its first start is what is slow on a cold machine)."""
    kc = BlockingKernelClient(connection_file=connection_file)
    kc.load_connection_file()
    kc.start_channels()
    try:
        wait_kernel_ready(kc)
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()


@pytest.fixture(scope="module")
def jupyter() -> Iterator[dict[str, Any]]:
    ROOT.mkdir(parents=True, exist_ok=True)
    write_notebook(ROOT / "a.ipynb", ["only_in_a = 1"])
    write_notebook(ROOT / "b.ipynb", ["only_in_b = 2"])
    write_notebook(ROOT / "c.ipynb", ["x = 1"])
    proc = JupyterProc(root=ROOT, dirs=_DIRS)
    proc.start()
    try:
        files = {}
        for name in ("a", "b"):  # both kernels start together; b's is the newer
            session = proc.start_session(f"{name}.ipynb")
            files[name] = str(proc.runtime_dir / f"kernel-{session['kernel']['id']}.json")
        for name in ("a", "b"):
            _run(files[name], f"only_in_{name} = {1 if name == 'a' else 2}")
        yield {"proc": proc, "files": files}
    finally:
        proc.stop()


def test_spec_offers_crane_lsp_to_jupyter_lsp(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_lsp.schema import LANGUAGE_SERVER_SPEC_MAP

    monkeypatch.delenv("CRANE_LSP_JUPYTERLAB_LSP", raising=False)
    specs = spec()
    assert not list(LANGUAGE_SERVER_SPEC_MAP.iter_errors(specs))
    assert list(specs) == ["crane-lsp"] and "python" not in specs["crane-lsp"]["languages"]
    monkeypatch.setenv("CRANE_LSP_JUPYTERLAB_LSP", "1")
    both = spec()
    assert not list(LANGUAGE_SERVER_SPEC_MAP.iter_errors(both))
    assert both["crane-lsp-python"]["languages"] == ["python"]
    argv = specs["crane-lsp"]["argv"]
    assert argv[-2:] == ["crane_lsp", "serve"] and os.path.exists(argv[0])


def test_entry_point_is_registered() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="jupyter_lsp_spec_v1")}
    assert found.get("crane-lsp") == "crane_lsp.server.jupyter_spec:spec"


def test_each_notebook_gets_its_own_session_kernel(jupyter: dict[str, Any]) -> None:
    runtime = [jupyter["proc"].runtime_dir]
    virtual = ROOT / ".virtual_documents"
    assert str(discover_for_notebook(None, virtual / "a.ipynb", runtime)) == jupyter["files"]["a"]
    assert str(discover_for_notebook(None, ROOT / "b.ipynb", runtime)) == jupyter["files"]["b"]
    with pytest.raises(ConnectionNotFound, match=r"no kernel yet for c\.ipynb"):
        discover_for_notebook(None, virtual / "c.ipynb", runtime)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    lsp_client.statuses = await start(lsp_client, {"debounce": 150})  # type: ignore[attr-defined]
    yield
    await end_session(lsp_client)


def _open(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_virtual_notebook_squiggle_lands_on_its_cell_with_the_notebooks_kernel(
    client: LanguageClient, jupyter: dict[str, Any]
) -> None:
    uri = (ROOT / ".virtual_documents" / "a.ipynb").as_uri()
    # cell 1 ran in a's kernel; cell 2 uses a's variable (fine) and b's (NameError in a's kernel)
    _open(client, uri, "only_in_a = 1\n\n\nprint(only_in_a)\nprint(only_in_b)\n")
    diags = await wait_for(client, uri, has("NameError"), timeout=60)
    (diag,) = [d for d in diags if d.code == "NameError"]
    assert diag.range.start.line == 4 and diag.range.start.character == 6
    assert diag.range.end.character == 6 + len("only_in_b")
    statuses = client.statuses  # type: ignore[attr-defined]
    status = await wait_status(statuses, lambda s: s.get("connectionFile") is not None)
    assert status["connectionFile"] == jupyter["files"]["a"]
    verdict = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.cellVerdict", arguments=[{"uri": uri, "line": 4}])
    )
    assert verdict["exception"] == "NameError" and verdict["certainty"] == "certain"
    assert verdict["blockRun"] and not verdict["stale"] and "only_in_b" in verdict["message"]
    assert verdict["verdict"] == "crash" and verdict["label"] == "will crash", verdict
    assert verdict["question"].startswith("crane: this cell raises NameError at line 5 ("), verdict
    # the editor shows another text (an edit not sent yet): that verdict is not this text's
    other = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="crane.cellVerdict", arguments=[{"uri": uri, "line": 4, "text": "print(only_in_a)\n"}]
        )
    )
    assert other["stale"] and not other["blockRun"] and other["exception"] == "NameError"
    clean = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.cellVerdict", arguments=[{"uri": uri, "line": 0}])
    )
    assert not clean["crash"] and not clean["blockRun"] and clean["question"] is None
    assert clean["verdict"] in (("clean", "nothing-found") if clean["checked"] else (None,)), clean

    # jupyterlab-lsp sends the whole text again: a new cell above moves the squiggle with its cell
    _change(client, uri, 2, "only_in_a = 1\n\n\nimport math\n\n\nprint(only_in_a)\nprint(only_in_b)\n")
    await wait_for(client, uri, lambda ds: [d.range.start.line for d in ds if d.code == "NameError"] == [7])
    _change(client, uri, 3, "only_in_a = 1\n\n\nimport math\n\n\nprint(only_in_a)\nprint(only_in_a + 1)\n")
    await wait_for(client, uri, lambda ds: not ds)


async def test_a_notebook_without_a_session_says_no_kernel(
    client: LanguageClient, jupyter: dict[str, Any]
) -> None:
    uri = (ROOT / "c.ipynb").as_uri()
    _open(client, uri, "x = 1\n\n\nprint(x)\n")
    statuses = client.statuses  # type: ignore[attr-defined]
    status = await wait_status(statuses, lambda s: "no kernel yet" in (s.get("message") or ""), timeout=30)
    assert status["kernel"] == "none" and status["connectionFile"] is None


async def test_a_virtual_document_beside_crane_extensions_notebook_is_ignored(
    client: LanguageClient, jupyter: dict[str, Any]
) -> None:
    """JupyterLab's own LSP client may open the joined text at the notebook's URI while crane's
    extension syncs the same notebook with notebookDocument/*: the notebook wins, nothing breaks."""
    from tests.server_client import Notebook

    nb = Notebook(client, [("only_in_a = 1", 1), ("print(only_in_b)", None)], name="shared")
    nb.uri = (ROOT / "a.ipynb").as_uri()
    nb.cell_uris = [f"vscode-notebook-cell:{ROOT / 'a.ipynb'}#c{i}" for i in range(2)]
    nb.open()
    _open(client, nb.uri, "only_in_a = 1\n\n\nprint(only_in_b)\n")
    _change(client, nb.uri, 2, "only_in_a = 1\n\n\nprint(only_in_b)\nx = 1\n")
    diags = await wait_for(client, nb.cell_uris[1], has("NameError", line=0), timeout=60)
    assert diags and not client.diagnostics.get(nb.uri), "the joined text gets no diagnostics of its own"
    nb.edit(1, "print(only_in_a)")
    await wait_for(client, nb.cell_uris[1], lambda ds: not ds)
    closed = types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=nb.uri))
    client.text_document_did_close(closed)
    nb.edit(1, "print(only_in_b)")
    await wait_for(client, nb.cell_uris[1], has("NameError", line=0))
