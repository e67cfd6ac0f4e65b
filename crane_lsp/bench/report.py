"""What a run measured, three ways: a rich terminal table, a Markdown report beside the paper's figures,
and a JSON report with every instance."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from pydantic import BaseModel, Field
from rich import box
from rich.console import Console
from rich.table import Table

from crane_lsp.bench.metrics import Cost, McNemar, Scores, breakdown, cost, mcnemar, score
from crane_lsp.bench.paper import PaperRow
from crane_lsp.bench.runner import CaseResult, Setting
from crane_lsp.prediction import SCHEMA_VERSION


class Failure(BaseModel):
    instance: str
    setting: str
    error: str


class SettingReport(BaseModel):
    setting: Setting
    scores: Scores
    by_category: dict[str, Scores]
    by_root_cause: dict[str, Scores]
    cost: Cost
    cached: int = 0
    failures: list[Failure] = Field(default_factory=list)


class BenchReport(BaseModel):
    """What ``bench --json`` writes (schema: docs/schema/bench.schema.json; lines 1-based)."""

    schema_version: int = SCHEMA_VERSION
    benchmark: str
    kind: str  # "junobench" | "notebooks"
    predictor: str
    votes: int | None = None
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    settings: list[SettingReport]
    mcnemar: McNemar | None = None  # -RT (first) vs +RT (second), when both ran
    paper: list[PaperRow] = Field(default_factory=list)  # the paper's prediction-only rows for this model
    paper_totals: list[PaperRow] = Field(default_factory=list)  # every paper model's totals, for reference
    results: list[CaseResult] = Field(default_factory=list)

    def setting(self, name: str) -> SettingReport:
        return next(s for s in self.settings if s.setting == name)


def build_report(
    results: Sequence[CaseResult],
    *,
    benchmark: str,
    kind: str,
    predictor: str,
    settings: Sequence[Setting],
    votes: int | None = None,
    paper: Sequence[PaperRow] = (),
    paper_totals: Sequence[PaperRow] = (),
) -> BenchReport:
    parts = []
    by_setting: dict[str, list[CaseResult]] = {s: [r for r in results if r.setting == s] for s in settings}
    for s in settings:
        rows = by_setting[s]
        outcomes = [r.outcome() for r in rows]
        category = {r.instance: r.category for r in rows}
        root = {r.instance: r.root_cause for r in rows}
        parts.append(
            SettingReport(
                setting=s,
                scores=score(outcomes),
                by_category=breakdown(outcomes, category.__getitem__),
                by_root_cause=breakdown(outcomes, root.__getitem__),
                cost=cost(
                    [r.prompt_tokens for r in rows if r.error is None],
                    [r.completion_tokens for r in rows if r.error is None],
                    [r.latency_ms for r in rows if r.error is None and not r.cached],
                ),
                cached=sum(1 for r in rows if r.cached),
                failures=[
                    Failure(instance=r.instance, setting=s, error=r.error or "no ground truth")
                    for r in rows
                    if r.error is not None or r.truth is None
                ],
            )
        )
    test = None
    if "-RT" in by_setting and "+RT" in by_setting:
        test = mcnemar([r.outcome() for r in by_setting["-RT"]], [r.outcome() for r in by_setting["+RT"]])
    return BenchReport(
        benchmark=benchmark,
        kind=kind,
        predictor=predictor,
        votes=votes,
        settings=parts,
        mcnemar=test,
        paper=list(paper),
        paper_totals=list(paper_totals),
        results=list(results),
    )


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _paper_total(report: BenchReport, setting: str, library: str = "total") -> PaperRow | None:
    return next((p for p in report.paper if p.setting == setting and p.library == library), None)


def render_terminal(report: BenchReport, console: Console) -> None:
    """Metrics to four decimals and counts per setting; the paper's row under ours when it exists."""
    table = Table(
        title=f"{report.predictor} on {report.benchmark}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        show_edge=False,
    )
    for col in ("setting", "n", "TP", "FP", "FN", "TN", "accuracy", "precision", "recall", "F1", "failed"):
        table.add_column(col, justify="left" if col == "setting" else "right", no_wrap=True)
    for part in report.settings:
        s = part.scores
        table.add_row(
            part.setting,
            str(s.n),
            str(s.tp),
            str(s.fp),
            str(s.fn),
            str(s.tn),
            *_scored(s),
            str(s.failed),
        )
        p = _paper_total(report, part.setting)
        if p is not None:
            table.add_row(
                "[dim]paper",
                *(f"[dim]{v}" for v in (p.n, p.tp, p.fp, p.fn, p.tn)),
                *(f"[dim]{_f(v)}" for v in (p.accuracy, p.precision, p.recall, p.f1)),
                "",
            )
    console.print(table)
    if (m := report.mcnemar) is not None:
        counts = f"only -RT correct {m.only_first_correct}, only +RT correct {m.only_second_correct}"
        console.print(f"McNemar (exact, two-sided) -RT vs +RT: p = {m.p_value:.4f} ({counts}, n = {m.n})")
    for part in report.settings:
        c = part.cost
        if c.mean_prompt_tokens is not None or c.latency_median_ms is not None:
            console.print(
                f"{part.setting} cost per instance: prompt tokens {_num(c.mean_prompt_tokens)}, "
                f"answer tokens {_num(c.mean_completion_tokens)}, "
                f"latency median {_num(c.latency_median_ms)} ms, p95 {_num(c.latency_p95_ms)} ms "
                f"({part.cached} answered from cache)"
            )
        for r in [r for r in report.results if r.setting == part.setting and r.setup_errors][:10]:
            console.print(f"[yellow]setup[/] {r.setting} {r.instance}: {'; '.join(r.setup_errors)}")
        for f in part.failures[:10]:
            console.print(f"[red]failed[/] {f.setting} {f.instance}: {f.error}")
        if len(part.failures) > 10:
            console.print(f"[red]… and {len(part.failures) - 10} more failures in {part.setting}[/]")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _md_row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _scores_cells(s: Scores) -> list[str]:
    return [str(s.n), *(str(v) for v in (s.tp, s.fp, s.fn, s.tn)), *_scored(s)]


