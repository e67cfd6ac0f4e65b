"""The relay transport against a real ipykernel standing in for the editor's kernel.

The "editor" here answers ``crane/kernelRelay/execute`` and ``crane/kernelRelay/status`` the way
vscode-client/src/relay.ts does with the Jupyter extension's ``kernel.executeCode``: the code goes out
as vscode-jupyter's ``executeSilently`` sends it (``silent: false, store_history: false``), the outputs
come back as VS Code output items (stdout/stderr/error mimes, display data by mime), decoded as relay.ts
decodes them; no output within the start timeout means a cell runs ("busy"), and nothing is cancelled.
The kernel's state is read through the test kernel's own client, before and after.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from crane_lsp.kernel.link import KernelBusy, KernelDead, KernelEvent, ProbeError
from crane_lsp.kernel.transport import KernelTransport
from crane_lsp.kernel.transport_relay import (
    RELAY_EXECUTE,
    RELAY_STATUS,
    RelayAnswer,
    RelayTransport,
    connect_relay,
    decode_reply,
    relay_code,
)
from crane_lsp.snapshot import ProbeQuery
from tests.conftest import TestKernel
from tests.relay_editor import FakeEditor

NOTEBOOK = "file:///work/remote.ipynb"
CONTRACT = Path(__file__).resolve().parents[1] / "vscode-client" / "test" / "fixtures" / "contract.json"


def kernel_state(kernel: TestKernel) -> dict[str, str]:
    """What a trace would change, read without leaving one (user_expressions)."""
    exprs = {
        "count": "get_ipython().execution_count",
        "history": "len(get_ipython().history_manager.input_hist_raw)",
        "names": "sorted(get_ipython().user_ns)",
        "out": "sorted(get_ipython().user_ns['Out'])",
        "underscore": "repr(get_ipython().user_ns.get('_'))",
        "last": "hasattr(__import__('sys'), 'last_value')",
        "rng": "hash(__import__('random').getstate())",
    }
    return {key: kernel.eval(expr) for key, expr in exprs.items()}


def test_relay_code_is_one_statement_that_returns_none() -> None:
    code = relay_code({"kind": "ping", "start": "s", "open": "<", "close": ">"})
    assert "\n" not in code
    compile(code, "<cell>", "eval")  # an expression: exec(...) -> None, nothing for Out or _


def test_decode_takes_the_marked_line_only() -> None:
    answer = RelayAnswer.parse(
        {"status": "ok", "stdout": 'noise <a>{"fake": 1}</a>\n<crane x>{"status": "ok"}</crane x>\n'}
    )
    assert decode_reply(answer, ("<crane x>", "</crane x>")) == {"status": "ok"}
    assert decode_reply(answer, ("<crane y>", "</crane y>")) is None


def test_the_extension_pins_the_relay_methods() -> None:
    contract = json.loads(CONTRACT.read_text())
    assert contract["kernelRelay"]["execute"]["method"] == RELAY_EXECUTE
    assert contract["kernelRelay"]["status"]["method"] == RELAY_STATUS


@pytest.mark.slow
async def test_probe_over_the_relay_leaves_no_trace(kernel: TestKernel) -> None:
    kernel.run("relay_x = 41\nrelay_df = __import__('pandas').DataFrame({'a': [1, 2]})\nrelay_x")
    async with FakeEditor(kernel.connection_file) as editor:
        # the editor's own connection (its kernel_info moves IPython's RNG) is the user's, not crane's
        before = kernel_state(kernel)
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            assert isinstance(link.transport, KernelTransport)
            assert "kernel subshells" not in link.features
            snap = await link.snapshot(ProbeQuery(names=["relay_x", "relay_df", "nope_not_here"]), timeout=60)
            assert snap.variables["relay_x"].kind == "int"
            assert snap.variables["relay_df"].shape == [2, 1]
            assert "nope_not_here" in snap.undefined
            t0 = time.perf_counter()
            data = await link.call("snapshot", ProbeQuery(names=["relay_x"]).model_dump(), timeout=30)
            print(f"relayed probe round trip (installed): {(time.perf_counter() - t0) * 1000:.0f} ms")
            assert data["variables"]["relay_x"]["kind"] == "int"
            with pytest.raises(ProbeError, match="no_such_entry"):
                await link.call("no_such_entry", {}, timeout=30)
            history = await link.history(timeout=30)
            assert history and history[-1].source.startswith("relay_x = 41")
        finally:
            await link.close()
    # what went to the kernel is exactly what vscode-jupyter sends: never a recorded cell
    assert editor.executions and all(not e["store_history"] for e in editor.executions)
    assert kernel_state(kernel) == before


@pytest.mark.slow
async def test_dry_run_over_the_relay_observes_the_crash_in_a_fork(kernel: TestKernel) -> None:
    from crane_lsp.dryrun import DryRunner
    from crane_lsp.pipeline import Pipeline
    from crane_lsp.settings import Settings

    kernel.run(
        "import random, pandas as pd\nrandom.seed(7)\n"
        "rly_sales = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})"
    )
    failing = "rly_by_region = rly_sales.groupby('region')['units'].sum()\nrly_sales['Units']"
    async with FakeEditor(kernel.connection_file) as editor:
        before = kernel_state(kernel)
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            settings = Settings(dry_run="on", dry_run_budget_s=10.0)  # type: ignore[arg-type, call-arg]
            run = await Pipeline(settings, link=link, dryrun=DryRunner(link, settings)).predict(
                failing, layers={"dryrun"}
            )
        finally:
            await link.close()
    prediction = run.prediction
    assert prediction.crash and prediction.certainty == "observed", prediction
    assert prediction.exception == "KeyError" and prediction.line == 1
    assert kernel_state(kernel) == before  # the seeded RNG too
    assert kernel.eval("'rly_by_region' in globals()") == "False"  # the dry run ran in a fork


@pytest.mark.slow
async def test_busy_kernel_answers_kernel_busy_quickly_then_recovers(fresh_kernel: TestKernel) -> None:
    fresh_kernel.run("ready = 3")
    events: list[KernelEvent] = []
    async with FakeEditor(fresh_kernel.connection_file) as editor:
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            link.add_listener(events.append)
            await link.snapshot(ProbeQuery(names=["ready"]), timeout=60)  # installs the probe
            assert [c.source for c in await link.history(timeout=30)][-1] == "ready = 3"
            fresh_kernel.client.execute("import time; time.sleep(6)")  # another client's cell
            await asyncio.sleep(0.8)
            t0 = time.monotonic()
            with pytest.raises(KernelBusy):
                await link.snapshot(ProbeQuery(names=["ready"]), timeout=30)
            elapsed = time.monotonic() - t0
            assert elapsed < 4.0, f"KernelBusy took {elapsed:.1f} s"
            assert link.busy
            t0 = time.monotonic()
            history = await link.history(timeout=10)  # read before the cell began: still true
            assert time.monotonic() - t0 < 2.0 and [c.source for c in history][-1] == "ready = 3"
            assert await link.wait_idle(timeout=30), "the relay never saw the cell end"
            snap = await link.snapshot(ProbeQuery(names=["ready"]), timeout=60)
            assert snap.variables["ready"].kind == "int"
        finally:
            await link.close()
    assert [e.kind for e in events if e.kind != "restarted"][-2:] == ["cell_started", "cell_finished"]


@pytest.mark.slow
async def test_a_cell_run_between_requests_moves_the_state(kernel: TestKernel) -> None:
    async with FakeEditor(kernel.connection_file) as editor:
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            await link.snapshot(ProbeQuery(names=["relay_y"]), timeout=60)
            epoch = link.state_epoch
            kernel.run("relay_y = 'now'")
            snap = await link.snapshot(ProbeQuery(names=["relay_y"]), timeout=60)
            assert snap.variables["relay_y"].kind == "str"
            assert link.state_epoch > epoch
        finally:
            await link.close()


async def test_no_kernel_in_the_editor_is_kernel_dead() -> None:
    async def editor(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"status": "noKernel", "message": f"no running kernel for {params['notebookUri']}"}

    t0 = time.monotonic()
    with pytest.raises(KernelDead):
        await connect_relay(editor, NOTEBOOK, timeout=5)
    assert time.monotonic() - t0 < 5


async def test_an_editor_without_the_relay_is_kernel_dead() -> None:
    async def editor(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError(f"Unhandled method {method}")

    with pytest.raises(KernelDead):
        await connect_relay(editor, NOTEBOOK, timeout=5)


@pytest.mark.slow
async def test_a_restart_the_editor_reports_is_a_restart_for_the_link(fresh_kernel: TestKernel) -> None:
    events: list[KernelEvent] = []
    async with FakeEditor(fresh_kernel.connection_file) as editor:
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            link.add_listener(events.append)
            await link.snapshot(ProbeQuery(names=["x"]), timeout=60)
            fresh_kernel.manager.restart_kernel(now=True)
            fresh_kernel.client.wait_for_ready(timeout=60)
            editor.status = "restarting"  # what the Jupyter extension reports meanwhile
            assert await link.is_alive()
            editor.status = "idle"
            assert [e.kind for e in events] == ["restarted"]
            fresh_kernel.run("x = 'after'")
            snap = await link.snapshot(ProbeQuery(names=["x"]), timeout=60)  # the probe is installed again
            assert snap.variables["x"].kind == "str"
        finally:
            await link.close()


async def test_what_a_relay_cannot_do_is_refused_not_waited_for() -> None:
    async def editor(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"status": "idle"}

    transport = RelayTransport(editor, NOTEBOOK)
    got: list[tuple[str, dict[str, Any]]] = []
    await transport.start(lambda channel, msg: got.append((channel, msg)))
    for msg_type in ("interrupt_request", "list_subshell_request", "kernel_info_request"):
        transport.send("control", transport.new_message(msg_type, {}))
    await asyncio.sleep(0.1)
    assert sorted(m["msg_type"] for _, m in got) == [
        "interrupt_reply",
        "kernel_info_reply",
        "list_subshell_reply",
    ]
    assert all(m["content"]["status"] == "error" for _, m in got)
    assert not await transport.interrupt()
    with pytest.raises(NotImplementedError):
        await transport.restart()
    await transport.close()


# ---------------------------------------------------------------------- end to end through the server


def _server_takes_relay() -> bool:
    from crane_lsp.server.command_args import AttachArgs

    return "relay" in AttachArgs.model_fields


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.skipif(not _server_takes_relay(), reason="crane/attachKernel does not take {relay: true} yet")
async def test_the_server_reads_the_editors_kernel_through_the_relay(kernel: TestKernel) -> None:
    """A real ``crane-lsp serve`` told ``{notebookUri, relay: true}`` (what the extension sends when the
    kernel's file is not on its machine) probes the kernel through the LSP client, which answers the
    relay requests as the extension does."""
    import sys

    from lsprotocol import types
    from pytest_lsp import ClientServerConfig, LanguageClient

    from crane_lsp.server.config import plain
    from tests.server_client import (
        SERVER_ENV,
        Notebook,
        capabilities,
        end_session,
        has,
        wait_for,
        wait_status,
    )

    kernel.run("import pandas as pd\nrly_df = pd.DataFrame({'a': [1, 2]})")
    contract = json.loads(CONTRACT.read_text())
    command = [sys.executable, *contract["serverArgs"]]
    client = await ClientServerConfig(server_command=command, server_env=SERVER_ENV).start()
    assert isinstance(client, LanguageClient)
    statuses: list[dict[str, Any]] = []
    client.feature(contract["statusNotification"])(lambda params: statuses.append(plain(params)))
    async with FakeEditor(kernel.connection_file) as editor:
        before = kernel_state(kernel)

        inflight = [0, time.monotonic()]  # relayed requests being answered; when the last one ended

        async def relayed(method: str, params: Any) -> dict[str, Any]:
            inflight[0] += 1
            try:
                return await editor.send_request(method, plain(params))
            finally:
                inflight[0] -= 1
                inflight[1] = time.monotonic()

        @client.feature(RELAY_EXECUTE)
        async def relay_execute(params: Any) -> dict[str, Any]:
            return await relayed(RELAY_EXECUTE, params)

        @client.feature(RELAY_STATUS)
        async def relay_status(params: Any) -> dict[str, Any]:
            return await relayed(RELAY_STATUS, params)

        try:
            await client.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities(), initialization_options=contract["initializationOptions"]
                )
            )
            setup = "import pandas as pd\nrly_df = pd.DataFrame({'a': [1, 2]})"
            nb = Notebook(client, [(setup, 1), ("", None)])
            nb.open()
            client.protocol.notify(contract["attachKernel"]["method"], {"notebookUri": nb.uri, "relay": True})
            await wait_status(statuses, lambda s: s.get("kernel") in ("attached", "busy"))
            nb.edit(1, "print(rly_df.shape)\nrly_df['missing_col']\n")
            await wait_for(client, nb.cell_uris[1], has("KeyError", line=1))
            assert any(method == RELAY_EXECUTE for method, _ in editor.requests)
            # the server goes on through the relay after the verdict (it dry-runs the crash's fixes):
            # a request still being answered when the server exits trips pytest-lsp's teardown
            settle = time.monotonic() + 60
            while (inflight[0] or time.monotonic() - inflight[1] < 2.0) and time.monotonic() < settle:
                await asyncio.sleep(0.1)
            await end_session(client)
        finally:
            await client.stop()
    assert kernel_state(kernel) == before


@pytest.mark.slow
async def test_names_the_user_shadowed_do_not_break_the_relay(fresh_kernel: TestKernel) -> None:
    """Every object is hostile: the relayed code (and the probe's installer) find exec, compile, getattr,
    json, sys and print where the user cannot have rebound them."""
    fresh_kernel.run("exec = compile = print = json = sys = globals = getattr = 'mine'\nshadow_x = 1")
    async with FakeEditor(fresh_kernel.connection_file) as editor:
        before = kernel_state(fresh_kernel)
        link = await connect_relay(editor.send_request, NOTEBOOK)
        try:
            snap = await link.snapshot(ProbeQuery(names=["shadow_x", "exec"]), timeout=60)
            assert snap.variables["shadow_x"].kind == "int" and snap.variables["exec"].kind == "str"
        finally:
            await link.close()
    assert kernel_state(fresh_kernel) == before
    shadowed = fresh_kernel.eval("(exec, compile, print, json, sys, globals, getattr)")
    assert shadowed == "('mine', 'mine', 'mine', 'mine', 'mine', 'mine', 'mine')"
