"""The hard end for a hung test (tests/hang_guard.py), on a real pytest run with xdist workers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from pytest_lsp import ClientServerConfig

from tests.server_client import end_session

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import time
import pytest

@pytest.fixture
def stuck():
    yield
    time.sleep(600)  # a teardown that never ends, after the test's own timeout failed it

@pytest.mark.timeout(1)
def test_hangs_in_its_teardown(stuck):
    time.sleep(600)

def test_beside_it():
    assert True
"""


def test_a_teardown_hung_past_the_timeout_ends_its_worker_names_the_test_and_shows_its_stack(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = {**os.environ, "CRANE_TEST_HANG_GRACE_S": "2"}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("CRANE_TEST_HANG_DIR", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--rootdir",
            str(tmp_path),
            str(probe),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "worker 'gw" in out and "crashed while running" in out and "test_hangs_in_its_teardown" in out, out
    assert "a test hung: every thread's stack" in out, out
    assert "test_probe.py::test_hangs_in_its_teardown hung past its timeout" in out, out
    assert "in stuck" in out, out  # the teardown's own frame: where it hung
    assert "1 passed" in out, out


async def test_end_session_ends_a_server_that_never_answers() -> None:
    """pytest-lsp's ``stop()`` waits for the server process with no limit: ``end_session`` leaves none."""
    silent = [sys.executable, "-c", "import time; time.sleep(600)"]
    client = await ClientServerConfig(server_command=silent).start()
    server = client._server
    assert server is not None and server.returncode is None
    await end_session(client, limit_s=2)
    assert server.returncode is not None
    await asyncio.wait_for(client.stop(), 10)


def test_no_lsp_test_ends_its_server_with_shutdown_session_alone() -> None:
    """``end_session`` is the one way a test ends a server (CONTRIBUTING.md, "A test that hangs")."""
    offenders = [
        path.name
        for path in sorted((REPO / "tests").glob("*.py"))
        if path.name not in ("server_client.py", Path(__file__).name)
        and ".shutdown_session()" in path.read_text(encoding="utf-8")
    ]
    assert offenders == [], f"use tests.server_client.end_session in {offenders}"
