"""The paper's reproduction, offline: recorded answers, majority vote, Table II, per-library rows, McNemar."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from crane_lsp.bench import cli as bench_cli
from crane_lsp.bench.cases import extract_runtime_text, load_junobench
from crane_lsp.bench.data import shipped
from crane_lsp.bench.metrics import Outcome, breakdown, mcnemar, percentile, score
from crane_lsp.bench.paper import PREDICTION_ONLY, load_paper_rows, model_key, paper_rows_for
from crane_lsp.bench.recorded import RecordedPredictor
from crane_lsp.bench.report import BenchReport, build_report, to_markdown
from crane_lsp.bench.runner import CaseResult, majority, run_bench

JUNO = shipped("junobench")

# Table II of the paper (prediction only), as JunoBench's README states it.
TABLE_II = {
    ("gpt-5", "-RT"): (0.7613, 0.7900, 0.7117, 0.7488),
    ("gpt-5", "+RT"): (0.8063, 0.8148, 0.7928, 0.8037),
    ("gemini-2.5-flash", "-RT"): (0.6757, 0.6383, 0.8108, 0.7143),
    ("gemini-2.5-flash", "+RT"): (0.7342, 0.6781, 0.8919, 0.7704),
    ("qwen2.5-32b-instruct", "-RT"): (0.6982, 0.7245, 0.6396, 0.6794),
    ("qwen2.5-32b-instruct", "+RT"): (0.7793, 0.8605, 0.6667, 0.7513),
}
MCNEMAR = {"gemini-2.5-flash": 0.066, "qwen2.5-32b-instruct": 0.011, "gpt-5": 0.121}
MODELS = sorted(MCNEMAR)


@pytest.fixture(scope="module")
def reports() -> dict[str, BenchReport]:
    cases = load_junobench(JUNO)
    out = {}
    for model in MODELS:
        predictor = RecordedPredictor(JUNO, model)
        results = asyncio.run(run_bench(cases, predictor, ["-RT", "+RT"], concurrency=8))
        paper = paper_rows_for(load_paper_rows(JUNO), model)
        out[model] = build_report(
            results,
            benchmark=str(JUNO),
            kind="junobench",
            predictor=predictor.label,
            settings=["-RT", "+RT"],
            votes=5,
            paper=paper,
        )
    return out


def test_cases_load_all_222_instances_with_truth_and_runtime_text() -> None:
    cases = load_junobench(JUNO)
    assert len(cases) == 222
    assert sum(c.crash is True for c in cases) == 111
    first = cases[0]
    assert first.instance == "NBspecific_1_reproduced" and first.crash is True
    assert first.target.strip() == "tf_idf.toarray()" and first.executed
    pandas = next(c for c in cases if c.instance == "pandas_1_reproduced")
    assert pandas.runtime_text is not None and pandas.runtime_text.startswith("{'__method__pd_Categorical'")
    assert "# Target Cell" not in pandas.runtime_text


@pytest.mark.parametrize(("model", "setting"), sorted(TABLE_II))
def test_table_ii_row_reproduced_to_four_decimals(
    reports: dict[str, BenchReport], model: str, setting: str
) -> None:
    s = reports[model].setting(setting).scores
    assert s.n == 222 and s.failed == 0
    got = tuple(round(x, 4) for x in (s.accuracy, s.precision, s.recall, s.f1))
    assert got == TABLE_II[(model, setting)]


@pytest.mark.parametrize("model", MODELS)
def test_per_library_prediction_only_rows_match_the_paper(
    reports: dict[str, BenchReport], model: str
) -> None:
    rows = paper_rows_for(load_paper_rows(JUNO), model, PREDICTION_ONLY)
    assert len(rows) == 16  # 7 libraries + total, two settings
    for row in rows:
        part = reports[model].setting(row.setting)
        ours = part.scores if row.library == "total" else part.by_category[row.library]
        assert (ours.n, ours.tp, ours.fp, ours.fn, ours.tn) == (row.n, row.tp, row.fp, row.fn, row.tn), row
        for name in ("accuracy", "precision", "recall", "f1"):
            assert round(getattr(ours, name), 4) == round(getattr(row, name), 4), (row, name)


@pytest.mark.parametrize("model", MODELS)
def test_mcnemar_p_values_as_the_paper_reports(reports: dict[str, BenchReport], model: str) -> None:
    m = reports[model].mcnemar
    assert m is not None and m.n == 222
    assert round(m.p_value, 3) == MCNEMAR[model]


def test_model_names_map_between_spellings() -> None:
    assert model_key("gemini 2.5 flash") == model_key("recorded:gemini-2.5-flash")
    assert model_key("qwen 2.5 32b instruct") == model_key("qwen2.5-32b-instruct")
    assert model_key("gpt 5") == model_key("gpt-5") != model_key("gpt-4o")


def test_metrics_and_mcnemar_on_small_inputs() -> None:
    outs = [
        Outcome("a", True, True),
        Outcome("b", False, True),
        Outcome("c", True, False),
        Outcome("d", False, None),
    ]
    s = score(outs)
    assert (s.n, s.tp, s.fp, s.fn, s.tn, s.failed) == (3, 1, 1, 1, 0, 1)
    assert s.precision == 0.5 and s.recall == 0.5 and round(s.accuracy, 4) == 0.3333
    assert score([]).f1 == 0.0  # no positives: 0, as the paper's spreadsheet scores it
    assert mcnemar(outs, outs).p_value == 1.0  # no discordant pairs
    other = [Outcome("a", True, False), Outcome("b", False, False), Outcome("c", True, True)]
    m = mcnemar(outs, other)
    assert (m.n, m.only_first_correct, m.only_second_correct) == (3, 1, 2)
    groups = breakdown(outs, lambda i: "x" if i in "ab" else "y")
    assert groups["x"].n == 2 and groups["y"].failed == 1
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([10.0], 95) == 10.0
    assert majority([True, True, False]) and not majority([True, False])


def test_extract_runtime_text_takes_only_the_runtime_section() -> None:
    prompt = (
        "# Executed Cells:\nx=1\n# Current relevent runtime information:\n{'x': 1}\n# Target Cell:\nx+1\n"
    )
    assert extract_runtime_text(prompt) == "{'x': 1}"
    assert extract_runtime_text("# Executed Cells:\nx=1\n# Target Cell:\nx") == ""


def _bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    return bench_cli.run(parser.parse_args(argv))


def test_cli_writes_markdown_and_json_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md, js = tmp_path / "out.md", tmp_path / "out.json"
    rc = _bench(
        [
            str(JUNO),
            "--provider",
            "recorded:gpt-5",
            "--setting",
            "both",
            "--quiet",
            "--no-cache",
            "--report",
            str(md),
            "--json",
            str(js),
        ]
    )
    assert rc == 0
    shown = capsys.readouterr().out
    assert "0.8063" in shown and "0.7613" in shown and "p = 0.1214" in shown
    data = json.loads(js.read_text())
    plus = next(s for s in data["settings"] if s["setting"] == "+RT")
    assert round(plus["scores"]["f1"], 4) == 0.8037 and plus["scores"]["tp"] == 88
    assert len(data["results"]) == 444 and round(data["mcnemar"]["p_value"], 3) == 0.121
    text = md.read_text()
    assert "| +RT | 222 | 88 | 20 | 23 | 91 | 0.8063 | 0.8148 | 0.7928 | 0.8037 | 0 |" in text
    assert "| paper +RT | 222 | 88 | 20 | 23 | 91 | 0.8063 | 0.8148 | 0.7928 | 0.8037 |  |" in text
    assert "## By root cause (+RT)" in text and "| sklearn | 30 |" in text


def test_cli_single_setting_and_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = tmp_path / "o.json"
    rc = _bench(
        [
            str(JUNO),
            "--provider",
            "recorded:qwen2.5-32b-instruct",
            "--setting=-RT",
            "--only",
            "pandas_*",
            "--votes",
            "3",
            "--quiet",
            "--no-cache",
            "--json",
            str(js),
        ]
    )
    assert rc == 0
    data = json.loads(js.read_text())
    assert [s["setting"] for s in data["settings"]] == ["-RT"] and data["mcnemar"] is None
    assert {r["instance"].split("_")[0] for r in data["results"]} == {"pandas"}
    assert all(len(r["votes"]) == 3 for r in data["results"]) and data["votes"] == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{tmp}/nowhere", "--provider", "recorded:gpt-5"], "no such folder"),
        (["{tmp}", "--provider", "checks"], "no notebooks"),
        (["{juno}/labels.csv", "--provider", "checks"], "labels.csv: not a folder"),
        (["{juno}", "--provider", "recorded:gpt-9"], "recorded models: gemini-2.5-flash, gpt-5"),
        (["{juno}", "--provider", "checks"], "needs a live kernel"),
        (["{juno}", "--provider", "telepathy"], "unknown provider"),
        (["{juno}", "--setting", "sideways"], "use +RT, -RT or both"),
    ],
)
def test_cli_clear_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    args = [a.format(tmp=tmp_path, juno=JUNO) for a in argv]
    assert _bench([*args, "--quiet", "--no-cache"]) == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_missing_recorded_answer_is_a_per_instance_failure(tmp_path: Path) -> None:
    cases = load_junobench(JUNO, limit=4)
    (tmp_path / "recorded" / "m" / "code").mkdir(parents=True)
    src = JUNO / "recorded" / "gpt-5" / "code"
    for c in cases[:3]:
        (tmp_path / "recorded" / "m" / "code" / f"{c.instance}.json").write_text(
            (src / f"{c.instance}.json").read_text()
        )
    results: list[CaseResult] = asyncio.run(run_bench(cases, RecordedPredictor(tmp_path, "m"), ["-RT"]))
    report = build_report(results, benchmark="x", kind="junobench", predictor="recorded:m", settings=["-RT"])
    part = report.setting("-RT")
    assert part.scores.n == 3 and part.scores.failed == 1
    assert part.failures[0].instance == cases[3].instance and "no recorded answer" in part.failures[0].error
    assert "## Failures" in to_markdown(report)


def test_the_issue_command_through_the_crane_lsp_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    from crane_lsp.cli import main

    rc = main(
        ["bench", str(JUNO), "--provider", "recorded:gemini-2.5-flash", "--setting", "both", "--no-cache"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    for figure in (
        "0.6757",
        "0.6383",
        "0.8108",
        "0.7143",
        "0.7342",
        "0.6781",
        "0.8919",
        "0.7704",
        "p = 0.0660",
    ):
        assert figure in out


def test_unusable_cache_or_report_path_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    live = ["--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    assert _bench([str(JUNO), *live, "--limit", "2", "--quiet", "--cache", str(blocker / "c.sqlite")]) == 2
    assert "cannot open the answer cache" in capsys.readouterr().err
    assert (
        _bench([str(JUNO), "--limit", "2", "--quiet", "--no-cache", "--json", str(blocker / "o.json")]) == 2
    )
    assert "cannot write" in capsys.readouterr().err
    md = tmp_path / "new" / "dir" / "r.md"
    assert _bench([str(JUNO), "--limit", "2", "--quiet", "--no-cache", "--report", str(md)]) == 0
    assert md.read_text().startswith("# crane-lsp bench: recorded:gpt-5")
