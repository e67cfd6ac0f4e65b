"""Real headless Neovim on a ``# %%`` script with a real kernel: the squiggle on the right line and
column, hover, code actions, and the suggested fix applied by Neovim clears the squiggle — also
with a form feed (an Emacs page break) and an emoji before the error.

The editor side is ``tests/neovim/crane_test.lua``: the same configuration the README gives.
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
        shutil.which("nvim") is None, reason="Neovim is not installed (Debian package neovim)"
    ),
]

LUA = Path(__file__).parent / "neovim" / "crane_test.lua"
SETUP = "import pandas as pd\nnv_sales = pd.DataFrame({'amount': [1.5, 2.5], 'store': [1, 2]})"


@pytest.mark.parametrize("odd", [False, True], ids=["plain", "formfeed-emoji"])
def test_neovim_squiggle_hover_action_fix(kernel: TestKernel, tmp_path: Path, odd: bool) -> None:
    kernel.run(SETUP)
    page = "# %%\n\f\n" if odd else "# %%\n"
    lead = 's = "😀"; ' if odd else ""
    target = f"{lead}total = nv_sales['amout'].sum()"
    script = tmp_path / "analysis.py"
    script.write_text(f"# %%\n{SETUP}\n\n{page}x = 1\n{target}\nprint(total)\n", encoding="utf-8")
    lines = script.read_text(encoding="utf-8").split("\n")
    line = lines.index(target)
    out = tmp_path / "nvim.json"
    env = {
        **SERVER_ENV,
        "CRANE_NVIM_FILE": str(script),
        "CRANE_NVIM_OUT": str(out),
        "CRANE_NVIM_CMD": json.dumps([sys.executable, "-m", "crane_lsp.cli", "serve"]),
        "CRANE_KERNEL": kernel.connection_file,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
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
    assert seen["attached"]["attached"] is True, seen  # crane.attachKernel, as the README documents it
    diag = seen["diag"]
    assert diag["code"] == "KeyError" and "amout" in diag["message"], seen
    assert diag["lnum"] == line, (diag, line)  # the file's line, as Neovim counts it
    assert diag["col"] == len(target[: target.index("'amout'")].encode("utf-8")), diag  # a byte column
    assert "KeyError" in seen["hover"] and f"line {line + 1}" in seen["hover"], seen["hover"]
    assert any(t.startswith("crane: Apply suggested fix") for t in seen["actions"]), seen["actions"]
    assert seen["after"] == 0 and "nv_sales['amount']" in seen["line"], seen
