"""``crane-lsp serve`` as an editor feels it, built-in checks only.

Run by hand: ``python3 benchmarks/server_latency.py [--edits 60] [--soak 2000] [--big 20000]``.
Starts a real kernel holding a few DataFrames and a fitted scikit-learn model, the server over
stdio (debounce 0, so the debounce delay is excluded), attaches the kernel the way the VS Code
client does, and prints:

- time to ``initialize`` (process start → reply), median of three starts;
- keystroke → ``publishDiagnostics`` for one cell (alternating crashing and clean texts): median and
  p95, client-measured and as the server reports it (``crane/status.lastLatencyMs``);
- the longest event-loop stall while a ``--big``-line cell is checked: hovers on a small cell are
  sent back to back until the big cell's diagnostic arrives; the slowest answer bounds the stall;
- server RSS growth over ``--soak`` edits (kB per edit), read from ``/proc/<pid>/status``;
- ``--big-frame``: keystroke → diagnostic again with a 5,000,000 x 20 frame in the kernel and a cell
  that groups it by a misspelt column, each edit changing the misspelling (the held snapshot of the
  frame serves every edit while the kernel stands still);
- ``--pandas2 DIR`` (``pip install --target DIR "pandas>=2.2,<3"``): the keystroke figures for a
  second kernel with DIR laid over the venv too, in the same run, beside the venv's pandas 3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from tests.conftest import TestKernel, start_test_kernel, stop_test_kernel
from tests.raw_client import RawServer
from tests.server_client import SERVER_COMMAND, SERVER_ENV, Notebook, start

STATE = """
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
train_df = pd.DataFrame(rng.normal(size=(50_000, 12)), columns=[f"f{i}" for i in range(12)])
train_df["target"] = (train_df["f0"] > 0).astype(int)
test_df = train_df.drop(columns=["f11", "target"]).head(1000)
sales = pd.DataFrame({"store": rng.integers(0, 50, 200_000), "amount": rng.gamma(2.0, 10.0, 200_000)})
model = LogisticRegression(max_iter=200).fit(train_df.drop(columns=["target"]), train_df["target"])
"""

TEXTS = [
    "top = sales['nope_col'].head()\nprint(top)",
    "top = sales['amount'].head()\nprint(top)",
    "X = train_df.drop(columns=['target'])\npreds = model.predict(X)\nprint(preds[:5], undefined_name)",
    "X = train_df.drop(columns=['target'])\npreds = model.predict(X)\nprint(preds[:5])",
    "cols = test_df.columns\nscore = test_df['f0'].mean() + train_df['missing_feature'].mean()",
    "cols = test_df.columns\nscore = test_df['f0'].mean() + train_df['f1'].mean()",
]


BIG_FRAME = """
import numpy as np, pandas as pd
_r = np.random.default_rng(1)
_n = 5_000_000
big = pd.DataFrame({
    **{f"f{i}": _r.normal(size=_n) for i in range(8)},
    **{f"i{i}": _r.integers(0, 1000, _n) for i in range(4)},
    **{f"c{i}": pd.Series(_r.choice(["red", "green", "blue", "cyan"], _n), dtype=object) for i in range(3)},
    "flag": _r.integers(0, 2, _n).astype(bool),
    "when": pd.date_range("2020-01-01", periods=_n, freq="s"),
    "cat": pd.Categorical(_r.choice(["a", "b", "c"], _n)),
    "nan_f": np.where(_r.random(_n) < 0.1, np.nan, 1.0),
    "id": np.arange(_n),
})
del _r, _n
"""
#: each edit changes the misspelt column (a KeyError the checks prove from the probed columns)
BIG_TEXTS = [f"counts = big.groupby('colour{i}').size()\nprint(counts)" for i in range(8)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def interpreter_start_ms() -> float:
    """The floor: starting this Python and doing nothing (site, .pth files), median of three."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def start_and_exit(starts: int = 3) -> tuple[float, float, int | None]:
    """(process start -> ``initialize`` answered, ``exit`` sent -> process gone) medians in ms, and
    the last exit status; each server is given a moment to finish importing before shutdown."""
    inits, exits, status = [], [], None
    for _ in range(starts):
        started = time.perf_counter()
        server = RawServer()
        server.initialize()
        inits.append((time.perf_counter() - started) * 1000)
        time.sleep(1.5)
        server.reply(server.request("shutdown", None))
        sent = time.perf_counter()
        server.notify("exit", None)
        status = server.proc.wait(timeout=10)
        exits.append((time.perf_counter() - sent) * 1000)
    return statistics.median(inits), statistics.median(exits), status


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def next_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    while True:
        params = await client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return list(params.diagnostics)


