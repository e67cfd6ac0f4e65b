"""KernelLink against real kernels: probe round trips, restarts, busy kernels, history, execution, death."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import pytest

from crane_lsp.kernel.link import (
    KernelBusy,
    KernelDead,
    KernelEvent,
    KernelLink,
    ProbeError,
    failing_line,
)
from crane_lsp.kernel.transport_zmq import START_ATTEMPTS
from crane_lsp.snapshot import ProbeQuery
from tests.conftest import TestKernel
from tests.ports import free_port


async def test_connect_by_file_and_snapshot_leaves_count(kernel: TestKernel) -> None:
    kernel.run("link_x = 41\nlink_df = __import__('pandas').DataFrame({'a': [1, 2]})")
    count_before = kernel.eval("get_ipython().execution_count")
    async with await KernelLink.connect(kernel.connection_file) as link:
        assert "kernel subshells" in link.features
        assert not link.busy
        snap = await link.snapshot(ProbeQuery(names=["link_x", "link_df", "nope_not_here"]))
        assert snap.variables["link_x"].kind == "int"
        assert snap.variables["link_df"].shape == [2, 1]
        assert "nope_not_here" in snap.undefined
        assert not snap.taken_while_busy
        # second query: the probe is already installed, one round trip
        t0 = time.perf_counter()
        data = await link.call("snapshot", ProbeQuery(names=["link_x"]).model_dump())
        assert (time.perf_counter() - t0) < 2.0
        assert data["variables"]["link_x"]["kind"] == "int"
    assert kernel.eval("get_ipython().execution_count") == count_before


async def test_probe_error_is_typed(kernel: TestKernel) -> None:
    async with await KernelLink.connect(kernel.connection_file) as link:
        with pytest.raises(ProbeError, match="no_such_entry"):
            await link.call("no_such_entry", {})


async def test_restart_then_snapshot_reinstalls(fresh_kernel: TestKernel) -> None:
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        fresh_kernel.run("before = 1")
        assert (await link.snapshot(ProbeQuery(names=["before"]))).variables["before"].kind == "int"
        fresh_kernel.manager.restart_kernel(now=True)
        fresh_kernel.client.wait_for_ready(timeout=60)
        fresh_kernel.run("after = 'x'")
        snap = await link.snapshot(ProbeQuery(names=["before", "after"]), timeout=30)
        assert snap.variables["after"].kind == "str"
        assert "before" in snap.undefined
        assert fresh_kernel.eval("'_crane_probe' in __import__('sys').modules") == "True"


async def test_restart_by_another_client_is_counted_without_a_probe(fresh_kernel: TestKernel) -> None:
    """Another client restarts the kernel and runs a cell: the link counts the restart from IOPub alone,
    before crane asks the kernel anything: from the new process's "starting", or, when that went out
    before IOPub reconnected, from its busy/idle signed with a new session."""
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        await link.snapshot(ProbeQuery(names=["x"]))
        await asyncio.to_thread(fresh_kernel.manager.restart_kernel, now=True)
        await asyncio.to_thread(fresh_kernel.client.wait_for_ready, timeout=60)
        await asyncio.to_thread(fresh_kernel.run, "y = 1")  # the other client's first cell in the new process
        deadline = time.monotonic() + 10
        while (link.restarts == 0 or link.generation != 1) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert link.restarts >= 1
        assert link.generation == 1


async def test_busy_kernel_answers_through_subshell(fresh_kernel: TestKernel) -> None:
    fresh_kernel.run("ready = 3")
    events: list[KernelEvent] = []
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        link.add_listener(events.append)
        fresh_kernel.client.execute("import time; time.sleep(5)")
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        snap = await link.snapshot(ProbeQuery(names=["ready"]), timeout=10)
        elapsed = time.monotonic() - t0
        assert snap.taken_while_busy
        assert snap.variables["ready"].kind == "int"
        assert elapsed < 2.5, elapsed
        assert link.busy
        with pytest.raises(KernelBusy, match="must wait"):  # not read-only: never beside a cell
            await link.call("dry_run", {"source": "1"})
        history = await link.history()  # answered on the control channel while busy
        assert history[-1].source == "import time; time.sleep(5)"
        assert await link.wait_idle(timeout=15)
        assert any(e.kind == "cell_finished" for e in events)
        assert link.generation == history[-1].execution_count
        snap = await link.snapshot(ProbeQuery(names=["ready"]))
        assert not snap.taken_while_busy


async def test_busy_kernel_seen_at_connect_and_without_subshells(fresh_kernel: TestKernel) -> None:
    fresh_kernel.client.execute("import time; time.sleep(4)")
    time.sleep(0.3)
    t0 = time.monotonic()
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        assert link.busy  # learned from the unanswered main-shell ping, not from a status we saw
        link.features.discard("kernel subshells")
        with pytest.raises(KernelBusy, match="busy"):
            await link.snapshot(ProbeQuery(names=["x"]))
        assert time.monotonic() - t0 < 2.0
        with pytest.raises(KernelBusy):
            await link.call_detailed("snapshot", {}, allow_busy=False)


async def test_history_in_execution_order_and_cell_events(fresh_kernel: TestKernel) -> None:
    for code in ("a = 1", "b = a + 1", "%pwd"):
        fresh_kernel.run(code)
    events: list[KernelEvent] = []
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        link.add_listener(events.append)
        await link.snapshot(ProbeQuery(names=["c"]))  # silent probes are not history
        fresh_kernel.eval("a")  # another client's silent execute: not a cell
        await asyncio.sleep(0.3)
        assert events == []
        fresh_kernel.run("c = b * 2")
        await asyncio.sleep(0.3)
        assert [(e.kind, e.generation) for e in events] == [("cell_started", 4), ("cell_finished", 4)]
        assert link.generation == 4
        cells = await link.history()
    assert [c.execution_count for c in cells] == [1, 2, 3, 4]
    assert cells[0].source == "a = 1" and cells[2].source == "%pwd" and cells[3].source == "c = b * 2"


async def test_concurrent_requests_on_one_link(kernel: TestKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several requests in flight at once, from several callers: each gets its own reply, promptly."""
    kernel.run("conc_x = 7")
    # no periodic look at the sockets: replies must be routed by ZeroMQ's wake-ups alone
    monkeypatch.setattr(KernelLink, "reader_wakeup_s", 3600.0)
    query = ProbeQuery(names=["conc_x"])
    for _ in range(3):
        async with await KernelLink.connect(kernel.connection_file) as link:
            t0 = time.monotonic()
            # the reply to the first request arrives while the event loop is held up (a busy server),
            # then the second request is sent: that send used to swallow the reply's wake-up, and
            # both requests timed out with their replies queued
            first = asyncio.ensure_future(link.history(timeout=5))
            await asyncio.sleep(0)  # the first request is sent
            time.sleep(0.2)
            second = await link.history(timeout=5)
            assert second == await first and second[-1].source == "conc_x = 7"
            pair = await asyncio.gather(link.history(timeout=5), link.history(timeout=5))
            assert pair[0] == pair[1] == second
            snaps = await asyncio.gather(
                link.snapshot(query, timeout=8), link.snapshot(query, timeout=8), link.history(timeout=5)
            )
            assert all(s.variables["conc_x"].kind == "int" for s in snaps[:2])
            answers = await asyncio.gather(*(link.call("snapshot", {"names": [f"v{i}"]}) for i in range(4)))
            assert [a["undefined"] for a in answers] == [[f"v{i}"] for i in range(4)]  # routed by msg_id
            assert time.monotonic() - t0 < 4.0
            assert not link._pending  # nothing left waiting


