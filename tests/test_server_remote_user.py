"""The issue as a new user tried it: a kernel behind a ``jupyter server`` started by ANOTHER user,
``crane-lsp serve`` run with that server's token, the kernel's URL given to ``crane/attachKernel``.

The server runs as ``crane-remote`` (``tests/remote_server_util.py``): crane cannot read its runtime
dir, only its API. Through a real LSP client: the missing column squiggled (checks), a crash only the
dry run sees observed in a jailed fork of that user's kernel, a second notebook found by its session
on the server (``jupyterServerUrl``), and the kernel's names, execution count and history unchanged
(the test's observer reads them through the connection file, as root it can).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.ports import free_port
from tests.remote_server_util import Observer, RemoteServer, make_root, new_token
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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="runs the server as another user: needs root"),
]

TOKEN = new_token()
SETUP = "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})"
MISSING = "total = sales['Units'].sum()"
ONLY_RUN_SHOWS = "import json\nconfig = json.loads('{\"rows\": 3,}')"
CONFIG = ClientServerConfig(
    server_command=SERVER_COMMAND,
    server_env={**SERVER_ENV, "JUPYTER_TOKEN": TOKEN},
)


@pytest.fixture(scope="module")
def remote() -> Iterator[dict[str, Any]]:
    server = RemoteServer(free_port(), TOKEN, make_root("lsp"))
    server.start()
    observers: list[Observer] = []
    try:
        kernels = {}
        for name in ("attached.ipynb", "found.ipynb"):
            body = {"path": name, "type": "notebook", "kernel": {"name": "python3"}}
            kernel_id = server.api("POST", "/api/sessions", body)["kernel"]["id"]
            observer = Observer(server.connection_file(kernel_id))
            observers.append(observer)
            assert observer.run(SETUP)["status"] == "ok"
            kernels[name] = (kernel_id, observer)
        yield {"server": server, "kernels": kernels}
    finally:
        for observer in observers:
            observer.close()
        server.remove()


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def test_another_users_kernel_by_url_and_by_session(
    client: LanguageClient, remote: dict[str, Any]
) -> None:
    server: RemoteServer = remote["server"]
    kernel_id, observer = remote["kernels"]["attached.ipynb"]
    before = observer.state_but_rng()
    statuses = await start(client, {"debounce": 50, "jupyterServerUrl": server.url})
    nb = Notebook(client, [(SETUP, 1), (MISSING, None), (ONLY_RUN_SHOWS, None)], name="attached")
    nb.open()
    url = f"{server.url}/api/kernels/{kernel_id}"
    client.protocol.notify("crane/attachKernel", {"notebookUri": nb.uri, "kernelUrl": url})
    squiggle = await wait_for(client, nb.cell_uris[1], has("KeyError", 0), timeout=240)
    assert "Units" in squiggle[0].message
    observed = await wait_for(client, nb.cell_uris[2], has("JSONDecodeError", 1), timeout=240)
    assert observed
    await wait_status(statuses, lambda s: s.get("kernelUrl") == url, timeout=30)
    # the second notebook: no attach, its session on the server (matched by its file name)
    found_id, found_observer = remote["kernels"]["found.ipynb"]
    other = Notebook(client, [(SETUP, 1), (MISSING, None)], name="found")
    other.uri = "file:///tmp/crane-tests/elsewhere/found.ipynb"
    other.cell_uris = [f"vscode-notebook-cell:/tmp/crane-tests/elsewhere/found.ipynb#C{i}" for i in range(2)]
    other.open()
    await wait_for(client, other.cell_uris[1], has("KeyError", 0), timeout=240)
    await wait_status(
        statuses, lambda s: s.get("kernelUrl") == f"{server.url}/api/kernels/{found_id}", timeout=30
    )
    assert observer.state_but_rng() == before, "crane changed the remote kernel's state"
    assert "sales" in found_observer.state_but_rng()
    said = " | ".join(m.message for m in client.messages)
    assert TOKEN not in said