async def longest_stall(client: LanguageClient, nb: Notebook, lines: int) -> tuple[float, float, int]:
    """(slowest hover ms, check duration s, hovers answered) while a ``lines``-line cell is checked."""
    body = "\n".join(f"v{i} = v{i - 1} + np.sqrt({i})" for i in range(1, lines))
    text = f"import numpy as np\nv0 = 1\n{body}\nprint(big_cell_missing_name)\n"
    done = asyncio.ensure_future(
        _until(client, nb.cell_uris[1], lambda ds: any("big_cell_missing_name" in d.message for d in ds))
    )
    started = time.perf_counter()
    nb.edit(1, text)
    slowest, hovers = 0.0, 0
    while not done.done():
        t0 = time.perf_counter()
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=nb.cell_uris[0]),
                position=types.Position(line=0, character=1),
            )
        )
        slowest, hovers = max(slowest, (time.perf_counter() - t0) * 1000), hovers + 1
        await asyncio.sleep(0.005)
    return slowest, time.perf_counter() - started, hovers


async def _until(client: LanguageClient, uri: str, predicate: object) -> None:
    while not predicate(await next_diagnostics(client, uri)):  # type: ignore[operator]
        pass


async def keystrokes(
    client: LanguageClient, nb: Notebook, texts: list[str], edits: int, statuses: list[dict]
) -> tuple[list[float], list[float], int]:
    """Client-measured keystroke → publishDiagnostics of cell 1 (after three warm-up edits), the server's
    own ``lastLatencyMs`` for each, and how many edits got a crash diagnostic."""
    samples: list[float] = []
    server_side: list[float] = []
    crashes = 0
    for i in range(edits + 3):  # the first three warm up the probe and the parser caches
        waiting = asyncio.ensure_future(
            client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        )
        text = texts[i % len(texts)] + f"\n# edit {i}"
        t0 = time.perf_counter()
        nb.edit(1, text)
        while True:
            params = await asyncio.wait_for(waiting, 60)
            if params.uri == nb.cell_uris[1]:
                break
            waiting = asyncio.ensure_future(
                client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            )
        elapsed = (time.perf_counter() - t0) * 1000
        await asyncio.sleep(0.05)  # let the status after the publish arrive
        if i >= 3:
            samples.append(elapsed)
            crashes += bool(params.diagnostics)
            if statuses and statuses[-1].get("lastLatencyMs") is not None:
                server_side.append(float(statuses[-1]["lastLatencyMs"]))
    return samples, server_side, crashes


def report(what: str, samples: list[float], server_side: list[float], crashes: int) -> None:
    print(f"{what}: edits timed: {len(samples)} ({crashes} with a crash diagnostic)")
    print(
        f"  keystroke → publishDiagnostics (client): median {statistics.median(samples):.1f} ms, "
        f"p95 {pct(samples, 0.95):.1f} ms, max {max(samples):.1f} ms"
    )
    if server_side:
        print(
            f"  check job (server, lastLatencyMs):      median {statistics.median(server_side):.1f} ms, "
            f"p95 {pct(server_side, 0.95):.1f} ms"
        )


def start_kernel_with(pythonpath: str | None) -> TestKernel:
    """A test kernel; ``pythonpath`` laid over the venv (pandas 2, as ``.ci/run`` does) when given."""
    saved = os.environ.get("PYTHONPATH")
    if pythonpath:
        os.environ["PYTHONPATH"] = pythonpath + (os.pathsep + saved if saved else "")
    try:
        return start_test_kernel()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


async def attached(client: LanguageClient, kernel: TestKernel, first_cell: str, order: int) -> Notebook:
    """A new notebook (its first cell ran as ``order``, the second is edited) attached to ``kernel``."""
    nb = Notebook(client, [(first_cell.strip(), order), ("", None)])
    nb.open()
    client.protocol.notify(
        "crane/attachKernel", {"notebookUri": nb.uri, "connectionFile": kernel.connection_file}
    )
    await asyncio.sleep(1.0)
    return nb


