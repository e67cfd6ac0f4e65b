"""Notebook folders: fresh kernel per notebook, replay, predict with the live checks, run the target."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from crane_lsp.bench import cli as bench_cli
from crane_lsp.bench.cases import load_notebook_folder

SETUP = "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.0], 'qty': [3, 4]})"


def _write(path: Path, *cells: str, tag_first_as_target: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=[new_markdown_cell("# demo"), *(new_code_cell(c) for c in cells)])
    if tag_first_as_target:
        nb.cells[2].metadata["tags"] = ["crane-target"]
    nbformat.write(nb, path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "nbs"
    _write(root / "sales" / "buggy.ipynb", SETUP, "total = df['prices'].sum()")
    _write(root / "sales" / "fixed.ipynb", SETUP, "total = df['price'].sum()")
    # the tagged cell is the target; the cell after it never runs
    _write(
        root / "tagged.ipynb",
        SETUP,
        "df['qty'] * 2",
        "raise RuntimeError('must not run')",
        tag_first_as_target=True,
    )
    # a replayed cell that raises is reported with the row; the replay goes on, as a user's would
    _write(root / "broken.ipynb", "import not_a_module_xyz", "x = 1", "x + 1")
    return root


def test_cases_pick_the_target_and_the_cells_before_it(folder: Path) -> None:
    cases = {c.instance: c for c in load_notebook_folder(folder)}
    assert sorted(cases) == ["broken", "sales/buggy", "sales/fixed", "tagged"]
    assert cases["sales/buggy"].target == "total = df['prices'].sum()"
    assert cases["sales/buggy"].executed == (SETUP,) and cases["sales/buggy"].crash is None
    assert cases["tagged"].target == "df['qty'] * 2" and cases["sales/buggy"].category == "sales"


def test_bench_checks_on_a_notebook_folder(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    js = tmp_path / "out.json"
    rc = bench_cli.run(
        parser.parse_args(
            [str(folder), "--provider", "checks", "--concurrency", "2", "--quiet", "--json", str(js)]
        )
    )
    assert rc == 0
    data = json.loads(js.read_text())
    rows = {r["instance"]: r for r in data["results"]}
    assert rows["sales/buggy"]["truth"] is True and rows["sales/buggy"]["actual_exception"] == "KeyError"
    assert rows["sales/fixed"]["truth"] is False and rows["tagged"]["truth"] is False
    assert rows["sales/buggy"]["predicted"] is True and rows["sales/buggy"]["exception"] == "KeyError"
    assert rows["sales/fixed"]["predicted"] is False and rows["tagged"]["predicted"] is False
    scores = data["settings"][0]["scores"]
    assert (scores["tp"], scores["fp"], scores["fn"], scores["tn"]) == (1, 0, 0, 3)
    assert rows["broken"]["truth"] is False and "ModuleNotFoundError" in rows["broken"]["setup_errors"][0]
    assert rows["tagged"]["setup_errors"] == []
    assert all(r["latency_ms"] is not None and r["error"] is None for r in data["results"])
    assert not (tmp_path / ".crane-cache").exists()  # checks send no request: no answer cache


def test_bench_llm_provider_on_a_notebook_folder_uses_the_cache(tmp_path: Path) -> None:
    from fake_llm_servers import Answer, FakeLLMServer, crash_answer

    root = tmp_path / "nbs"
    _write(root / "parse.ipynb", "values = ['1', 'two']", "total = sum(int(v) for v in values)")
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    js = tmp_path / "out.json"
    with FakeLLMServer() as server:
        server.handler = lambda req: Answer(crash_answer(line=1, exception="ValueError"))
        argv = [str(root), "--provider", "openai-compatible", "--base-url", server.openai_url, "--model", "m"]
        argv += ["--votes", "3", "--quiet", "--cache", str(tmp_path / "c.sqlite"), "--json", str(js)]
        assert bench_cli.run(parser.parse_args(argv)) == 0
        assert len(server.requests) == 3
        user = server.requests[0].json["messages"][-1]["content"]
        assert "values" in user and "# Runtime information:" in user  # the live kernel's state went in
        row = json.loads(js.read_text())["results"][0]
        assert row["truth"] is True and row["actual_exception"] == "ValueError"
        assert row["predicted"] is True and row["exception"] == "ValueError" and row["votes"] == [True] * 3
        assert bench_cli.run(parser.parse_args(argv)) == 0  # a fresh kernel, the same state: all cached
        assert len(server.requests) == 3
        assert json.loads(js.read_text())["results"][0]["cached"] is True


def test_bench_dry_run_on_a_notebook_folder(folder: Path, tmp_path: Path) -> None:
    """The dry-run layer measured the same way: observed in a forked copy, the truth from the real run."""
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    js = tmp_path / "dry.json"
    rc = bench_cli.run(parser.parse_args([str(folder), "--provider", "dryrun", "--quiet", "--json", str(js)]))
    assert rc == 0
    data = json.loads(js.read_text())
    rows = {r["instance"]: r for r in data["results"]}
    assert rows["sales/buggy"]["predicted"] is True and rows["sales/buggy"]["exception"] == "KeyError"
    assert rows["sales/fixed"]["predicted"] is False and rows["tagged"]["predicted"] is False
    scores = data["settings"][0]["scores"]
    assert (scores["tp"], scores["fp"], scores["fn"], scores["tn"]) == (1, 0, 0, 3)
