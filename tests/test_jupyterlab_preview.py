"""Try a cell in the sandbox, in a real JupyterLab and Notebook 7 (issue 37): Debian chromium driven by
Playwright.

A cell builds a DataFrame and is run for real; the next cell, which adds a column, prints and ends
with a value, is not run. "crane: Try cell in sandbox" from that cell's context menu shows, in a box
under it, what it would change ("adds column `ratio` to `df`", names as code), print and return,
while the kernel runs nothing: a third cell, run for real, prints the kernel's columns (no ``ratio``),
and the tried cell has no output and no execution count. The box's close button removes it; the
palette command shows it again, an edit of the cell removes it; the cell
toolbar's button shows it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_util import screenshot_dir
from tests.jupyterlab_util import JupyterProc
from tests.test_jupyterlab_browser import FIRST_RUN_S, Lab, browser, crane_jupyter, open_notebook

__all__ = ["browser"]  # the Chromium fixture, shared with the JupyterLab suite

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

CELLS = [
    'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})',
    "df['ratio'] = df['a'] / df['b']\nprint('rows', len(df))\ndf.shape",
    "print(list(df.columns))",
]
LABEL = "crane: Try cell in sandbox"
SETTINGS = {"debounceMs": 300}
#: the server waits for an idle kernel, then the copy's budget is 30 s
ANSWER_S = 90.0


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    proc = crane_jupyter(tmp_path_factory.mktemp("jlab-preview"), {"preview.ipynb": CELLS}, SETTINGS)
    proc.start(timeout=FIRST_RUN_S)
    try:
        yield proc
    finally:
        proc.stop()


def _attached(ui: Lab) -> None:
    """crane holds the kernel's link ("not attached" also says "attached": the check mark tells)."""
    ui.wait(lambda: "✓ attached" in ui.status().inner_text(), timeout=FIRST_RUN_S, what="crane attached")


def _select(ui: Lab, i: int) -> None:
    """Make cell ``i`` the active one, in command mode (its text untouched)."""
    ui.cell(i).locator(".cm-content").click()
    ui.page.keyboard.press("Escape")


def _try_from_context_menu(ui: Lab, i: int) -> Any:
    """The command from cell ``i``'s context menu; the box it shows, once it holds the answer."""
    _attached(ui)
    _select(ui, i)
    ui.cell(i).locator(".jp-InputPrompt").click(button="right")
    item = ui.page.locator(".lm-Menu .lm-Menu-item", has_text=LABEL)
    item.wait_for(state="visible", timeout=10_000)
    item.click()
    return _answered(ui, i)


def _answered(ui: Lab, i: int) -> Any:
    box = ui.cell(i).locator(".crane-preview")
    ui.wait(
        lambda: box.count() == 1 and box.get_attribute("data-state") != "pending",
        timeout=ANSWER_S,
        what="the preview's answer",
    )
    return box


def _check_answer(box: Any) -> None:
    assert box.get_attribute("data-state") == "shown", box.inner_text()
    head = box.locator(".crane-preview-verdict").inner_text()
    assert head == "Tried in a sandbox (the kernel is unchanged): ran clean", head
    change = box.locator(".crane-preview-diff li")
    assert "adds column ratio to df" in change.all_inner_texts(), change.all_inner_texts()
    added = box.locator(".crane-preview-diff li", has_text="adds column")
    assert added.locator("code").all_inner_texts() == ["ratio", "df"], "names render as code"
    assert box.locator("pre.crane-preview-stdout").inner_text() == "rows 3"
    assert box.locator("pre.crane-preview-result").inner_text() == "(3, 3)"


def _kernel_untouched(ui: Lab) -> None:
    """The tried cell has no output and no count; the kernel's df has no ``ratio`` (a real run says)."""
    assert ui.prompt(1) == "[ ]:", ui.prompt(1)
    assert ui.cell(1).locator(".jp-OutputArea-output").count() == 0
    ui.start(2)
    ui.wait(lambda: ui.prompt(2) == "[2]:", timeout=60, what="the printing cell to run")
    assert ui.cell(2).locator(".jp-OutputArea").inner_text().strip() == "['a', 'b']"


def test_try_in_sandbox_shows_the_change_the_output_and_the_value_without_running(
    browser: Any, lab: JupyterProc
) -> None:
    ui = open_notebook(browser, lab, "preview.ipynb")
    page = ui.page
    ui.start(0)
    ui.wait(lambda: ui.prompt(0) == "[1]:", timeout=FIRST_RUN_S, what="the first cell to finish")

    box = _try_from_context_menu(ui, 1)
    _check_answer(box)
    assert [ui.cell(i).locator(".crane-preview").count() for i in (0, 2)] == [0, 0], "one box, on its cell"
    page.screenshot(path=str(screenshot_dir() / "jupyterlab-preview.png"))
    _kernel_untouched(ui)
    assert box.count() == 1, "the box stays while its cell's text does"

    # the close button removes it
    box.locator("button.crane-preview-close").click()
    ui.wait(lambda: box.count() == 0, timeout=5, what="the box to close")

    # the palette's command on the active cell shows it again; an edit of the cell removes it
    _select(ui, 1)
    ui.palette(LABEL)
    box = _answered(ui, 1)
    _check_answer(box)
    ui.cell(1).locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" ")
    ui.wait(lambda: box.count() == 0, timeout=10, what="the box to go once the cell is edited")
    assert ui.prompt(1) == "[ ]:" and ui.cell(1).locator(".jp-OutputArea-output").count() == 0

    # the active cell's toolbar button does the same
    page.keyboard.press("Escape")
    button = ui.cell(1).locator('.jp-cell-toolbar [data-command="crane:try-cell-in-sandbox"]')
    button.click()
    _check_answer(_answered(ui, 1))
    assert ui.prompt(1) == "[ ]:" and ui.cell(1).locator(".jp-OutputArea-output").count() == 0

    assert not ui.crane_errors(), ui.crane_errors()
    page.context.close()


def test_notebook7_tries_a_cell_in_the_sandbox(browser: Any, tmp_path: Path) -> None:
    proc = crane_jupyter(tmp_path, {"preview7.ipynb": CELLS}, SETTINGS, app="notebook", log_level=None)
    proc.start(timeout=FIRST_RUN_S)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        ui = Lab(page)
        page.goto(f"{proc.url}notebooks/preview7.ipynb?token={proc.token}", wait_until="domcontentloaded")
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=FIRST_RUN_S * 1000)
        # the notebook's kernel is up once crane is attached to it: a cell run before that, while
        # Notebook 7 still connects its session, may stay queued (seen once in CI: 240 s at "[*]")
        ui.wait(lambda: "✓ attached" in ui.status().inner_text(), timeout=FIRST_RUN_S, what="crane attached")
        ui.start(0)
        ui.wait(lambda: ui.prompt(0) == "[1]:", timeout=FIRST_RUN_S, what="the first cell to finish")
        box = _try_from_context_menu(ui, 1)
        _check_answer(box)
        page.screenshot(path=str(screenshot_dir() / "notebook7-preview.png"))
        _kernel_untouched(ui)
        assert not ui.crane_errors(), ui.crane_errors()
        context.close()
    finally:
        proc.stop()
