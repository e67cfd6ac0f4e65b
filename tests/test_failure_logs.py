"""A failed test that used a real Jupyter server shows the end of that server's log in its report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = """
from pathlib import Path

import pytest

from tests.jupyterlab_util import JupyterProc

pytestmark = pytest.mark.kernel


def test_fails_after_stopping_its_server(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    server = JupyterProc(root=tmp_path / "root", dirs=tmp_path / "dirs")
    server.start()
    try:
        server.api("GET", "api/kernels")
        assert False, "failing on purpose"
    finally:
        server.stop()  # stopped before pytest writes the report, as many tests do


def test_passes_with_its_own_server(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    server = JupyterProc(root=tmp_path / "root", dirs=tmp_path / "dirs")
    server.start()
    server.stop()
"""


def test_a_failed_test_shows_its_jupyter_servers_log_and_a_passing_one_does_not(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "CRANE_TEST_HANG_DIR")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-rA",
         "--rootdir", str(tmp_path), str(probe)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "1 failed, 1 passed" in out, out
    failed = out[out.index("test_fails_after_stopping_its_server") :]
    assert "Jupyter server logs (call)" in out, out
    assert "--- jupyter server on port" in failed and "ServerApp" in failed, out
    assert "api/kernels" in failed, "the log's end holds the test's own request"
    assert out.count("Jupyter server logs") == 1, "only the failed test reports a log"
