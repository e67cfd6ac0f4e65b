"""Kernels behind a REAL Jupyter Server run as another user, reached only by URL and token.

The server (``tests/remote_server_util.py``) runs as ``crane-remote`` from its own venv; crane gets the
kernel's URL and the token, nothing else. The tests' own observer reads the kernel through its
connection file (as root it can), only with silent ``user_expressions``, to prove what crane left.

Shown over both framings (v1 binary, and the legacy JSON a gateway-mode server forces): the probe, a
dry-run-observed crash through the pipeline, a busy kernel (subshell answers, writing entry points
refused), a restart (the probe reinstalled), a proxy in front of the server going away and coming back on
its port (reconnect; unreachable in between), the server itself restarting (the kernel gone: one clear
message), a wrong token (one message, no token in it), and the kernel's state unchanged by all of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelBusy, KernelDead, KernelEvent, KernelLink, KernelRefused
from crane_lsp.kernel.remote import KernelUrl, find_session_kernel, parse_kernel_url
from crane_lsp.kernel.transport_ws import V1_PROTOCOL, WebSocketTransport
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ProbeQuery
from tests.ports import free_port
from tests.remote_server_util import Observer, RemoteServer, TcpProxy, make_root, new_token

# the first run may build the remote user's venv (a minute or two; CI does it in .ci/setup.d first)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="runs the server as another user: needs root"),
]

SETUP = (
    "import random, pandas as pd\n"
    "random.seed(7)\n"
    "sales = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3]})"
)
FAILING = "by_region = sales.groupby('region')['units'].sum()\nsales['Units']"


@pytest.fixture(scope="module", params=["v1", "legacy"])
def server(request: pytest.FixtureRequest) -> Iterator[RemoteServer]:
    legacy = request.param == "legacy"
    srv = RemoteServer(free_port(), new_token(), make_root(request.param), gateway_legacy=legacy)
    srv.start()
    yield srv
    srv.remove()


@pytest.fixture
def kernel_id(server: RemoteServer) -> Iterator[str]:
    kid = server.start_kernel()
    yield kid
    with contextlib.suppress(OSError):
        server.api("DELETE", f"/api/kernels/{kid}")


@pytest.fixture
def observer(server: RemoteServer, kernel_id: str) -> Iterator[Observer]:
    path = server.connection_file(kernel_id)
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    obs = Observer(path)
    assert obs.run(SETUP)["status"] == "ok"
    yield obs
    obs.close()


@pytest.fixture
async def link(server: RemoteServer, kernel_id: str, observer: Observer) -> AsyncIterator[KernelLink]:
    lnk = await KernelLink.connect_url(KernelUrl(server.url, kernel_id), server.token, timeout=30)
    yield lnk
    await lnk.close()


def _pipeline(link: KernelLink) -> Pipeline:
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)  # type: ignore[arg-type, call-arg]
    return Pipeline(settings, link=link, dryrun=DryRunner(link, settings))


async def test_probe_and_dry_run_leave_no_trace(
    server: RemoteServer,
    kernel_id: str,
    observer: Observer,
    link: KernelLink,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    assert link.connection_file is None and link.kernel_url == KernelUrl(server.url, kernel_id)
    expected = V1_PROTOCOL if not server.gateway_legacy else None
    assert isinstance(link.transport, WebSocketTransport) and link.transport.subprotocol == expected
    before = observer.state()  # after crane's websocket opened (the server's own nudge is done by then)

    snap = await link.snapshot(ProbeQuery(names=["sales", "nothing_here"]))
    frame = snap.variables["sales"]
    assert frame.kind == "dataframe" and [c.name for c in frame.columns or []] == ["region", "units"]
    assert "nothing_here" in snap.undefined and not snap.taken_while_busy

    run = await _pipeline(link).predict(FAILING, layers={"dryrun"})
    prediction = run.prediction
    assert prediction.crash and prediction.certainty == "observed", prediction
    assert prediction.exception == "KeyError" and prediction.line == 1
    pipeline = _pipeline(link)  # the prepared child: forked ahead, then serving the next dry run
    assert isinstance(pipeline.dryrun, DryRunner)
    prepared = await pipeline.dryrun.prepare(link.generation)
    assert prepared is not None and prepared.outcome == "prepared", prepared
    again = (await pipeline.predict(FAILING, layers={"dryrun"})).prediction
    assert again.exception == "KeyError" and again.certainty == "observed"
    assert (await link.history())[-1].source == SETUP

    assert observer.state() == before  # names, execution count, history, the seeded RNG
    assert observer.eval("'by_region' in globals()") == "False"  # the dry run ran in a fork
    assert server.token not in caplog.text
    assert await link.is_alive() and await link.responsive()


async def test_busy_kernel_answers_on_a_subshell(observer: Observer, link: KernelLink) -> None:
    events: list[KernelEvent] = []
    link.add_listener(events.append)
    sleeper = "import time\ntime.sleep(6)\nafter_sleep = 1"
    msg_id = observer.start(sleeper)
    deadline = time.monotonic() + 10
    while not link.busy and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert link.busy and [e.kind for e in events] == ["cell_started"]
    snap = await link.snapshot(ProbeQuery(names=["sales"]), timeout=20)
    assert snap.taken_while_busy and snap.variables["sales"].kind == "dataframe"
    with pytest.raises(KernelBusy, match="kernel busy: cell"):
        await link.call("dry_run", {}, timeout=5)  # a dry run must wait for the cell
    assert observer.wait(msg_id)["status"] == "ok"
    assert await link.wait_idle(20)
    assert [e.kind for e in events] == ["cell_started", "cell_finished"]
    assert 5.0 < link.cell_seconds[sleeper] < 30.0  # the kernel's own timing, for the dry run's forecast
    assert "after_sleep" in observer.eval("sorted(k for k in globals() if not k.startswith('_'))")


async def test_restart_reinstalls_the_probe(server: RemoteServer, link: KernelLink) -> None:
    await link.snapshot(ProbeQuery(names=["sales"]))
    restarts = link.restarts
    await link.transport.restart()
    deadline = time.monotonic() + 30
    while link.restarts == restarts and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert link.restarts > restarts
    snap = await link.snapshot(ProbeQuery(names=["sales"]), timeout=30)
    assert "sales" in snap.undefined  # a fresh process, and the probe answers again
    assert await link.is_alive()


async def test_kernel_crash_and_autorestart(observer: Observer, link: KernelLink) -> None:
    """The kernel process dies mid-session; the server restarts it (its autorestarter) and says so on
    IOPub: the link counts a restart and the probe answers from the fresh process."""
    await link.snapshot(ProbeQuery(names=["sales"]))
    restarts = link.restarts
    observer.start("import os\nos._exit(1)")
    deadline = time.monotonic() + 60
    while link.restarts == restarts and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert link.restarts > restarts
    snap = await link.snapshot(ProbeQuery(names=["sales"]), timeout=30)
    assert "sales" in snap.undefined and await link.is_alive()


async def test_proxy_going_away_and_coming_back(
    server: RemoteServer, kernel_id: str, observer: Observer
) -> None:
    proxy = TcpProxy(server.port)
    await proxy.start()
    url = KernelUrl(f"http://127.0.0.1:{proxy.port}", kernel_id)
    async with await KernelLink.connect_url(url, server.token, timeout=30) as link:
        transport = link.transport
        assert isinstance(transport, WebSocketTransport)
        transport.unreachable_after_s = 2.0
        before = observer.state_but_rng()
        await link.snapshot(ProbeQuery(names=["sales"]))
        await proxy.stop()
        await asyncio.sleep(0.5)
        assert await link.is_alive()  # within the grace: a blip is not a dead kernel
        await asyncio.sleep(2.5)
        assert not await link.is_alive()
        assert transport.gone_reason == f"the Jupyter server at {url.base_url} has not answered for 3 s" or (
            transport.gone_reason or ""
        ).startswith(f"the Jupyter server at {url.base_url} has not answered for ")
        with pytest.raises(KernelDead, match="has not answered for"):
            await link.snapshot(ProbeQuery(names=["sales"]), timeout=3)
        await proxy.start()  # the same port again
        deadline = time.monotonic() + 20
        while transport.reconnects == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert transport.reconnects == 1 and await link.is_alive()
        snap = await link.snapshot(ProbeQuery(names=["sales"]), timeout=20)
        assert snap.variables["sales"].kind == "dataframe"
        assert observer.state_but_rng() == before
        # the server "nudges" every new websocket with kernel_info requests, and IPython 9 picks a random
        # banner tip for each: the reconnect itself moved ``random`` (any frontend's reconnect does);
        # crane's own requests on the new socket do not
        rng = observer.rng()
        await link.snapshot(ProbeQuery(names=["sales"]))
        assert (await _pipeline(link).predict(FAILING, layers={"dryrun"})).prediction.crash
        assert observer.rng() == rng and observer.state_but_rng() == before
    await proxy.stop()


async def test_hung_server_is_unreachable_then_back(server: RemoteServer, link: KernelLink) -> None:
    """A server that stops answering but keeps its socket open (SIGSTOP: a hung host) is unreachable after
    the grace, from REST alone; it is alive again as soon as it answers."""
    transport = link.transport
    assert isinstance(transport, WebSocketTransport) and server.proc is not None
    transport.unreachable_after_s, transport.status_every_s = 3.0, 0.5
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 30
        while await link.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not await link.is_alive()
        silent = f"the Jupyter server at {server.url} has not answered for "
        assert (transport.gone_reason or "").startswith(silent)
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while not await link.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert await link.is_alive()
    snap = await link.snapshot(ProbeQuery(names=["sales"]), timeout=20)
    assert snap.variables["sales"].kind == "dataframe"


async def test_wrong_token_is_one_clear_message(
    server: RemoteServer, kernel_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = new_token()
    with pytest.raises(KernelRefused) as info:
        await KernelLink.connect_url(KernelUrl(server.url, kernel_id), wrong, timeout=10)
    assert str(info.value) == f"the Jupyter server at {server.url} refused the token (403)"
    assert wrong not in caplog.text and server.token not in caplog.text
    with pytest.raises(KernelRefused, match=r"needs a token \(403\): set JUPYTER_TOKEN or the jupyterToken"):
        await KernelLink.connect_url(KernelUrl(server.url, kernel_id), None, timeout=10)
    with pytest.raises(KernelDead, match=r"is gone \(the server has no such kernel: 404\)"):
        await KernelLink.connect_url(KernelUrl(server.url, "no-such-kernel"), server.token, timeout=10)
    nobody = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(KernelDead, match=rf"^the Jupyter server at {nobody} is not reachable \("):
        await KernelLink.connect_url(KernelUrl(nobody, kernel_id), server.token, timeout=10)


async def test_sessions_and_owned_kernels(server: RemoteServer) -> None:
    link = await KernelLink.start_remote(server.url, server.token, timeout=60)
    url = link.kernel_url
    assert url is not None and link.owns_kernel
    body = {"path": "work/analysis.ipynb", "type": "notebook", "kernel": {"id": url.kernel_id}}
    session = server.api("POST", "/api/sessions", body)
    assert isinstance(session, dict)
    assert await find_session_kernel(server.url, server.token, "work/analysis.ipynb") == url
    assert await find_session_kernel(server.url, server.token, f"{server.root}/work/analysis.ipynb") == url
    assert await find_session_kernel(server.url, server.token, "/elsewhere/analysis.ipynb") == url  # by name
    assert await find_session_kernel(server.url, server.token, "other.ipynb") is None
    assert (await link.execute("x = 41 + 1")).ok
    timed = await link.execute("import time\ntime.sleep(60)", timeout=2.0)  # interrupted through REST
    assert timed.status == "timeout" and (await link.execute("x")).ok
    await link.close()
    kernels = server.api("GET", "/api/kernels")
    assert isinstance(kernels, list) and url.kernel_id not in {k["id"] for k in kernels}
    assert parse_kernel_url(str(url)) == url


async def test_server_restart_leaves_the_kernel_gone() -> None:
    srv = RemoteServer(free_port(), new_token(), make_root("restart"))
    srv.start()
    try:
        kid = srv.start_kernel()
        link = await KernelLink.connect_url(KernelUrl(srv.url, kid), srv.token, timeout=30)
        assert isinstance(link.transport, WebSocketTransport)
        link.transport.unreachable_after_s = 60.0  # the verdict must come from the server, not the clock
        await link.snapshot(ProbeQuery(names=["x"]))
        srv.stop()  # a real server stop shuts its kernels down
        srv.start()  # the same port
        deadline = time.monotonic() + 30
        while await link.is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert not await link.is_alive()
        where = f"kernel {kid[:8]} on the Jupyter server at {srv.url}"
        assert link.transport.gone_reason == f"{where} is gone (the server has no such kernel: 404)"
        with pytest.raises(KernelDead, match="is gone"):
            await link.snapshot(ProbeQuery(names=["x"]), timeout=5)
        await link.close()
    finally:
        srv.remove()
