"""Real headless Emacs (28, Debian's eglot 1.9) on a ``# %%`` script with a real kernel: the
diagnostic on the right line and column, hover, code action, and the fix applied by eglot clears it
— also after a form feed (an Emacs page break) and with an emoji before the error.

The editor side is ``tests/emacs/crane_test.el``, which starts with the README's configuration.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TestKernel
from tests.server_client import SERVER_ENV

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        shutil.which("emacs") is None, reason="Emacs is not installed (Debian packages emacs-nox elpa-eglot)"
    ),
]

EL = Path(__file__).parent / "emacs" / "crane_test.el"
SETUP = "import pandas as pd\nem_sales = pd.DataFrame({'amount': [1.5, 2.5], 'store': [1, 2]})"


@pytest.mark.parametrize("odd", [False, True], ids=["plain", "formfeed-emoji"])
def test_emacs_eglot_diagnostic_hover_action_fix(kernel: TestKernel, tmp_path: Path, odd: bool) -> None:
    kernel.run(SETUP)
    page = "# %%\n\f\n" if odd else "# %%\n"
    lead = 's = "😀"; ' if odd else ""
    target = f"{lead}total = em_sales['amout'].sum()"
    script = tmp_path / "analysis.py"
    script.write_text(f"# %%\n{SETUP}\n\n{page}x = 1\n{target}\nprint(total)\n", encoding="utf-8")
    line = script.read_text(encoding="utf-8").split("\n").index(target)
    out = tmp_path / "emacs.json"
    env = {
        **SERVER_ENV,
        "HOME": str(tmp_path),  # no user init, no ~/.emacs.d of the machine
        "CRANE_EMACS_FILE": str(script),
        "CRANE_EMACS_OUT": str(out),
        "CRANE_EMACS_CMD": json.dumps([sys.executable, "-m", "crane_lsp.cli", "serve"]),
        "CRANE_KERNEL": kernel.connection_file,
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
    assert seen["attached"]["attached"] is True, seen  # crane.attachKernel, as the README documents it
    assert "KeyError" in seen["message"] and "amout" in seen["message"], seen
    assert seen["line"] == line, (seen, line)  # the file's line, as Emacs counts it (form feed or not)
    assert seen["column"] == target.index("'amout'"), seen  # a character column: emoji counted once
    assert "KeyError" in seen["hover"] and f"line {line + 1}" in seen["hover"], seen["hover"]
    assert any(t.startswith("crane: Apply suggested fix") for t in seen["actions"]), seen["actions"]
    assert seen["after"] == 0 and "em_sales['amount']" in seen["fixed_line"], seen
