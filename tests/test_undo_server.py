"""``crane.undoLastCell`` and ``crane.cellChanges`` through the real server (issue 37): undo on, the
server binds the notebook's kernel (and tells it to hold copies), a cell runs and crashes after
changing the state, the commands say what it changed and undo it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import TestKernel
from tests.server_client import CONFIG, Notebook, end_session, open_script, start, wait_status

pytestmark = pytest.mark.timeout(120)

CONFIGURED = "__import__('sys').modules['_crane_probe']._uh_state.get('config', {}).get('on') is True"


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> Any:
    yield
    await end_session(lsp_client)


async def _undo(client: LanguageClient, uri: str) -> dict[str, Any]:
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.undoLastCell", arguments=[{"uri": uri}])
    )
    assert isinstance(answer, dict), answer
    return answer


async def _hover_text(client: LanguageClient, uri: str, line: int) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, 2))
    )
    return (
        hover.contents.value if hover is not None and isinstance(hover.contents, types.MarkupContent) else ""
    )


async def test_undo_last_cell_restores_what_a_crashing_cell_changed(
    client: LanguageClient, kernel: TestKernel
) -> None:
    kernel.run("srv_rows = [1, 2, 3]\nsrv_total = 6")
    statuses = await start(client, {"debounce": 200, "dryRun": "on", "undo": True, "undoReserve": 64})
    nb = Notebook(client, [("srv_rows = [1, 2, 3]\nsrv_total = 6", 1), ("srv_rows.pop()", None)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    assert (await _undo(client, nb.uri))["error"].startswith("cannot undo"), "nothing ran yet"
    deadline = time.monotonic() + 60
    while kernel.eval(CONFIGURED) != "True":  # the server tells the kernel once it binds its link
        assert time.monotonic() < deadline, statuses[-1:]
        await asyncio.sleep(0.2)
    nb.edit(1, "srv_rows.pop()\nsrv_total = srv_total - 3\nsrv_new = 1\nsrv_rows[9]")
    reply = kernel.run(nb.texts[1], allow_error=True)  # the user runs the cell: it crashes half-way
    assert reply["ename"] == "IndexError"
    nb.executed(1, reply["execution_count"])
    changes = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="crane.cellChanges", arguments=[{"uri": nb.uri}])
    )
    assert changes["bound"] == ["srv_new"] and changes["mutated"] == ["srv_rows"], changes
    assert changes["rebound"] == ["srv_total"] and changes["cell"] == 2, changes
    assert changes["text"] == "the cell bound `srv_new`, rebound `srv_total` and mutated `srv_rows` in place"
    assert changes["raisedAt"] == 4, changes  # from the kernel's traceback of that run
    assert changes["line"] == (
        "Before raising at line 4 the cell bound `srv_new`, rebound `srv_total` and mutated `srv_rows`"
        " in place. Undo: command crane.undoLastCell."
    )
    hover = None  # the crashed cell's hover at the line it raised from, once the server has asked
    deadline = time.monotonic() + 30
    while hover is None and time.monotonic() < deadline:
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(nb.cell_uris[1]), types.Position(3, 2))
        )
        if hover is None:
            await asyncio.sleep(0.2)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent), "no hover in 30 s"
    assert hover.contents.value.endswith(changes["line"]), hover.contents.value
    assert "Before raising" not in await _hover_text(client, nb.cell_uris[1], 0)  # not another line
    answer = await _undo(client, nb.uri)
    assert answer.get("error") is None, answer
    assert sorted(answer["restored"]) == ["srv_rows", "srv_total"] and answer["deleted"] == ["srv_new"]
    assert (
        answer["cell"] == 2 and answer["executionCount"] == reply["execution_count"] and answer["kept"] == []
    )
    assert kernel.eval("(srv_rows, srv_total, 'srv_new' in globals())") == "([1, 2, 3], 6, False)"
    assert "Before raising" not in await _hover_text(client, nb.cell_uris[1], 3)  # undone: gone
    again = await _undo(client, nb.uri)
    assert again["error"] == f"cannot undo cell [{reply['execution_count']}]: it was undone already", again


async def test_a_percent_scripts_crashed_cell_gets_the_undo_line_by_its_text(
    client: LanguageClient, kernel: TestKernel
) -> None:
    """A ``# %%`` script's cells carry no execution count: the run is found by the code that ran."""
    kernel.run("pct_rows = [1, 2]")
    statuses = await start(client, {"debounce": 200, "dryRun": "on", "undo": True, "undoReserve": 64})
    uri = "file:///tmp/crane-tests/undo_script.py"
    crashing = "pct_rows.append(3)\npct_rows[10]"
    text = f"# %%\npct_rows = [1, 2]\n\n# %%\n{crashing}\n"
    open_script(client, uri, text, kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
    deadline = time.monotonic() + 60
    while kernel.eval(CONFIGURED) != "True":
        assert time.monotonic() < deadline, statuses[-1:]
        await asyncio.sleep(0.2)
    assert kernel.run(crashing, allow_error=True)["ename"] == "IndexError"  # the user runs cell 2
    shown = ""
    deadline = time.monotonic() + 30
    while "Before raising" not in shown and time.monotonic() < deadline:
        shown = await _hover_text(client, uri, 5)  # the script's line 6: the cell's line 2
        await asyncio.sleep(0.2)
    assert "Before raising at line 2 the cell mutated `pct_rows` in place" in shown, shown
    assert "Before raising" not in await _hover_text(client, uri, 4)  # the line before: none
    assert "Before raising" not in await _hover_text(client, uri, 1)  # the other cell: none


async def test_undo_turned_on_in_the_settings_reaches_the_kernel_at_once(
    client: LanguageClient, kernel: TestKernel
) -> None:
    """A user turns undo on while a notebook is open: the kernel is told then, not at the next check
    (a cell run right after, from any client, already has its copy)."""
    statuses = await start(client, {"debounce": 200, "dryRun": "on"})
    nb = Notebook(client, [("on_rows = [1]", 1)])
    nb.open()
    nb.attach(kernel.connection_file)
    await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy") and not s.get("checking"))
    kernel.run(  # an earlier test's configuration is forgotten (the probe may not be installed yet)
        "import sys\n_p = sys.modules.get('_crane_probe')\n"
        "_p and _p._uh_state.pop('config', None)\ndel sys, _p"
    )
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"crane": {"dryRun": "on", "undo": True, "undoReserve": 64}}
        )
    )
    deadline = time.monotonic() + 30
    while kernel.eval(f"'_crane_probe' in __import__('sys').modules and {CONFIGURED}") != "True":
        assert time.monotonic() < deadline, "the kernel was not told within 30 s of the settings change"
        await asyncio.sleep(0.2)


async def test_raised_at_reads_only_that_runs_traceback(kernel: TestKernel) -> None:
    """The line comes from the kernel's last traceback only when it is that run's: a clean cell after a
    crash answers None (the earlier cell's traceback is still ``sys.last_traceback``)."""
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.undo import raised_at

    crashed = kernel.run("ra_x = 1\n\nra_y = {}['no']", allow_error=True)
    clean = kernel.run("ra_z = 2")
    async with await KernelLink.connect(kernel.connection_file) as link:
        assert await raised_at(link, crashed["execution_count"]) == 3
        assert await raised_at(link, clean["execution_count"]) is None