async def kernel_figures(
    client: LanguageClient,
    statuses: list[dict],
    kernel: TestKernel,
    label: str,
    edits: int,
    *,
    small: bool,
    big: bool,
) -> None:
    """Keystroke figures for one kernel: the small state, then the 5M x 20 frame."""
    version = kernel.eval("__import__('pandas').__version__")
    if small:
        nb = await attached(client, kernel, STATE, 1)
        figures = await keystrokes(client, nb, TEXTS, edits, statuses)
        report(f"{label}, pandas {version}, small state", *figures)
    if big:
        kernel.run(BIG_FRAME, timeout=600)
        nb = await attached(client, kernel, BIG_FRAME, 2)
        figures = await keystrokes(client, nb, BIG_TEXTS, edits, statuses)
        report(f"{label}, pandas {version}, 5M x 20 frame, misspelt groupby column", *figures)
        kernel.run("del big")


async def main(edits: int, soak: int, big: int, big_frame: bool = False, pandas2: str | None = None) -> None:
    floor = interpreter_start_ms()
    init_ms, exit_ms, status = start_and_exit()
    print(f"time to initialize (median of 3 starts): {init_ms:.0f} ms (python -c pass: {floor:.0f} ms)")
    print(f"exit after `exit` (median of 3): {exit_ms:.0f} ms, status {status}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    kernel = start_test_kernel()
    second = start_kernel_with(pandas2) if pandas2 else None
    client = make_test_lsp_client()
    try:
        if second is not None:
            second.run(STATE)
        kernel.run(STATE)
        await client.start_io(*SERVER_COMMAND, env=SERVER_ENV)
        statuses = await start(client, {"debounce": 0, "dryRun": "off"})
        nb = Notebook(client, [(STATE.strip(), 1), ("", None)])
        nb.open()
        client.protocol.notify(
            "crane/attachKernel", {"notebookUri": nb.uri, "connectionFile": kernel.connection_file}
        )
        await asyncio.sleep(1.0)
        report("venv kernel, small state", *await keystrokes(client, nb, TEXTS, edits, statuses))
        if big_frame:
            await kernel_figures(client, statuses, kernel, "venv kernel", edits, small=False, big=True)
        if second is not None:
            await kernel_figures(
                client, statuses, second, "pandas-2 kernel", edits, small=True, big=big_frame
            )
        if big:
            slowest, took, hovers = await longest_stall(client, nb, big)
            print(
                f"{big:,}-line cell checked in {took:.1f} s; longest event-loop stall meanwhile "
                f"(slowest of {hovers} hovers): {slowest:.0f} ms"
            )
        if soak:
            pid = client._server.pid if client._server else 0
            for i in range(700):  # warm up: the parse cache (512 texts) fills, then growth is what stays
                nb.edit(1, TEXTS[i % len(TEXTS)] + f"\n# warm {i}")
                if i % 50 == 0:
                    await asyncio.sleep(0.05)
            nb.edit(1, "x = 1")
            await asyncio.sleep(2.0)
            before = rss_kb(pid)
            for i in range(soak):
                nb.edit(1, TEXTS[i % len(TEXTS)] + f"\n# soak {i}")
                if i % 50 == 0:
                    await asyncio.sleep(0.05)  # typing speed: let checks run
            nb.edit(1, "x = 2")
            await asyncio.sleep(3.0)
            after = rss_kb(pid)
            print(
                f"RSS over {soak} edits: {before / 1024:.1f} → {after / 1024:.1f} MiB "
                f"({(after - before) / soak:.2f} kB per edit)"
            )
        await client.shutdown_session()
    finally:
        await client.stop()
        stop_test_kernel(kernel)
        if second is not None:
            with contextlib.suppress(Exception):
                stop_test_kernel(second)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--soak", type=int, default=2000, help="edits for the RSS soak (0: skip)")
    parser.add_argument("--big", type=int, default=20_000, help="lines of the big cell (0: skip)")
    parser.add_argument("--big-frame", action="store_true", help="also with a 5M x 20 frame in the kernel")
    parser.add_argument("--pandas2", metavar="DIR", help="a pandas 2 --target install: a second kernel")
    args = parser.parse_args()
    asyncio.run(main(args.edits, args.soak, args.big, args.big_frame, args.pandas2))
