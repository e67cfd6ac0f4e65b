"""`crane-lsp check` end to end: a real kernel replays each bundled example and the target is predicted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from crane_lsp.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# notebook, target code cell (1-based), exception the target really raises, 1-based line, layers
CASES = [
    ("pandas_sales/sales.ipynb", 3, "KeyError", 2, "checks"),
    ("sklearn_housing/housing.ipynb", 5, "ValueError", 1, "checks"),
    ("torch_classifier/classifier.ipynb", 4, "RuntimeError", 2, "checks"),
    ("out_of_order/scores.ipynb", 4, "NameError", 1, "checks"),
    ("keras_images/images.ipynb", 4, "ValueError", 1, "checks,dryrun"),
]


def _check_json(*args: str) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [sys.executable, "-m", "crane_lsp.cli", "check", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else []


@pytest.mark.parametrize(("notebook", "cell", "exception", "line", "layers"), CASES)
def test_each_example_target_is_predicted(
    notebook: str, cell: int, exception: str, line: int, layers: str
) -> None:
    code, results = _check_json(str(EXAMPLES / notebook), "--cell", str(cell), "--predictors", layers)
    assert code == 1, results
    [result] = results
    assert result["cell"] == cell
    assert result["crash"] is True
    assert result["exception"] == exception
    assert result["line"] == line
    assert result["certainty"] in ("certain", "observed")
    assert result["message"]


def test_walk_mode_reports_predictions_beside_what_happened() -> None:
    code, results = _check_json(str(EXAMPLES / "pandas_sales/sales.ipynb"), "--predictors", "checks")
    assert code == 1
    assert [r["cell"] for r in results] == [1, 2, 3]
    assert [r["actual"] for r in results] == [None, None, "KeyError"]
    assert [r["crash"] for r in results] == [False, False, True]


def test_walk_without_crash_exits_zero(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = [1, 2, 3]"), nbformat.v4.new_code_cell("y = sum(x)")]
    path = tmp_path / "fine.ipynb"
    nbformat.write(nb, path)
    code, results = _check_json(str(path), "--predictors", "checks")
    assert code == 0
    assert all(r["crash"] is False and r["certainty"] == "none" for r in results)


def test_malformed_notebook_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{ this is not json")
    assert main(["check", str(bad)]) == 2
    assert "not a readable Jupyter notebook" in capsys.readouterr().err


def test_cell_out_of_range_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / "pandas_sales/sales.ipynb"), "--cell", "9"]) == 2
    assert "has 3 code cells" in capsys.readouterr().err


def test_missing_api_key_is_a_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["check", str(EXAMPLES / "pandas_sales/sales.ipynb"), "--cell", "3", "--provider", "openai"])
    err = capsys.readouterr().err
    assert code == 2
    assert "OPENAI_API_KEY" in err
    assert "Traceback" not in err


def test_unknown_predictor_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / "pandas_sales/sales.ipynb"), "--predictors", "checks,oracle"]) == 2
    assert "oracle" in capsys.readouterr().err


def test_missing_column_fix_names_the_real_column_and_the_fixed_cell_runs(tmp_path: Path) -> None:
    sales = EXAMPLES / "pandas_sales/sales.ipynb"
    code, [result] = _check_json(str(sales), "--cell", "3", "--predictors", "checks")
    assert code == 1
    assert "did you mean 'region'?" in result["message"]
    fix = result["fix"]
    assert fix["new_text"] == 'by_region = df.groupby("region")["revenue"].sum()'  # the user's quotes kept
    # apply the fix to a copy of the notebook: walking it, every cell now really runs clean
    nb = nbformat.read(sales, as_version=4)
    target = [c for c in nb.cells if c.cell_type == "code"][2]
    lines = target.source.split("\n")
    lines[fix["start_line"] - 1 : fix["end_line"]] = [fix["new_text"]]  # 1-based, end included
    target.source = "\n".join(lines)
    (tmp_path / "sales.csv").write_bytes((EXAMPLES / "pandas_sales/sales.csv").read_bytes())
    nbformat.write(nb, tmp_path / "sales.ipynb")
    code, results = _check_json(str(tmp_path / "sales.ipynb"), "--predictors", "checks")
    assert code == 0
    assert [r["actual"] for r in results] == [None, None, None]
