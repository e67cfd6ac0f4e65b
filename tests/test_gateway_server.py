"""Gateway mode without a browser: a Jupyter server whose kernels run behind a gateway, and crane-lsp
started beside it (as jupyter-lsp starts it: the server's runtime dir, no connection file anywhere).

The gateway is a plain ``jupyter server`` here (it serves the gateway API; the real Enterprise Gateway
is in test_gateway_jupyterlab.py). Zero-config both ways JupyterLab meets it: the extension's attach by
kernel id, and the notebook's session found through the server's ``jpserver-<pid>.json``; crane reads
the kernel through the server's own ``/api/kernels/<id>/channels`` with that server's token.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from jupyter_client.blocking.client import BlockingKernelClient
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.gateway_util import gateway_args
from tests.jupyterlab_util import JupyterProc, wait_kernel_ready, write_notebook
from tests.server_client import (
    SERVER_COMMAND,
    SERVER_ENV,
    Notebook,
    end_session,
    has,
    start,
    wait_for,
    wait_status,
)

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

_DIRS = Path(tempfile.mkdtemp(prefix="crane-gateway-server-"))
ROOT = _DIRS / "root"
LAB_DIRS = _DIRS / "lab"  # the server in gateway mode: crane-lsp shares its runtime dir
CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"price": [1.5, 2.0], "qty": [3, 4]})',
    'total = df["prise"].sum()',
]
CONFIG = ClientServerConfig(
    server_command=SERVER_COMMAND,
    server_env={
        **{k: v for k, v in SERVER_ENV.items() if k != "JUPYTER_TOKEN"},
        "JUPYTER_RUNTIME_DIR": str(LAB_DIRS / "runtime"),
        "XDG_RUNTIME_DIR": str(LAB_DIRS / "xdg"),
    },
)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    ROOT.mkdir(parents=True, exist_ok=True)
    for name in ("attach.ipynb", "found.ipynb"):
        write_notebook(ROOT / name, CELLS)
    gateway = JupyterProc(root=_DIRS, dirs=_DIRS / "gateway")
    gateway.start()
    lab = JupyterProc(
        root=ROOT, dirs=LAB_DIRS, extra_args=gateway_args(gateway.url.rstrip("/"), gateway.token)
    )
    try:
        lab.start()
        kernels = {}
        for name in ("attach.ipynb", "found.ipynb"):
            kernel_id = lab.start_session(name)["kernel"]["id"]
            assert not (lab.runtime_dir / f"kernel-{kernel_id}.json").exists(), "not in gateway mode"
            # the test sets the state up behind crane's back, through the gateway's own file
            kc = BlockingKernelClient(connection_file=str(gateway.runtime_dir / f"kernel-{kernel_id}.json"))
            kc.load_connection_file()
            kc.start_channels()
            try:
                wait_kernel_ready(kc)
                assert kc.execute_interactive(CELLS[0], timeout=180)["content"]["status"] == "ok"
            finally:
                kc.stop_channels()
            kernels[name] = kernel_id
        yield {"lab": lab, "gateway": gateway, "kernels": kernels}
    finally:
        lab.stop()
        gateway.stop()


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


def _open(client: LanguageClient, name: str) -> Notebook:
    nb = Notebook(client, [(CELLS[0], 1), (CELLS[1], None)], name="gw")
    nb.uri = f"file://{ROOT}/{name}"
    nb.cell_uris = [f"vscode-notebook-cell:{ROOT}/{name}#C{i}" for i in range(2)]
    nb.open()
    return nb


async def test_jupyterlab_attach_by_kernel_id_and_session_discovery_in_gateway_mode(
    client: LanguageClient, servers: dict[str, Any]
) -> None:
    lab: JupyterProc = servers["lab"]
    statuses = await start(client, {"debounce": 50})
    # the labextension's notification: a kernel id and a bare file name that exists nowhere
    kernel_id = servers["kernels"]["attach.ipynb"]
    nb = _open(client, "attach.ipynb")
    client.protocol.notify(
        "crane/attachKernel",
        {"notebookUri": nb.uri, "kernelId": kernel_id, "connectionFile": f"kernel-{kernel_id}.json"},
    )
    await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=180)
    url = f"{lab.url}api/kernels/{kernel_id}"
    await wait_status(
        statuses, lambda s: s.get("kernelUrl") == url and s["notebookUri"] == nb.uri, timeout=30
    )
    # the dry run too, in a jailed fork of the gateway's kernel, through the lab server's proxy
    nb.edit(1, "import json\nconfig = json.loads('{\"rows\": 3,}')")
    await wait_for(client, nb.cell_uris[1], has("JSONDecodeError", 1), timeout=180)
    # no attach at all: the notebook's session on the server, its kernel through the server's API
    found = _open(client, "found.ipynb")
    await wait_for(client, found.cell_uris[1], has("KeyError", 0), timeout=180)
    other = f"{lab.url}api/kernels/{servers['kernels']['found.ipynb']}"
    await wait_status(statuses, lambda s: s.get("kernelUrl") == other, timeout=30)
    said = " | ".join(m.message for m in client.messages)
    assert lab.token not in said and servers["gateway"].token not in said
