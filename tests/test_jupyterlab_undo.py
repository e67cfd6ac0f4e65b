"""Undo after a real crash, in a real JupyterLab (issue 37): Debian chromium driven by Playwright.

With crane's ``undo`` setting on (the extension's settings, forwarded to the server), a cell builds a
DataFrame and the next drops a column in place, then raises. The crashed cell shows what it changed
before raising, with an Undo button; clicking it puts ``df`` back (read through the page: a cell
prints its columns) and says so in one line on the cell; the next run clears that line. The
palette's "crane: Undo last cell" answers on the cell it undid.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from tests.browser_util import screenshot_dir
from tests.jupyterlab_util import JupyterProc, wait_kernel_ready
from tests.test_jupyterlab_browser import FIRST_RUN_S, Lab, browser, crane_jupyter, open_notebook

__all__ = ["browser"]  # the Chromium fixture, shared with the JupyterLab suite

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2], "b": [3, 4], "c": [5, 6]})',
    'df.drop(columns=["b"], inplace=True)\nraise ValueError("after the drop")',
    "print(list(df.columns))",
]
#: the kernel was told to hold a copy before each cell (the server does it once it binds the kernel)
#: crane's user settings: undo on; a small reserve (a loaded CI machine may have less than 1 GiB free)
UNDO_SETTINGS = {"debounceMs": 300, "undo": True, "undoReserve": 64}
CONFIGURED = "__import__('sys').modules['_crane_probe']._uh_state.get('config', {}).get('on') is True"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    proc = crane_jupyter(tmp_path_factory.mktemp("jlab-undo"), {"undo.ipynb": CELLS}, UNDO_SETTINGS)
    proc.start(timeout=FIRST_RUN_S)
    try:
        yield proc
    finally:
        proc.stop()


def _configured(lab: JupyterProc, timeout: float) -> bool:
    """Whether the notebook's kernel holds copies within ``timeout``: asked by a silent
    ``user_expressions`` request from a client of our own (no cell, nothing in the history)."""
    (session,) = lab.api("GET", "api/sessions")
    kc = BlockingKernelClient(connection_file=str(lab.runtime_dir / f"kernel-{session['kernel']['id']}.json"))
    kc.load_connection_file()
    kc.start_channels()
    try:
        wait_kernel_ready(kc)
        deadline = time.monotonic() + timeout
        while True:
            msg_id = kc.execute("", silent=True, store_history=False, user_expressions={"on": CONFIGURED})
            reply = kc.get_shell_msg(timeout=30)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=30)
            value = reply["content"].get("user_expressions", {}).get("on", {})
            if value.get("data", {}).get("text/plain") == "True":
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.3)
    finally:
        kc.stop_channels()


def _crash(ui: Lab, proc: JupyterProc) -> float:
    """Run the frame's cell, then the cell that drops a column and raises; the time it finished."""
    page = ui.page
    ui.start(0)
    ui.wait(lambda: ui.prompt(0) == "[1]:", timeout=FIRST_RUN_S, what="the first cell to finish")
    if not _configured(proc, 20.0):
        # the server tells the kernel once per link when it binds it; that one request can lose a race
        # with the server's own first check on a loaded machine (KernelBusy), and is sent again at the
        # next edit: type a space at the end of the last cell, as a user would
        print("\nthe kernel was not told to hold copies: an edit tells it again")
        ui.cell(2).locator(".cm-content").click()
        page.keyboard.press("Control+End")
        page.keyboard.type(" ")
        assert _configured(proc, 60.0), "the kernel was not told to hold copies, even after an edit"
    ui.start(1)
    ran = ui.wait(lambda: ui.prompt(1) == "[2]:", timeout=60, what="the crashing cell to finish")
    assert "ValueError" in ui.cell(1).locator(".jp-OutputArea").inner_text()
    return ran


