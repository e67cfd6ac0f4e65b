"""One notebook walked by ``crane-lsp check --json`` in a subprocess: the rows, or why there are none.

Shared by the walk-mode audits (``certainty_audit.py``, ``slow_cells_audit.py``, ``jail_no_verdict.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def check_json(path: Path, options: Sequence[str], timeout: int) -> list[dict[str, Any]] | str:
    """``crane-lsp check PATH OPTIONS --json`` run in the notebook's folder; a string says what went wrong."""
    cmd = [sys.executable, "-m", "crane_lsp.cli", "check", str(path), *options, "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return "timeout"
    try:
        rows = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}"
    return rows if isinstance(rows, list) else f"unexpected output: {str(rows)[:80]}"
