"""``check --cell N`` predicts against the state the user had: the cells run before the target, in
execution order, never the ones run after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from crane_lsp.notebook import Cell, Notebook


def test_replay_order_leaves_out_cells_run_after_the_target() -> None:
    nb = Notebook(
        cells=[
            Cell("a = 1", execution_count=1),
            Cell("print(b)", execution_count=2),  # the target: ran second
            Cell("b = 2", execution_count=3),  # ran after the target: not part of its state
            Cell("c = 3", execution_count=None),  # never ran
        ]
    )
    assert nb.replay_order(1) == [0]
    assert nb.replay_order(3) == [0, 1, 2]  # a never-run target sees everything that ran
    # the order is the execution order, not the notebook order
    swapped = Notebook(cells=[Cell("x = y + 1", execution_count=5), Cell("y = 1", execution_count=4)])
    assert swapped.replay_order(1) == [] and swapped.replay_order(0) == [1]


def test_check_cell_uses_the_state_the_target_saw(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1", execution_count=1),
        nbformat.v4.new_code_cell("total = a + b", execution_count=2),
        nbformat.v4.new_code_cell("b = 2", execution_count=3),
    ]
    path = tmp_path / "later.ipynb"
    nbformat.write(nb, path)
    cmd = [sys.executable, "-m", "crane_lsp.cli", "check", str(path), "--cell", "2", "--predictors", "checks"]
    proc = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)
    [result] = json.loads(proc.stdout)
    assert (result["crash"], result["exception"], result["certainty"]) == (True, "NameError", "certain")
    # the human output names the cells that built the state, by notebook position (1-based)
    shown = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = shown.stdout + shown.stderr
    assert "built by code cells 1 (execution order)" in text
    # and really: in a kernel that ran only cell 1, the target raises NameError
    ns: dict[str, object] = {}
    exec("a = 1", ns)
    try:
        exec("total = a + b", ns)
    except NameError:
        pass
    else:
        raise AssertionError("the target should raise NameError in that state")