def test_undo_button_on_a_crashed_cell_puts_the_column_back(browser: Any, lab: JupyterProc) -> None:
    ui = open_notebook(browser, lab, "undo.ipynb")
    page = ui.page
    ran = _crash(ui, lab)
    box = ui.cell(1).locator(".crane-undo")
    line = box.locator(".crane-undo-line")
    shown = ui.wait(lambda: line.count() == 1, timeout=30, what="the undo line on the crashed cell")
    print(f"\ncrash -> undo line: {(shown - ran) * 1000:.0f} ms")
    assert line.inner_text().startswith("Before raising at line 2 the cell "), line.inner_text()
    assert line.locator("code").all_inner_texts() == ["df"], line.inner_text()
    assert "Undo: command" not in line.inner_text(), "the button stands for the hover's pointer"
    assert ui.cell(0).locator(".crane-undo").count() == 0 and ui.cell(2).locator(".crane-undo").count() == 0
    button = box.locator("button.crane-undo-button")
    assert button.inner_text() == "Undo"
    page.screenshot(path=str(screenshot_dir() / "jupyterlab-undo.png"))

    ui.cell(1).click(button="right")  # the command is in the cell's context menu too
    assert page.locator(".lm-Menu .lm-Menu-item", has_text="crane: Undo last cell").count() == 1
    page.keyboard.press("Escape")

    button.click()
    answer = box.locator(".crane-undo-answer")
    ui.wait(lambda: answer.count() == 1, timeout=60, what="the undo's answer")
    assert answer.inner_text().startswith("Undone: restored df"), answer.inner_text()
    assert answer.get_attribute("data-ok") == "true" and button.count() == 0
    assert "ValueError" in ui.cell(1).locator(".jp-OutputArea").inner_text(), "outputs are never touched"
    assert ui.prompt(1) == "[2]:"
    page.screenshot(path=str(screenshot_dir() / "jupyterlab-undone.png"))

    # the kernel's df has its column back; the next run ends the line (undo is for the last cell)
    ui.start(2)
    ui.wait(lambda: ui.prompt(2) == "[3]:", timeout=60, what="the printing cell to run")
    assert ui.cell(2).locator(".jp-OutputArea").inner_text().strip() == "['a', 'b', 'c']"
    ui.wait(lambda: box.count() == 0, timeout=10, what="the line to go once another cell ran")

    # the palette's command: a clean cell undone, its answer on that cell
    ui.cell(2).locator(".cm-content").click()
    page.keyboard.press("Escape")
    ui.palette("crane: Undo last cell")
    palette_answer = ui.cell(2).locator(".crane-undo .crane-undo-answer")
    ui.wait(lambda: palette_answer.count() == 1, timeout=60, what="the palette undo's answer")
    assert palette_answer.inner_text() == "Undone: nothing to put back (the cell changed no name)"
    assert not ui.crane_errors(), ui.crane_errors()
    page.context.close()


def test_notebook7_shows_the_line_and_undoes(browser: Any, tmp_path: Path) -> None:
    proc = crane_jupyter(tmp_path, {"undo7.ipynb": CELLS}, UNDO_SETTINGS, app="notebook", log_level=None)
    proc.start(timeout=FIRST_RUN_S)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        ui = Lab(page)
        page.goto(f"{proc.url}notebooks/undo7.ipynb?token={proc.token}", wait_until="domcontentloaded")
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=FIRST_RUN_S * 1000)
        ui.wait(lambda: "✓ attached" in ui.status().inner_text(), timeout=FIRST_RUN_S, what="crane attached")
        _crash(ui, proc)
        box = ui.cell(1).locator(".crane-undo")
        ui.wait(lambda: box.locator(".crane-undo-line").count() == 1, timeout=30, what="the undo line")
        assert box.locator(".crane-undo-line code").all_inner_texts() == ["df"]
        page.screenshot(path=str(screenshot_dir() / "notebook7-undo.png"))
        box.locator("button.crane-undo-button").click()
        answer = box.locator(".crane-undo-answer")
        ui.wait(lambda: answer.count() == 1, timeout=60, what="the undo's answer")
        assert answer.inner_text().startswith("Undone: restored df"), answer.inner_text()
        ui.start(2)
        ui.wait(lambda: ui.prompt(2) == "[3]:", timeout=60, what="the printing cell to run")
        assert ui.cell(2).locator(".jp-OutputArea").inner_text().strip() == "['a', 'b', 'c']"
        assert not ui.crane_errors(), ui.crane_errors()
        context.close()
    finally:
        proc.stop()
