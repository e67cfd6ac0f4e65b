"""A probe round trip and a dry run over a Jupyter Server's kernel websocket, beside the same over ZeroMQ.

Run by hand: ``python benchmarks/remote_kernel.py [N]`` (default 20). Starts a ``jupyter server`` (this
user, 127.0.0.1, a random token) and one kernel on it; crane reaches that SAME kernel twice: by its URL
(websocket, both framings: a second server forces the legacy JSON one) and by its connection file
(ZeroMQ). Prints the median and p90 of N snapshots of a 5-column DataFrame and of N dry runs of a cell
that raises, per transport. The token is never printed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.remote import KernelUrl, start_kernel
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ProbeQuery

SETUP = (
    "import numpy as np, pandas as pd\n"
    "bench_df = pd.DataFrame(np.random.default_rng(0).random((10_000, 5)), columns=list('abcde'))"
)
FAILING = "total = bench_df['a'].sum()\nbench_df['A']"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(root: Path, runtime: Path, token: str, legacy: bool) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    args = [
        sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}", "--port-retries=0",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]  # fmt: skip
    if legacy:
        args.append("--ZMQChannelsWebsocketConnection.kernel_ws_protocol=")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            req = urllib.request.Request(url + "/api/status", headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(req, timeout=2).close()
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("jupyter server did not start")


def _figures(label: str, values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return f"  {label:<34} median {statistics.median(values):8.1f} ms   p90 {p90:8.1f} ms   (n={len(values)})"


async def _measure(link: KernelLink, n: int) -> tuple[list[float], list[float]]:
    query = ProbeQuery(names=["bench_df"])
    await link.snapshot(query)  # the probe installed, caches warm
    probes = []
    for _ in range(n):
        t0 = time.perf_counter()
        await link.snapshot(query)
        probes.append((time.perf_counter() - t0) * 1000)
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)  # type: ignore[arg-type, call-arg]
    pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
    runs = []
    for _ in range(max(n // 2, 3)):
        t0 = time.perf_counter()
        run = await pipeline.predict(FAILING, layers={"dryrun"}, bypass_cache=True)
        runs.append((time.perf_counter() - t0) * 1000)
        assert run.prediction.crash and run.prediction.certainty == "observed", run.prediction
    return probes, runs


async def main(n: int) -> None:
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as tmp:
        for legacy in (False, True):
            root, runtime = Path(tmp) / f"root{int(legacy)}", Path(tmp) / f"runtime{int(legacy)}"
            root.mkdir()
            proc, server_url = _server(root, runtime, token, legacy)
            try:
                url: KernelUrl = await start_kernel(server_url, token)
                framing = "legacy JSON" if legacy else "v1 binary"
                ws = await KernelLink.connect_url(url, token, timeout=60)
                zmq = await KernelLink.connect(runtime / f"kernel-{url.kernel_id}.json", timeout=30)
                assert (await zmq.execute(SETUP)).ok
                print(f"one kernel, {n} probe round trips and {max(n // 2, 3)} dry runs per transport")
                for label, link in ((f"websocket ({framing})", ws), ("ZeroMQ (connection file)", zmq)):
                    probes, runs = await _measure(link, n)
                    print(_figures(f"{label}: probe", probes))
                    print(_figures(f"{label}: dry run", runs))
                await ws.close()
                await zmq.close()
            finally:
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
