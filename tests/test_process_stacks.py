"""A test that times out waiting on its kernel says what the kernel process was doing: its threads'
Python stacks (py-spy) while it lives, its exit status once it is gone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.conftest import start_test_kernel, stop_test_kernel
from tests.process_stacks import py_spy

HELD = "import time\ndef waiting_on_purpose():\n    time.sleep(60)\nwaiting_on_purpose()\n"


def test_a_timeout_shows_where_the_kernel_is(tmp_path: Path) -> None:
    if py_spy() is None:
        pytest.skip("py-spy is not installed (the test extra installs it)")
    kernel = start_test_kernel(tmp_path)
    try:
        with pytest.raises(TimeoutError) as caught:
            kernel.run(HELD, timeout=3)
        said = str(caught.value)
        assert "Timeout waiting for output (3 s); alive" in said, said[:500]
        assert "stacks of the kernel process" in said and "waiting_on_purpose" in said, said[:3000]
    finally:
        stop_test_kernel(kernel)


def test_a_timeout_on_a_dead_kernel_says_how_it_ended(tmp_path: Path) -> None:
    kernel = start_test_kernel(tmp_path)
    try:
        pid = kernel.manager.provisioner.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        kernel.manager.provisioner.process.wait(10)  # type: ignore[union-attr]
        with pytest.raises(TimeoutError) as caught:
            kernel.run("1 + 1\n", timeout=2)
        assert f"the kernel process is dead (exit status {-signal.SIGKILL})" in str(caught.value)
    finally:
        stop_test_kernel(kernel)
