"""Real headless Neovim on a ``# %%`` script with a real kernel: the squiggle on the right line and
column, hover, code actions, and the suggested fix applied by Neovim clears the squiggle — also
with a form feed (an Emacs page break) and an emoji before the error.

The editor side is ``tests/neovim/crane_test.lua``: the same configuration docs/lsp-editors.md gives.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TestKernel
from tests.editor_case import editor_case, editor_env, editor_marks, offers_column_fix

pytestmark = editor_marks("nvim", "package neovim")

LUA = Path(__file__).parent / "neovim" / "crane_test.lua"
GUARD = Path(__file__).resolve().parents[1] / "editors" / "neovim" / "crane_guard.lua"


@pytest.mark.parametrize("odd", [False, True], ids=["plain", "formfeed-emoji"])
def test_neovim_squiggle_hover_action_fix(kernel: TestKernel, tmp_path: Path, odd: bool) -> None:
    case = editor_case(kernel, tmp_path, "nv_sales", odd)
    target, line = case.target, case.line
    out = tmp_path / "nvim.json"
    env = {
        **editor_env(kernel, "NVIM", case, out),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "CRANE_NVIM_GUARD": str(GUARD),
    }
    subprocess.run(
        ["nvim", "--headless", "--clean", "-u", str(LUA)],
        env=env,
        timeout=220,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen
    assert seen["attached"]["attached"] is True, seen  # crane.attachKernel, as docs/lsp-editors.md has it
    diag = seen["diag"]
    assert diag["code"] == "KeyError" and "amout" in diag["message"], seen
    assert diag["lnum"] == line, (diag, line)  # the file's line, as Neovim counts it
    assert diag["col"] == len(target[: target.index("'amout'")].encode("utf-8")), diag  # a byte column
    assert "KeyError" in seen["hover"] and f"line {line + 1}" in seen["hover"], seen["hover"]
    assert offers_column_fix(seen["actions"]), seen["actions"]
    assert seen["after"] == 0 and "nv_sales['amount']" in seen["line"], seen
    # the run guard: asked three times about the crash (cancel: nothing sent; run anyway: the cell
    # sent; show: the cursor on the crash, nothing sent), the first cell (run already, no verdict)
    # sent unasked; once the fix is verified, a fourth time, with the fix (the buffer edited, the
    # edited cell sent; undone after); the fixed cell sent without a question
    guard = seen["guard"]
    outcomes = [guard[k] for k in ("cancelled", "anyway", "show", "first", "with_fix", "fixed")]
    assert outcomes == ["cancelled", "ran anyway", "shown", "ran", "ran with the fix", "ran"], guard
    assert guard["shown_at"] == line, guard
    assert len(guard["asked"]) == 4 and guard["asked_after_fix"] == 0, guard
    assert len(guard["sent"]) == 4, guard
    question = guard["asked"][0]
    assert question.startswith(f"crane: this cell raises KeyError at line {line + 1} ("), (question, line)
    assert "amout" in question and "Run anyway?" in question, question
    # with a verified fix: named after the question, a fourth choice after the three
    assert guard["verified"] is True, guard
    with_fix = guard["asked"][3]
    assert with_fix.endswith("Run anyway? Fix: Use 'amount' (runs clean in a dry run)."), with_fix
    assert guard["offered"][3] == "&Run anyway\n&Show\n&Cancel\nRun with the &fix", guard
    assert target.replace("'amout'", "'amount'") == guard["with_fix_line"], guard
    assert guard["undone"] is True and guard["blocks_again"] is True, guard
    cell, first, ran_fixed, fixed = guard["sent"]
    assert target in cell and "x = 1" in cell and "# %%" not in cell, cell
    assert first.startswith("import pandas as pd") and target not in first, first
    assert ran_fixed == cell.replace("'amout'", "'amount'"), (ran_fixed, cell)
    assert "nv_sales['amount']" in fixed, fixed
