"""A probe round trip and a dry run through the editor relay, beside the same over ZeroMQ.

Run by hand: ``python benchmarks/relay_kernel.py [N]`` (default 20). Starts one kernel; crane reaches
that SAME kernel twice: by its connection file (ZeroMQ) and through the relay, with
tests/relay_editor.py's stand-in editor answering ``crane/kernelRelay/execute`` on the kernel the way
the VS Code extension does with ``kernel.executeCode`` (``silent: false, store_history: false``). The
LSP hop between server and editor is left out (a local pipe, well under a millisecond); the Jupyter
extension's own overhead in VS Code is not measured here. Prints the median and p90 of N snapshots of a
5-column DataFrame and of N dry runs of a cell that raises, per transport.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crane_lsp.dryrun import DryRunner
from crane_lsp.kernel.link import KernelLink
from crane_lsp.kernel.transport_relay import connect_relay
from crane_lsp.pipeline import Pipeline
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ProbeQuery
from tests.relay_editor import FakeEditor

SETUP = (
    "import numpy as np, pandas as pd\n"
    "bench_df = pd.DataFrame(np.random.default_rng(0).random((10_000, 5)), columns=list('abcde'))"
)
FAILING = "total = bench_df['a'].sum()\nbench_df['A']"


def _figures(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{name:<28} median {statistics.median(ordered):7.1f} ms   p90 {p90:7.1f} ms   (n={len(ordered)})"


async def _measure(link: KernelLink, n: int) -> tuple[list[float], list[float]]:
    query = ProbeQuery(names=["bench_df"])
    await link.snapshot(query, timeout=60)  # installs the probe
    probes = []
    for _ in range(n):
        t0 = time.perf_counter()
        await link.snapshot(query, timeout=60)
        probes.append((time.perf_counter() - t0) * 1000)
    settings = Settings(dry_run="on", dry_run_budget_s=10.0)  # type: ignore[arg-type, call-arg]
    pipeline = Pipeline(settings, link=link, dryrun=DryRunner(link, settings))
    runs = []
    for _ in range(n):
        t0 = time.perf_counter()
        run = await pipeline.predict(FAILING, layers={"dryrun"})
        runs.append((time.perf_counter() - t0) * 1000)
        assert run.prediction.crash and run.prediction.certainty == "observed", run.prediction
    return probes, runs


async def main(n: int) -> None:
    owner = await KernelLink.start(quiet=True)
    try:
        await owner.execute(SETUP)
        assert owner.connection_file is not None
        zmq = await KernelLink.connect(owner.connection_file)
        try:
            probes, runs = await _measure(zmq, n)
        finally:
            await zmq.close()
        print(_figures("probe, ZeroMQ", probes))
        print(_figures("dry run, ZeroMQ", runs))
        async with FakeEditor(str(owner.connection_file)) as editor:
            relay = await connect_relay(editor.send_request, "file:///bench.ipynb")
            try:
                probes, runs = await _measure(relay, n)
            finally:
                await relay.close()
        print(_figures("probe, relay", probes))
        print(_figures("dry run, relay", runs))
    finally:
        await owner.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
