"""`check --json` and `bench --json`: one versioned schema, 1-based lines and cells, validated on real output.

The JSON Schema files in docs/schema are generated from the models that produce the output
(``python -m crane_lsp.output_json docs/schema``); a stale file fails here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pytest

from crane_lsp.bench import cli as bench_cli
from crane_lsp.bench.data import shipped
from crane_lsp.output_json import SCHEMA_VERSION, cell_json, json_schemas, schema_text
from crane_lsp.prediction import Fix, Origin, Prediction

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "docs" / "schema"
SALES = REPO / "examples" / "pandas_sales"


def _schema(name: str) -> dict[str, Any]:
    return dict(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


def _check_json(*args: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "crane_lsp.cli", "check", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return list(json.loads(proc.stdout))


def test_the_shipped_schema_files_are_the_generated_ones() -> None:
    for name, schema in json_schemas().items():
        shipped_text = (SCHEMAS / name).read_text(encoding="utf-8")
        regenerate = f"run: python -m crane_lsp.output_json docs/schema ({name})"
        assert shipped_text == schema_text(schema), regenerate
        jsonschema.Draft202012Validator.check_schema(schema)


def test_walk_output_validates_and_counts_from_one(tmp_path: Path) -> None:
    """The sales notebook: cell 3 (never run) raises on its line 2; df was assigned on line 3 of
    code cell 1, whose recorded execution count is 1. The fix's lines, applied 1-based, make it run."""
    results = _check_json(str(SALES / "sales.ipynb"), "--predictors", "checks")
    jsonschema.validate(results, _schema("check.schema.json"))
    assert [r["schema_version"] for r in results] == [SCHEMA_VERSION] * 3
    cells = [(r["cell"], r["execution_count"], r["ran"]) for r in results]
    assert cells == [(1, 1, True), (2, 2, True), (3, None, True)]
    crash = results[2]
    assert (crash["line"], crash["actual_line"], crash["actual"]) == (2, 2, "KeyError")
    nb = nbformat.read(SALES / "sales.ipynb", as_version=4)
    code = [c.source.split("\n") for c in nb.cells if c.cell_type == "code"]
    assert "Region" in code[2][crash["line"] - 1]
    [origin] = crash["origin"]
    assert (origin["variable"], origin["cell"], origin["execution_count"]) == ("df", 1, 1)
    assert code[origin["cell"] - 1][origin["line"] - 1].startswith("df =")
    fix = crash["fix"]
    assert (fix["start_line"], fix["end_line"]) == (2, 2)
    lines = code[2]
    lines[fix["start_line"] - 1 : fix["end_line"]] = [fix["new_text"]]
    target = [c for c in nb.cells if c.cell_type == "code"][2]
    target.source = "\n".join(lines)
    shutil.copy(SALES / "sales.csv", tmp_path / "sales.csv")
    nbformat.write(nb, tmp_path / "sales.ipynb")
    fixed = _check_json(str(tmp_path / "sales.ipynb"), "--predictors", "checks")
    assert [r["actual"] for r in fixed] == [None, None, None]


def test_single_cell_output_names_the_executed_cells_by_position() -> None:
    [result] = _check_json(str(SALES / "sales.ipynb"), "--cell", "3", "--predictors", "checks")
    jsonschema.validate([result], _schema("check.schema.json"))
    assert (result["cell"], result["line"], result["ran"], result["actual"]) == (3, 2, False, None)
    assert [(o["cell"], o["execution_count"], o["line"]) for o in result["origin"]] == [(1, 1, 3)]


def test_origin_in_a_cell_run_out_of_order_gets_its_position_and_count() -> None:
    """Executed cells in execution order [code cell 3, code cell 1]: an origin in the first executed
    cell is code cell 3 with its own count, not "cell 1"."""
    p = Prediction(
        crash=True,
        certainty="certain",
        exception="KeyError",
        line=0,
        origin=[Origin(variable="df", cell=0, line=4)],
        fix=Fix(description="rename", start_line=0, end_line=1, new_text="x"),
    )
    out = cell_json(1, p, execution_counts=[7, None, 5], executed_cells=[2, 0]).model_dump(mode="json")
    jsonschema.validate([out], _schema("check.schema.json"))
    assert out["cell"] == 2 and out["execution_count"] is None and out["line"] == 1
    assert out["origin"] == [{"variable": "df", "cell": 3, "execution_count": 5, "line": 5}]
    assert (out["fix"]["start_line"], out["fix"]["end_line"]) == (1, 1)
    assert out["ran"] is False and out["actual"] is None


def _bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    return int(bench_cli.run(parser.parse_args(argv)))


def test_bench_json_of_recorded_answers_validates(tmp_path: Path) -> None:
    js = tmp_path / "o.json"
    argv = [str(shipped("junobench")), "--provider", "recorded:gpt-5", "--only", "pandas_*", "--quiet"]
    assert _bench([*argv, "--no-cache", "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    jsonschema.validate(data, _schema("bench.schema.json"))
    assert data["schema_version"] == SCHEMA_VERSION and data["results"]


@pytest.mark.timeout(300)
def test_bench_json_of_a_notebook_folder_gives_1_based_lines(tmp_path: Path) -> None:
    folder = tmp_path / "nbs"
    folder.mkdir()
    shutil.copy(SALES / "sales.ipynb", folder / "sales.ipynb")
    shutil.copy(SALES / "sales.csv", folder / "sales.csv")
    js = tmp_path / "o.json"
    _bench([str(folder), "--provider", "checks", "--quiet", "--json", str(js)])
    data = json.loads(js.read_text())
    jsonschema.validate(data, _schema("bench.schema.json"))
    [row] = data["results"]
    assert (row["predicted"], row["exception"], row["line"]) == (True, "KeyError", 2)
