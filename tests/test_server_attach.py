"""Kernels as editors meet them: attach races, kernel events, failed attaches, a stopped kernel,
and the user's RNG. A real pytest-lsp client, the server over stdio, real kernels.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, end_session, has, start, wait_for, wait_status

pytestmark = pytest.mark.timeout(180)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


def said(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.messages if text in m.message]


async def test_every_crashing_cell_is_flagged_while_attach_races_open(
    client: LanguageClient, kernel: TestKernel
) -> None:
    """Failure 2: 8 crashing cells, opened just before the attach: all 8 flagged (maxPendingCells 5),
    and after a kernel event (the names get defined) all 8 re-checked, not only five."""
    await start(client, {"debounce": 50, "maxPendingCells": 5})
    kernel.run("srv_race_ok = 1")
    cells = [("srv_race_ok = 1", 1)] + [(f"print(srv_race_{i})", None) for i in range(8)]
    nb = Notebook(client, cells)
    nb.open()
    nb.attach(kernel.connection_file)
    for uri in nb.cell_uris[1:]:
        await wait_for(client, uri, has("NameError"), timeout=60)
    kernel.run("\n".join(f"srv_race_{i} = {i}" for i in range(8)))  # another client runs a cell
    for uri in nb.cell_uris[1:]:
        await wait_for(client, uri, lambda ds: len(ds) == 0, timeout=60)


async def test_cells_queued_behind_a_slow_attach_are_all_flagged(
    client: LanguageClient, fresh_kernel: TestKernel
) -> None:
    """The race behind a flaky run: two re-check rounds (open, a settings push) while an attach is
    in progress leave checks of backlog cells waiting for it with the old state; their results are
    dropped as outdated once the attach lands, and the next round must check them again rather than
    skip them as "already running". The kernel is stopped so the attach stays in progress."""
    statuses = await start(client, {"debounce": 50, "maxPendingCells": 5})
    fresh_kernel.run("srv_slow_ok = 1")
    cells = [("srv_slow_ok = 1", 1)] + [(f"print(srv_slow_{i})", None) for i in range(8)]
    nb = Notebook(client, cells)
    pid = fresh_kernel.manager.provisioner.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGSTOP)
    try:
        nb.open()
        nb.attach(fresh_kernel.connection_file)
        # the first round: 5 checks (and a backlog of 3) waiting for the attach
        await wait_status(statuses, lambda s: s["checking"])
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"crane": {"debounce": 50, "maxPendingCells": 5}})
        )
        await asyncio.sleep(1.0)  # the second round: the backlog cells' checks started, waiting too
    finally:
        os.kill(pid, signal.SIGCONT)
    for uri in nb.cell_uris[1:]:
        await wait_for(client, uri, has("NameError"), timeout=60)


async def test_failed_attach_keeps_the_working_kernel_and_says_so(
    client: LanguageClient, kernel: TestKernel
) -> None:
    """Failure 8: a failed crane.attachKernel is shown (showMessage) and keeps the kernel working."""
    statuses = await start(client, {"debounce": 50})
    nb = Notebook(client, [("a = 1", 1), ("", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(statuses, lambda s: s["kernel"] in ("attached", "busy"))
    reply = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="crane.attachKernel", arguments=[nb.uri, "/nonexistent/kernel-x.json"]
        )
    )
    assert reply["attached"] is False and "does not exist" in reply["error"]
    shown = said(client, "could not attach /nonexistent/kernel-x.json")
    assert shown and "still reading" in shown[0]
    nb.edit(1, "print(srv_attach_kept_missing)\n")
    await wait_for(client, nb.cell_uris[1], has("NameError"))  # only the kernel knows the name is missing
    status = await wait_status(statuses, lambda s: not s["checking"])
    assert status["kernel"] in ("attached", "busy") and status["connectionFile"] == kernel.connection_file


async def test_no_kernel_is_said_once_not_per_keystroke(client: LanguageClient) -> None:
    """Failure 8: a missing connection file is a showMessage, once, however much the user types."""
    statuses = await start(client, {"connectionFile": "/nonexistent/kernel-gone.json", "debounce": 30})
    nb = Notebook(client, [("a = 1", 1), ("", None)])
    nb.open()
    nb.edit(1, "print(x)\n")
    await wait_status(statuses, lambda s: s["predictions"] >= 1 and not s["checking"])
    for i in range(6):
        nb.edit(1, f"print(x{i})\n")
        await wait_status(statuses, lambda s, i=i: s["predictions"] >= i + 2 and not s["checking"])
    shown = said(client, "has no kernel")
    assert len(shown) == 1 and "does not exist" in shown[0], shown


async def test_stopped_kernel_is_not_shown_attached(client: LanguageClient, fresh_kernel: TestKernel) -> None:
    """Failure 8: a SIGSTOPped kernel becomes "unresponsive" (and is said to be); SIGCONT brings it back."""
    statuses = await start(client, {"connectionFile": fresh_kernel.connection_file, "debounce": 50})
    nb = Notebook(client, [("a = 1", 1), ("print(1)", None)])
    nb.open()
    await wait_status(statuses, lambda s: s["kernel"] == "attached")
    pid = fresh_kernel.manager.provisioner.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGSTOP)
    try:
        await wait_status(statuses, lambda s: s["kernel"] == "unresponsive", timeout=30)
        assert said(client, "does not answer")
    finally:
        os.kill(pid, signal.SIGCONT)
    await wait_status(statuses, lambda s: s is statuses[-1] and s["kernel"] == "attached", timeout=30)
    assert said(client, "reads its kernel again")


async def test_attach_leaves_the_rng_as_it_was(client: LanguageClient, fresh_kernel: TestKernel) -> None:
    """Failure 6: after ``random.seed(0)``, attaching and checking do not move ``random``'s state."""
    random.seed(0)
    expected = repr(random.random())
    fresh_kernel.run("import random; random.seed(0)")
    statuses = await start(client, {"debounce": 50})
    nb = Notebook(client, [("import random", 1), ("", None)])
    nb.open()
    nb.attach(fresh_kernel.connection_file)
    await wait_status(statuses, lambda s: s["kernel"] == "attached")
    nb.edit(1, "print(srv_rng_missing)\n")  # a check: installs the probe and takes a snapshot
    await wait_for(client, nb.cell_uris[1], has("NameError"))
    assert fresh_kernel.eval("random.random()") == expected
