"""A Dask distributed client in a real kernel, its scheduler frozen: the probe still answers from
``_meta`` (no scheduler is asked), and the dry run refuses, saying why."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from crane_lsp.kernel.probe_install import call_expression
from tests.ports import free_port
from tests.probe_util import _user_expressions, install_probe, snapshot

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[tuple[str, int]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        yield f"tcp://127.0.0.1:{port}", proc.pid
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(10)


def test_frozen_scheduler_neither_hangs_the_probe_nor_lets_the_dry_run_run(
    kernel: Any, scheduler: tuple[str, int]
) -> None:
    kernel.reset()
    kernel.run(
        "import pandas as pd, dask.dataframe as dd\nfrom distributed import Client\n"
        f"client = Client({scheduler[0]!r}, timeout=30)\n"
        "ddf = dd.from_pandas(pd.DataFrame({'a': [1, 2, 3], 'b': list('xyz')}), npartitions=1)\n",
        timeout=120,
    )
    install_probe(kernel)
    sched_pid = scheduler[1]
    os.kill(sched_pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        snap = snapshot(kernel, {"names": ["ddf", "client"], "object_budget_s": 1.0, "request_budget_s": 3.0})
        expr = call_expression("dry_run", {"source": "x = ddf.a.sum().compute()\n", "budget_s": 5.0})
        answer = _user_expressions(kernel, "", {"r": expr}, 60)["r"]
        took = time.monotonic() - started
    finally:
        os.kill(sched_pid, signal.SIGCONT)
    assert took < 6, took
    ddf = snap.variables["ddf"]
    assert ddf.kind == "dask_dataframe" and [c.name for c in ddf.columns or []] == ["a", "b"]
    result = answer["data"]["application/json"]
    assert result["outcome"] == "unavailable" and "Dask distributed client is live" in result["message"]
    kernel.run("client.close()")
    assert kernel.eval("__import__('sys').modules['_crane_probe']._frm_refusal()") == "None"
