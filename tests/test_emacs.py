"""Real headless Emacs (28, Debian's eglot 1.9) on a ``# %%`` script with a real kernel: the
diagnostic on the right line and column, hover, code action, and the fix applied by eglot clears it
— also after a form feed (an Emacs page break) and with an emoji before the error.

The editor side is ``tests/emacs/crane_test.el``, which starts with the configuration that
docs/lsp-editors.md gives.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TestKernel
from tests.editor_case import editor_case, editor_env, editor_marks, offers_column_fix

pytestmark = editor_marks("emacs", "packages emacs-nox elpa-eglot")

EL = Path(__file__).parent / "emacs" / "crane_test.el"
GUARD = Path(__file__).resolve().parents[1] / "editors" / "emacs" / "crane-guard.el"


@pytest.mark.parametrize("odd", [False, True], ids=["plain", "formfeed-emoji"])
def test_emacs_eglot_diagnostic_hover_action_fix(kernel: TestKernel, tmp_path: Path, odd: bool) -> None:
    case = editor_case(kernel, tmp_path, "em_sales", odd)
    target, line = case.target, case.line
    out = tmp_path / "emacs.json"
    env = {
        **editor_env(kernel, "EMACS", case, out),
        "HOME": str(tmp_path),  # no ~/.emacs.d of the machine
        "CRANE_EMACS_GUARD": str(GUARD),
    }
    run = subprocess.run(
        ["emacs", "--batch", "-l", str(EL)],  # batch: no user init; site-start loads elpa-eglot
        env=env,
        timeout=220,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    assert out.exists(), run.stderr.decode(errors="replace")[-3000:]
    seen = json.loads(out.read_text())
    assert "error" not in seen, (seen, run.stderr.decode(errors="replace")[-3000:])
    assert seen["attached"]["attached"] is True, seen  # crane.attachKernel, as docs/lsp-editors.md has it
    assert "KeyError" in seen["message"] and "amout" in seen["message"], seen
    assert seen["line"] == line, (seen, line)  # the file's line, as Emacs counts it (form feed or not)
    assert seen["column"] == target.index("'amout'"), seen  # a character column: emoji counted once
    assert "KeyError" in seen["hover"] and f"line {line + 1}" in seen["hover"], seen["hover"]
    assert offers_column_fix(seen["actions"]), seen["actions"]
    assert seen["after"] == 0 and "em_sales['amount']" in seen["fixed_line"], seen
    # the run guard: asked about the crash three times (cancel: nothing sent; run anyway: the cell
    # sent; show: point on the crash's line), the first cell (run already, no verdict) sent unasked;
    # once the fix is verified, a fourth time, with the fix (the buffer edited in one undoable
    # change, the edited cell sent)
    guard = seen["guard"]
    assert guard["outcomes"] == ["cancelled", "ran-anyway", "shown", "ran", "ran-with-fix"], guard
    assert seen["shown_at"] == line, (seen, line)
    assert len(guard["asked"]) == 4, guard
    question = guard["asked"][0]
    assert question.startswith(f"crane: this cell raises KeyError at line {line + 1} ("), (question, line)
    assert "amout" in question and "Run anyway?" in question, question
    # with a verified fix: named after the question, and "run with the fix" offered
    assert seen["verified"] is True, seen
    with_fix = guard["asked"][3]
    assert with_fix.endswith("Run anyway? Fix: Use 'amount' (runs clean in a dry run). "), with_fix
    assert guard["offered"][3] is True, guard
    assert seen["with_fix_line"] == target.replace("'amout'", "'amount'"), seen
    assert seen["undone"] is True and seen["blocks_again"] is True, seen
    cell, first, ran_fixed = guard["sent"]
    assert target in cell and "x = 1" in cell and "# %%" not in cell, cell
    assert first.startswith("import pandas as pd") and target not in first, first
    assert ran_fixed == cell.replace("'amout'", "'amount'"), (ran_fixed, cell)
