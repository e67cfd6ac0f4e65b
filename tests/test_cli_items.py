"""The terminal commands' contract: clear one-line errors, exit codes, options as documented.

Each test runs the real CLI (in process through ``main``, or as a subprocess where stderr from
libraries matters) against real kernels and a real, closed local port for an unreachable LLM.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from crane_lsp.cli import build_parser, join_dash_values, main
from tests.ports import free_port

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SALES = EXAMPLES / "pandas_sales" / "sales.ipynb"

# notebook, target code cell (1-based), exception, layers: every bundled example
EXAMPLE_TARGETS = [
    ("pandas_sales/sales.ipynb", 3, "KeyError", "checks"),
    ("sklearn_housing/housing.ipynb", 5, "ValueError", "checks"),
    ("torch_classifier/classifier.ipynb", 4, "RuntimeError", "checks"),
    ("out_of_order/scores.ipynb", 4, "NameError", "checks"),
    ("keras_images/images.ipynb", 4, "ValueError", "checks,dryrun"),
]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crane_lsp.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def test_llm_without_a_provider_is_an_error_not_a_clean_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(SALES), "--cell", "3", "--predictors", "llm"])
    err = capsys.readouterr().err
    assert code == 2
    [line] = _error_lines(err)
    assert "needs an LLM provider" in line and "--provider" in line
    assert "no certain crash" not in err


def test_unreachable_llm_exits_non_zero_with_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = _cli(
        "check", str(SALES), "--cell", "2", "--predictors", "llm", "--provider", "openai-compatible",
        "--base-url", url, "--model", "m", "--votes", "1",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in _error_lines(proc.stderr) if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "gave no answer" in errors[0] and _error_lines(proc.stderr)[-1] == errors[0]
    assert "Traceback" not in proc.stderr and "no verdict" in proc.stdout  # the cell says so too


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("--votes", "0", "--votes:"), ("--votes", "-3", "--votes:")],
)
def test_invalid_settings_are_one_line(
    option: str, value: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", str(SALES), option, value])
    err = capsys.readouterr().err
    assert code == 2
    [line] = _error_lines(err)
    assert needle in line
    assert "pydantic" not in err and "validation error" not in err.lower()


def test_bench_votes_zero_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "junobench", "--provider", "recorded:gpt-5", "--votes", "0", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    [line] = _error_lines(err)
    assert "--votes" in line


def test_cell_timeout_interrupts_a_slow_replayed_cell(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    slow = nbformat.v4.new_code_cell("import time\ntime.sleep(120)\nslow_done = True", execution_count=1)
    target = nbformat.v4.new_code_cell("print(slow_done)", execution_count=None)
    nb.cells = [slow, target]
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    # without --cell-timeout the replay would sleep 120 s; the subprocess limit is well under that
    args = ("check", str(path), "--cell", "2", "--predictors", "checks", "--cell-timeout", "3")
    proc = _cli(*args, timeout=90)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "replay:" in proc.stderr  # the interrupted cell is reported
    assert "NameError" in proc.stdout  # slow_done was never bound: the target will crash


def test_cell_timeout_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SALES), "--cell-timeout", "0"]) == 2
    assert "--cell-timeout" in capsys.readouterr().err


def test_json_is_one_array_of_one_object_per_checked_cell() -> None:
    help_text = build_parser()._subparsers._group_actions[0].choices["check"].format_help()  # type: ignore[union-attr]
    assert "JSON array" in help_text
    proc = _cli("check", str(SALES), "--predictors", "checks", "--json")
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and [d["cell"] for d in data] == [1, 2, 3]
    assert all(isinstance(d, dict) for d in data)


def test_library_warnings_stay_off_the_terminal(tmp_path: Path) -> None:
    # a v4.5 notebook without cell ids: nbformat warns (MissingIDFieldWarning) when it reads it
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": "x = 1"}
        ],
    }
    path = tmp_path / "noid.ipynb"
    path.write_text(json.dumps(nb))
    control = subprocess.run(
        [sys.executable, "-c", f"import nbformat; nbformat.read({str(path)!r}, as_version=4)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Warning" in control.stderr  # the library really does warn on this file
    proc = _cli("check", str(path), "--predictors", "checks")
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "warn" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("name", ["notes.txt", "data.csv", "script"])
def test_only_notebooks_and_python_scripts_are_read(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text("# %%\nx = 1\n")
    for command in ("check", "inspect"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        [line] = _error_lines(err)
        assert "not a notebook" in line and ".ipynb" in line


def test_percent_script_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "cells.py"
    path.write_text("# %%\nx = 1\n# %%\ny = x + undefined_name\n")
    proc = _cli("check", str(path), "--predictors", "checks", "--json")
    assert proc.returncode == 1, proc.stderr
    assert [d["exception"] for d in json.loads(proc.stdout)] == [None, "NameError"]


def test_dash_setting_value_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    assert join_dash_values(["bench", "x", "--setting", "-RT", "--quiet"]) == [
        "bench", "x", "--setting=-RT", "--quiet",
    ]  # fmt: skip
    assert join_dash_values(["--setting", "--quiet"]) == ["--setting", "--quiet"]
    code = main(["bench", "junobench", "--provider", "recorded:gpt-5", "--setting", "-RT", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "-RT" in out and "+RT" not in out
    assert "0.7613" in out  # the paper's -RT accuracy for gpt-5


@pytest.mark.parametrize(("notebook", "cell", "exception", "layers"), EXAMPLE_TARGETS)
def test_walk_and_cell_agree_on_each_example(notebook: str, cell: int, exception: str, layers: str) -> None:
    path = str(EXAMPLES / notebook)
    walk = _cli("check", path, "--predictors", layers, "--json")
    one = _cli("check", path, "--cell", str(cell), "--predictors", layers, "--json")
    assert walk.returncode == one.returncode == 1, walk.stderr + one.stderr
    walked = {d["cell"]: d for d in json.loads(walk.stdout)}
    [single] = json.loads(one.stdout)
    assert (walked[cell]["crash"], walked[cell]["exception"]) == (True, exception)
    assert (single["crash"], single["exception"]) == (True, exception)
    assert walked[cell]["line"] == single["line"]


def test_walk_runs_each_never_run_cell_in_the_recorded_state() -> None:
    """out_of_order: cells 2 and 4 were never run; cell 4 really raises NameError in the recorded
    state (cell 2 did not run before it), as the walk predicts and as ``--cell 4`` does."""
    proc = _cli("check", str(EXAMPLES / "out_of_order" / "scores.ipynb"), "--predictors", "checks", "--json")
    data = {d["cell"]: d for d in json.loads(proc.stdout)}
    assert sorted(data) == [1, 2, 3, 4]
    assert [data[c]["actual"] for c in (1, 2, 3)] == [None, None, None]
    assert (data[4]["exception"], data[4]["actual"]) == ("NameError", "NameError")
    assert proc.returncode == 1
