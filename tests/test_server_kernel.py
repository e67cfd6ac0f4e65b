"""Kernels come and go: a missing kernel, a restart, a death, and settings that make no sense.

The server must keep answering, say "no kernel" in ``crane/status``, and pick a kernel up again.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, SERVER_ENV, Notebook, end_session, has, start, wait_for, wait_status

pytestmark = pytest.mark.timeout(120)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield  # each test initialises with its own options
    await end_session(lsp_client)


async def test_missing_kernel_then_attach_command(client: LanguageClient, kernel: TestKernel) -> None:
    statuses = await start(client, {"connectionFile": "/nonexistent/kernel-gone.json", "debounce": 100})
    nb = Notebook(client, [("a = 1", 1), ("", None)])
    nb.open()
    nb.edit(1, "print(srv_k_missing)\n")
    status = await wait_status(statuses, lambda s: s["kernel"] == "none" and bool(s.get("message")))
    assert "does not exist" in status["message"]
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)  # no kernel: nothing certain to say
    reply = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.attachKernel", arguments=[nb.uri, kernel.connection_file])
    )
    assert reply == {"attached": True, "error": None}
    await wait_for(client, nb.cell_uris[1], has("NameError", line=0))


async def test_restart_withdraws_and_recomputes(client: LanguageClient, fresh_kernel: TestKernel) -> None:
    statuses = await start(client, {"connectionFile": fresh_kernel.connection_file, "debounce": 100})
    fresh_kernel.run("srv_restart_var = 1")
    nb = Notebook(client, [("srv_restart_var = 1", 1), ("print(srv_restart_var)", None)])
    nb.open()
    await wait_for(client, nb.cell_uris[1], lambda ds: len(ds) == 0)
    await wait_status(statuses, lambda s: s["kernel"] == "attached")
    fresh_kernel.manager.restart_kernel(now=True)
    fresh_kernel.client.wait_for_ready(timeout=60)
    # the restart emptied the namespace: the pending cell now crashes, without any edit
    await wait_for(client, nb.cell_uris[1], has("NameError"), timeout=40)


async def test_dead_kernel_is_survived(client: LanguageClient, fresh_kernel: TestKernel) -> None:
    statuses = await start(client, {"debounce": 100})
    nb = Notebook(client, [("x = 1", 1), ("", None)])
    nb.open()
    nb.attach(fresh_kernel.connection_file)
    await wait_status(statuses, lambda s: s["kernel"] == "attached")
    fresh_kernel.manager.shutdown_kernel(now=True)
    nb.edit(1, "print(srv_after_death)\n")
    await wait_status(statuses, lambda s: s["kernel"] == "none" and not s["checking"], timeout=40)
    # still serving: a syntax error needs no kernel
    nb.edit(1, "print(\n")
    await wait_for(client, nb.cell_uris[1], has("SyntaxError"))


async def test_invalid_settings_are_reported_and_replaced_by_defaults(client: LanguageClient) -> None:
    await start(client, {"debounce": -5, "votes": "many"})
    nb = Notebook(client, [("y = (", None)])
    nb.open()
    await wait_for(client, nb.cell_uris[0], has("SyntaxError"))
    messages = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("invalid settings" in m and "debounce" in m and "votes" in m for m in messages)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"crane": {"debounce": 50, "maxColumns": 0}})
    )
    await wait_for(client, nb.cell_uris[0], has("SyntaxError"))
    for _ in range(100):
        if len(client.messages) > len(messages):
            break
        await __import__("asyncio").sleep(0.05)
    assert "maxColumns" in client.messages[-1].message


async def test_discovers_a_kernel_without_being_told(client: LanguageClient, kernel: TestKernel) -> None:
    """No connection file anywhere: the newest live kernel in the runtime directory is attached."""
    runtime = Path(SERVER_ENV["JUPYTER_RUNTIME_DIR"])
    runtime.mkdir(parents=True, exist_ok=True)
    found = runtime / "kernel-crane-discovery-test.json"
    shutil.copy(kernel.connection_file, found)
    try:
        statuses = await start(client, {"debounce": 50})
        nb = Notebook(client, [("a = 1", 1), ("print(srv_discovered_missing)", None)])
        nb.open()
        await wait_for(client, nb.cell_uris[1], has("NameError"))
        status = await wait_status(statuses, lambda s: s["kernel"] == "attached")
        assert status["connectionFile"] == str(found)
    finally:
        found.unlink()


async def test_busy_kernel_still_answers(client: LanguageClient, fresh_kernel: TestKernel) -> None:
    """A cell runs for seconds: the check reads the kernel beside it (a subshell) and says it was busy."""
    statuses = await start(client, {"connectionFile": fresh_kernel.connection_file, "debounce": 50})
    nb = Notebook(client, [("import time", 1), ("", None)])
    nb.open()
    await wait_status(statuses, lambda s: s["kernel"] == "attached")
    fresh_kernel.client.execute("import time; time.sleep(6)")
    await wait_status(statuses, lambda s: s["kernel"] == "busy")
    started = time.monotonic()
    nb.edit(1, "print(srv_busy_missing)\n")
    await wait_for(client, nb.cell_uris[1], has("NameError"))
    assert time.monotonic() - started < 5  # answered while the cell still ran
