"""Last keystroke → ``publishDiagnostics`` through ``crane-lsp serve``, built-in checks only.

Run by hand: ``python3 benchmarks/server_latency.py [--edits 60]``. Starts a real kernel holding a
few DataFrames and a fitted scikit-learn model, the server over stdio (debounce 0, so the debounce
delay is excluded), attaches the kernel the way the VS Code client does, then times edits to one
cell (alternating crashing and clean texts) until the diagnostics for that cell arrive. Prints the
median and p95, client-measured and as the server reports it (``crane/status.lastLatencyMs``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types
from pytest_lsp import make_test_lsp_client

from tests.conftest import start_test_kernel, stop_test_kernel
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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(edits: int) -> None:
    kernel = start_test_kernel()
    client = make_test_lsp_client()
    try:
        kernel.run(STATE)
        await client.start_io(*SERVER_COMMAND, env=SERVER_ENV)
        statuses = await start(client, {"debounce": 0, "dryRun": "off"})
        nb = Notebook(client, [(STATE.strip(), 1), ("", None)])
        nb.open()
        client.protocol.notify(
            "crane/attachKernel", {"notebookUri": nb.uri, "connectionFile": kernel.connection_file}
        )
        await asyncio.sleep(1.0)
        samples: list[float] = []
        server_side: list[float] = []
        crashes = 0
        for i in range(edits + 3):  # the first three warm up the probe and the parser caches
            waiting = asyncio.ensure_future(
                client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            )
            text = TEXTS[i % len(TEXTS)] + f"\n# edit {i}"
            t0 = time.perf_counter()
            nb.edit(1, text)
            while True:
                params = await asyncio.wait_for(waiting, 30)
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
        print(f"edits timed: {len(samples)} ({crashes} with a crash diagnostic)")
        print(
            f"keystroke → publishDiagnostics (client): median {statistics.median(samples):.1f} ms, "
            f"p95 {pct(samples, 0.95):.1f} ms, max {max(samples):.1f} ms"
        )
        if server_side:
            print(
                f"check job (server, lastLatencyMs):      median {statistics.median(server_side):.1f} ms, "
                f"p95 {pct(server_side, 0.95):.1f} ms"
            )
        await client.shutdown_session()
    finally:
        await client.stop()
        stop_test_kernel(kernel)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=60)
    asyncio.run(main(parser.parse_args().edits))
