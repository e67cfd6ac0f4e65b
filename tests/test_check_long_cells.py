"""``crane-lsp check`` on a long cell: the built-in checks read every line (docs/long-cells.md, "In the
terminal"), so a 6,000-line cell whose last line raises gets its certain verdict on that line, predicted
from a real replayed kernel, and a crash near the top is still the one reported."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

LONG = 6000
SETUP = "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.0]})\n"


def _long_cell(last: str, early: str | None = None) -> str:
    lines = [f"v{i} = len(df) + {i}" for i in range(LONG - 1)]  # lines the checks prove harmless
    if early is not None:
        lines[40] = early
    return "\n".join([*lines, last])


def _check(tmp_path: Path, cell: str) -> tuple[int, dict, float]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(cell)]
    path = tmp_path / "long.ipynb"
    nbformat.write(nb, path)
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "crane_lsp.cli",
            "check",
            str(path),
            "--cell",
            "2",
            "--predictors=checks",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    [result] = json.loads(proc.stdout)
    return proc.returncode, result, time.perf_counter() - started


@pytest.mark.slow
@pytest.mark.parametrize(
    ("last", "exception"),
    [("y = df['missing']", "KeyError"), ("z = long_undefined_name + 1", "NameError")],
)
def test_check_finds_the_crash_on_the_last_line_of_a_6000_line_cell(
    tmp_path: Path, last: str, exception: str
) -> None:
    code, result, _ = _check(tmp_path, _long_cell(last))
    assert code == 1, result
    assert (result["exception"], result["line"], result["certainty"]) == (exception, LONG, "certain")
    assert not any("stop at line" in note for note in result.get("notes", []))


@pytest.mark.slow
def test_check_reports_the_first_crash_of_a_long_cell(tmp_path: Path) -> None:
    code, result, _ = _check(tmp_path, _long_cell("z = long_undefined_name + 1", early="y = df['prise']"))
    assert code == 1
    assert (result["exception"], result["line"]) == ("KeyError", 41)


@pytest.mark.slow
def test_check_runs_a_clean_long_cell_clean(tmp_path: Path) -> None:
    code, result, _ = _check(tmp_path, _long_cell("y = df['price'].mean()"))
    assert code == 0 and result["crash"] is False, result