def _scored(s: Scores) -> list[str]:
    """The four metrics; "n/a" over zero answers (every request failed), never a 0.0000 that reads
    as a score."""
    return ["n/a"] * 4 if s.n == 0 else [_f(v) for v in _metrics(s)]


def _metrics(s: Scores | PaperRow) -> tuple[float, float, float, float]:
    return (s.accuracy, s.precision, s.recall, s.f1)


def to_markdown(report: BenchReport) -> str:
    """The report for a README or an issue: totals, paper comparison, breakdowns, cost, failures."""
    out = [f"# crane-lsp bench: {report.predictor}", ""]
    out.append(
        f"Benchmark `{report.benchmark}` ({report.kind}), votes {report.votes or '-'}, {report.created}."
    )
    out.append("Positive class = crash; metrics to four decimals.")
    out += ["", "## Totals", ""]
    head = ["setting", "n", "TP", "FP", "FN", "TN", "accuracy", "precision", "recall", "F1", "failed"]
    out += [_md_row(head), _md_row(["---"] * len(head))]
    for part in report.settings:
        out.append(_md_row([part.setting, *_scores_cells(part.scores), part.scores.failed]))
        p = _paper_total(report, part.setting)
        if p is not None:
            out.append(
                _md_row([f"paper {part.setting}", p.n, p.tp, p.fp, p.fn, p.tn, *map(_f, _metrics(p)), ""])
            )
    if report.mcnemar is not None:
        m = report.mcnemar
        out += [
            "",
            f"Exact two-sided McNemar test, -RT vs +RT on the same {m.n} instances: p = {m.p_value:.4f} "
            f"(only -RT correct: {m.only_first_correct}; only +RT correct: {m.only_second_correct}).",
        ]
    if report.paper_totals:
        out += ["", "## The paper's figures (prediction only, all 222 instances)", ""]
        head = ["model", "setting", "n", "TP", "FP", "FN", "TN", "accuracy", "precision", "recall", "F1"]
        out += [_md_row(head), _md_row(["---"] * len(head))]
        out += [
            _md_row([p.model, p.setting, p.n, p.tp, p.fp, p.fn, p.tn, *map(_f, _metrics(p))])
            for p in report.paper_totals
        ]
    for part in report.settings:
        out += ["", f"## By category / library ({part.setting})", ""]
        head = ["category", "n", "TP", "FP", "FN", "TN", "accuracy", "precision", "recall", "F1"]
        has_paper = any(p.setting == part.setting for p in report.paper)
        if has_paper:
            head += ["paper accuracy", "paper F1"]
        out += [_md_row(head), _md_row(["---"] * len(head))]
        for name, s in part.by_category.items():
            row: list[object] = [name, *_scores_cells(s)]
            if has_paper:
                p = _paper_total(report, part.setting, name)
                row += [_f(p.accuracy), _f(p.f1)] if p else ["-", "-"]
            out.append(_md_row(row))
        out += ["", f"## By root cause ({part.setting})", ""]
        head = ["root cause", "n", "TP", "FP", "FN", "TN", "accuracy", "precision", "recall", "F1"]
        out += [_md_row(head), _md_row(["---"] * len(head))]
        out += [_md_row([name, *_scores_cells(s)]) for name, s in part.by_root_cause.items()]
    out += ["", "## Cost per instance", ""]
    head = [
        "setting",
        "prompt tokens (mean)",
        "answer tokens (mean)",
        "latency median ms",
        "latency p95 ms",
        "cached",
    ]
    out += [_md_row(head), _md_row(["---"] * len(head))]
    for part in report.settings:
        c = part.cost
        out.append(
            _md_row(
                [
                    part.setting,
                    _num(c.mean_prompt_tokens),
                    _num(c.mean_completion_tokens),
                    _num(c.latency_median_ms),
                    _num(c.latency_p95_ms),
                    part.cached,
                ]
            )
        )
    failures = [f for part in report.settings for f in part.failures]
    if failures:
        out += ["", "## Failures", ""]
        out += [f"- {f.setting} `{f.instance}`: {f.error}" for f in failures]
    suspect = [r for r in report.results if r.setup_errors]
    if suspect:
        out += ["", "## Notebooks whose replayed cells raised (their truth may differ from the author's)", ""]
        out += [f"- {r.setting} `{r.instance}`: {'; '.join(r.setup_errors)}" for r in suspect]
    return "\n".join(out) + "\n"
