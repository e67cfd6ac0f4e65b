"""``crane-lsp check --fix``: the diff of the top verified fix, and ``fixes[]`` in ``--json`` (1-based,
inclusive lines, as schema v1), validated against the shipped schema, on a real replayed kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parents[1]
SALES = REPO / "examples" / "pandas_sales" / "sales.ipynb"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crane_lsp.cli", "check", str(SALES), "--cell", "3", "--fix", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_check_fix_json_carries_the_verified_fix() -> None:
    proc = _check("--json")
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)
    schema = json.loads((REPO / "docs" / "schema" / "check.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, schema)
    (cell,) = results
    assert cell["schema_version"] == 1
    (fix,) = cell["fixes"]
    assert (fix["start_line"], fix["end_line"]) == (2, 2)  # 1-based, inclusive
    assert fix["new_text"] == 'by_region = df.groupby("region")["revenue"].sum()'
    assert fix["layer"] == "check" and fix["title"] == "Use 'region'"
    assert fix["verification"]["outcome"] == "runs-clean"
    assert any(n.startswith("checked: binds by_region") for n in fix["verification"]["notes"])
    assert cell["fix"] == fix
    assert any(n.startswith("fixes: 1 candidate(s) dry-run") for n in cell["notes"])
    # the edit, applied 1-based, is the cell a person would get
    source = _cell_source(3).split("\n")
    source[fix["start_line"] - 1 : fix["end_line"]] = [fix["new_text"]]
    assert 'groupby("region")' in "\n".join(source)


def test_check_fix_prints_the_diff() -> None:
    proc = _check()
    assert proc.returncode == 1, proc.stderr
    assert "cell 3: Use 'region' (runs clean in a dry run)" in proc.stdout
    assert '-by_region = df.groupby("Region")["revenue"].sum()' in proc.stdout
    assert '+by_region = df.groupby("region")["revenue"].sum()' in proc.stdout


def _cell_source(position: int) -> str:
    import nbformat

    nb = nbformat.read(str(SALES), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return str(code[position - 1].source)
