"""``crane-lsp check --jupyter-server URL``: the replay on a kernel started on a real Jupyter server.

The token comes from ``JUPYTER_TOKEN`` or ``--token-file`` (never argv); the kernel is shut down
afterwards, after a crash found, a wrong token, and Ctrl-C in the middle of the replay alike; no output
shows the token.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jupyterlab_util import JupyterProc, write_notebook

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

TOKEN = secrets.token_hex(24)
CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"price": [1.5, 2.0], "qty": [3, 4]})',
    'total = df["prise"].sum()',
]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def jserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    base = tmp_path_factory.mktemp("check-remote")
    (base / "root").mkdir()
    proc = JupyterProc(root=base / "root", dirs=base / "jupyter", token=TOKEN)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env["PYTHONPATH"] = str(REPO)
    if token is not None:
        env["JUPYTER_TOKEN"] = token
    return env


def _check(args: list[str], token: str | None, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "crane_lsp.cli", "check", *args]
    return subprocess.run(cmd, env=_env(token), capture_output=True, text=True, timeout=timeout)


def _kernels(proc: JupyterProc) -> list[dict[str, Any]]:
    return list(proc.api("GET", "api/kernels"))


def _no_kernels_left(proc: JupyterProc, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while _kernels(proc):
        assert time.monotonic() < deadline, f"kernels left on the server: {_kernels(proc)}"
        time.sleep(0.5)


def test_the_replay_runs_on_the_server_and_its_kernel_is_shut_down(
    jserver: JupyterProc, tmp_path: Path
) -> None:
    nb = tmp_path / "sales.ipynb"
    write_notebook(nb, CELLS)
    done = _check([str(nb), "--cell", "2", "--jupyter-server", jserver.url], TOKEN)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "KeyError" in done.stdout and "prise" in done.stdout
    assert TOKEN not in done.stdout + done.stderr
    _no_kernels_left(jserver)


def test_the_walk_with_the_token_in_a_file(jserver: JupyterProc, tmp_path: Path) -> None:
    nb = tmp_path / "walk.ipynb"
    write_notebook(nb, CELLS)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    args = [str(nb), "--json", "--jupyter-server", jserver.url, "--token-file", str(token_file)]
    done = _check(args, None)
    assert done.returncode == 1, done.stderr[-3000:]
    cells = json.loads(done.stdout)
    assert [c["crash"] for c in cells] == [False, True]
    assert cells[1]["actual"] == "KeyError"  # the walk ran the cell on the server: it did raise
    assert TOKEN not in done.stdout + done.stderr
    _no_kernels_left(jserver)


def test_a_wrong_token_is_one_line_and_starts_nothing(jserver: JupyterProc, tmp_path: Path) -> None:
    nb = tmp_path / "sales.ipynb"
    write_notebook(nb, CELLS)
    wrong = secrets.token_hex(24)
    done = _check([str(nb), "--cell", "2", "--jupyter-server", jserver.url], wrong)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "refused the token" in errors[0], done.stderr[-2000:]
    assert wrong not in done.stdout + done.stderr and TOKEN not in done.stderr
    assert not _kernels(jserver)


def test_ctrl_c_in_the_replay_shuts_the_kernel_down(jserver: JupyterProc, tmp_path: Path) -> None:
    nb = tmp_path / "slow.ipynb"
    write_notebook(nb, ["import time\ntime.sleep(300)", "x = 1"])
    cmd = [
        sys.executable,
        "-m",
        "crane_lsp.cli",
        "check",
        str(nb),
        "--cell",
        "2",
        "--jupyter-server",
        jserver.url,
    ]
    child = subprocess.Popen(cmd, env=_env(TOKEN), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not [k for k in _kernels(jserver) if k.get("execution_state") == "busy"]:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the slow cell never ran on the server"
            time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 2, err[-2000:]
    _no_kernels_left(jserver)