async def test_silent_probes_are_never_cells(kernel: TestKernel) -> None:
    """The link's own requests never produce cell events, however late their status messages come;
    a real cell run by another client produces exactly one started / finished pair."""
    events: list[KernelEvent] = []
    async with await KernelLink.connect(kernel.connection_file) as link:
        link.add_listener(events.append)
        query = ProbeQuery(names=["silent_x"])
        for _ in range(40):
            await link.snapshot(query)
        await asyncio.gather(*(link.snapshot(query) for _ in range(5)), link.history())
        await link.call("snapshot", {})
        await asyncio.sleep(0.5)  # let every trailing status message arrive
        assert events == []
        assert not link.busy
        count = kernel.run("silent_x = 1")["execution_count"]
        for _ in range(100):
            if any(e.kind == "cell_finished" for e in events):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # and nothing more comes
        assert [(e.kind, e.generation) for e in events] == [("cell_started", count), ("cell_finished", count)]
        assert (await link.snapshot(query)).variables["silent_x"].kind == "int"
        await asyncio.sleep(0.3)
        assert len(events) == 2


async def test_start_execute_reports_error_line(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("hello")
    async with await KernelLink.start(tmp_path, quiet=True) as link:
        assert link.owns_kernel
        ok = await link.execute("print(open('data.txt').read())\nz = 5")
        assert ok.ok and ok.stdout == "hello\n" and ok.execution_count == 1
        bad = await link.execute("x = 1\n\ndef f():\n    return {}['k']\nf()\ny = 2")
        assert bad.status == "error" and bad.ename == "KeyError"
        assert bad.line == 4  # the cell's own line that led to the crash (0-based)
        syntax = await link.execute("a = 1\nb = (")
        assert syntax.ename == "SyntaxError"
        snap = await link.snapshot(ProbeQuery(names=["z", "y"]))
        assert snap.variables["z"].kind == "int" and "y" in snap.undefined
        timed = await link.execute("import time; time.sleep(30)", timeout=1.0)
        assert timed.status == "timeout"
        assert (await link.execute("z")).ok  # the interrupt left a working kernel
        manager = link._manager
    assert manager is not None and not await manager.is_alive()


def test_failing_line_parses_ipython_tracebacks() -> None:
    tb = ["\x1b[0;31mCell \x1b[0;32mIn[7], line 3\x1b[0m\n      1 a\n----> 3 b", "Cell In[2], line 9"]
    assert failing_line(tb, 7) == 2
    assert failing_line(tb, 2) == 8
    assert failing_line(tb, 5) is None


async def test_dead_connection_file_is_kernel_dead_quickly(tmp_path: Path) -> None:
    info = {
        "shell_port": free_port(),
        "iopub_port": free_port(),
        "stdin_port": free_port(),
        "control_port": free_port(),
        "hb_port": free_port(),
        "ip": "127.0.0.1",
        "key": "k",
        "transport": "tcp",
        "signature_scheme": "hmac-sha256",
        "kernel_name": "python3",
    }
    cf = tmp_path / "kernel-dead.json"
    cf.write_text(json.dumps(info))
    t0 = time.monotonic()
    with pytest.raises(KernelDead, match="not running"):
        await KernelLink.connect(cf)
    with pytest.raises(KernelDead, match="does not exist"):
        await KernelLink.connect(tmp_path / "missing.json")
    assert time.monotonic() - t0 < 1.0


async def test_kernel_dying_under_a_link(fresh_kernel: TestKernel) -> None:
    async with await KernelLink.connect(fresh_kernel.connection_file) as link:
        await link.snapshot(ProbeQuery())
        fresh_kernel.manager.signal_kernel(signal.SIGKILL)
        time.sleep(0.3)
        t0 = time.monotonic()
        with pytest.raises(KernelDead):
            await link.snapshot(ProbeQuery(), timeout=20.0)
        assert time.monotonic() - t0 < 2.0  # noticed by the liveness check, not the timeout
        with pytest.raises(KernelDead):
            await link.history(timeout=20.0)


#: a kernel launcher whose first start finds a port of its connection file taken (held by the kernel's
#: own process, so it is freed when that process ends), as when another process takes it meanwhile
PORT_TAKER = """
import json, os, socket, sys
connection_file, tries = sys.argv[1], sys.argv[2]
with open(tries, "a") as f:
    f.write("start\\n")
with open(tries) as f:
    first = f.read().count("start") == 1
if first or os.environ.get("CRANE_TEST_ALWAYS_TAKEN"):
    with open(connection_file) as f:
        port = json.load(f)["stdin_port"]
    taker = socket.socket()
    taker.bind(("127.0.0.1", port))
    taker.listen()
    os.set_inheritable(taker.fileno(), True)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file])
"""


def _port_taking_kernelspec(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernelspec ``crane-port-taken`` under ``root``, found through JUPYTER_PATH; returns the file
    its starts are counted in."""
    spec = root / "kernels" / "crane-port-taken"
    spec.mkdir(parents=True)
    (root / "taker.py").write_text(PORT_TAKER)
    tries = root / "starts.txt"
    argv = [sys.executable, str(root / "taker.py"), "{connection_file}", str(tries)]
    kernel_json = {"argv": argv, "display_name": "taken", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel_json))
    monkeypatch.setenv("JUPYTER_PATH", str(root))
    return tries


async def test_a_new_kernel_whose_port_was_taken_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries = _port_taking_kernelspec(tmp_path, monkeypatch)
    async with await KernelLink.start(tmp_path, kernel_name="crane-port-taken", quiet=True) as link:
        assert (await link.execute("x = 41 + 1\nprint(x)")).stdout == "42\n"
    assert tries.read_text().count("start") == 2  # the first kernel ended with "Address already in use"


async def test_a_kernel_that_never_starts_is_refused_after_a_few_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries = _port_taking_kernelspec(tmp_path, monkeypatch)
    monkeypatch.setenv("CRANE_TEST_ALWAYS_TAKEN", "1")
    with pytest.raises(KernelDead, match="did not start"):
        await KernelLink.start(tmp_path, kernel_name="crane-port-taken", quiet=True, timeout=60)
    assert tries.read_text().count("start") == START_ATTEMPTS
