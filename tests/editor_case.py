"""The ``# %%`` script the real-editor tests (Neovim, Emacs) open, with a real kernel behind it.

One missing-column error (``KeyError``) in the second cell, optionally after a form feed (an Emacs
page break) and with an emoji before it on its line, so that line and column counting are tested.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TestKernel
from tests.server_client import SERVER_ENV

SERVE = json.dumps([sys.executable, "-m", "crane_lsp.cli", "serve"])


def editor_marks(binary: str, packages: str) -> list[pytest.MarkDecorator]:
    """A generous timeout, and a skip where the editor is not installed."""
    return [
        pytest.mark.timeout(240),
        pytest.mark.skipif(
            shutil.which(binary) is None, reason=f"{binary} is not installed (Debian {packages})"
        ),
    ]


@dataclass(frozen=True)
class EditorCase:
    script: Path
    target: str  # the erroneous line's text
    line: int  # its 0-based line in the file, as the editor counts it


def editor_case(kernel: TestKernel, tmp_path: Path, frame: str, odd: bool) -> EditorCase:
    """Define ``frame`` in the kernel and write the script that misspells its column."""
    setup = f"import pandas as pd\n{frame} = pd.DataFrame({{'amount': [1.5, 2.5], 'store': [1, 2]}})"
    kernel.run(setup)
    page = "# %%\n\f\n" if odd else "# %%\n"
    lead = 's = "😀"; ' if odd else ""
    target = f"{lead}total = {frame}['amout'].sum()"
    script = tmp_path / "analysis.py"
    script.write_text(f"# %%\n{setup}\n\n{page}x = 1\n{target}\nprint(total)\n", encoding="utf-8")
    return EditorCase(script, target, script.read_text(encoding="utf-8").split("\n").index(target))


def editor_env(kernel: TestKernel, prefix: str, case: EditorCase, out: Path) -> dict[str, str]:
    """The editor script's inputs: ``CRANE_<prefix>_FILE``/``_OUT``/``_CMD`` and the kernel to attach."""
    return {
        **SERVER_ENV,
        f"CRANE_{prefix}_FILE": str(case.script),
        f"CRANE_{prefix}_OUT": str(out),
        f"CRANE_{prefix}_CMD": SERVE,
        "CRANE_KERNEL": kernel.connection_file,
    }


def offers_column_fix(titles: list[str]) -> bool:
    """The Quick Fix for the misspelt column, before or after its background dry-run verification.

    The server offers "crane: Apply suggested fix (...)" at once and replaces it with "Use 'amount'
    (runs clean in a dry run)" when the jailed run of the edited cell comes back; which one an
    editor lists depends on when it asks."""
    return any(
        t.startswith("crane: Apply suggested fix") or t == "Use 'amount' (runs clean in a dry run)"
        for t in titles
    )
