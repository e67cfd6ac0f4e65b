"""Undo after a crash in a real VS Code (issue 37): code-server in headless chromium, as in
tests/test_vscode_codeserver.py, in a window of its own whose User settings turn ``crane.undo`` on
from the start (as a user who wants it has them). There is no Jupyter extension here, so a cell runs
from another client of the same kernel: it changes a list in place, then raises. "crane: Undo last
cell" from the command palette puts the list back, and its message says what came back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from tests.test_vscode_codeserver import SETUP, Kernel, Workbench, open_workbench, start_kernel

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

CONFIGURED = "__import__('sys').modules['_crane_probe']._uh_state.get('config', {}).get('on') is True"


def _evaluate(kernel: Kernel, expression: str) -> str:
    """``expression`` in the kernel's namespace by a silent request (no cell: nothing to undo)."""
    msg_id = kernel.client.execute("", silent=True, store_history=False, user_expressions={"v": expression})
    while True:
        reply = kernel.client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            value = reply["content"]["user_expressions"]["v"]
            return str(value.get("data", {}).get("text/plain", value))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = start_kernel(tmp_path_factory.mktemp("kernel-undo"), SETUP)
    yield k
    k.stop()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory, kernel: Kernel) -> Iterator[Workbench]:
    settings = {
        "crane.server.pythonPath": sys.executable,
        "crane.connectionFile": kernel.connection_file,
        "crane.undo": True,
        "crane.undoReserve": 64,  # a loaded CI machine may have less than the default 1 GiB free
    }
    with open_workbench(tmp_path_factory.mktemp("vscode-undo"), settings) as bench:
        yield bench


def test_undo_after_a_crash_from_the_command_palette(workbench: Workbench, kernel: Kernel) -> None:
    bench = workbench
    bench.open_file("analysis.ipynb", ".notebookOverlay .cell-editor-container .view-line")
    bench.wait(lambda: "Kernel attached" in bench.status(), "crane to attach the kernel", 120)
    probe = "'_crane_probe' in __import__('sys').modules and " + CONFIGURED
    bench.wait(lambda: _evaluate(kernel, probe) == "True", "the kernel told to hold copies", 120)
    kernel.run("cs_rows = [1, 2]")
    crashed = kernel.client.execute_interactive(  # the append happens, then IndexError
        "cs_rows.append(3)\ncs_rows[99]", timeout=120, output_hook=lambda msg: None
    )
    assert crashed["content"]["ename"] == "IndexError", crashed["content"]
    assert _evaluate(kernel, "cs_rows") == "[1, 2, 3]"
    started = time.monotonic()
    bench.palette("crane: Undo last cell")
    toast = bench.page.locator(".notifications-toasts", has_text="Restored cs_rows")
    toast.first.wait_for(timeout=30_000)
    print(f"\npalette -> undone: {time.monotonic() - started:.1f} s")
    assert _evaluate(kernel, "cs_rows") == "[1, 2]"
    bench.palette("crane: Undo last cell")  # once only: the same cell cannot be undone twice
    again = bench.page.locator(".notifications-toasts", has_text="undone already")
    again.first.wait_for(timeout=30_000)
