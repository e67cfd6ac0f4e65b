"""Measure a predictor the way the CRANE-LLM paper did: votes, majority, confusion matrix, accuracy,
precision, recall, F1, the exact McNemar test between -RT and +RT, breakdowns and cost.

CASES is a JunoBench folder (labels.csv, cases/, prompts/, recorded/) or a folder of notebooks (the
last code cell, or one tagged crane-target / replay-target, is the target; running it gives the truth).
Providers: recorded:<model> (the paper's answers); for notebooks only, checks (built-in checks),
dryrun (the sandboxed dry run), checks+dryrun; openai, openai-compatible, gemini.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from crane_lsp.commands.llm_options import add_budget_arguments

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from crane_lsp.bench.cache import AnswerCache
    from crane_lsp.bench.runner import CasePredictor, Setting

LLM_PROVIDERS = ("openai", "openai-compatible", "gemini")
_SETTING_ALIASES = {
    "+rt": "+RT",
    "rt": "+RT",
    "with": "+RT",
    "-rt": "-RT",
    "nort": "-RT",
    "without": "-RT",
    "both": "both",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "cases",
        help="junobench or junoreplay (the data shipped with crane-lsp), a JunoBench folder, "
        "or a folder of notebooks",
    )
    parser.add_argument(
        "--provider",
        help="recorded:<model> | checks | dryrun | checks+dryrun | openai | openai-compatible | gemini",
    )
    parser.add_argument("--model", help="model name for an LLM provider")
    parser.add_argument("--base-url", help="OpenAI-compatible server URL")
    parser.add_argument("--api-key-env", help="name of the environment variable that holds the key")
    parser.add_argument("--setting", help="+RT, -RT or both")
    parser.add_argument("--votes", type=int, help="answers per instance, majority vote (default 5)")
    parser.add_argument("--temperature", type=float, help="sampling temperature for LLM providers")
    add_budget_arguments(parser)
    parser.add_argument(
        "--concurrency",
        type=int,
        help="instances in flight at once (default 4; 1 for notebooks, a kernel each, and for a local "
        "server, which answers one request at a time)",
    )
    parser.add_argument("--rate", type=float, help="at most this many LLM requests per second")
    parser.add_argument("--limit", type=int, help="only the first N instances")
    parser.add_argument("--only", action="append", metavar="GLOB", help="only instances matching GLOB")
    parser.add_argument("--report", metavar="OUT.md", help="write a Markdown report")
    parser.add_argument("--json", metavar="OUT.json", help="write a JSON report")
    parser.add_argument(
        "--cache", metavar="PATH", help="SQLite answer cache (default .crane-cache/bench.sqlite)"
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the answer cache")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds per notebook cell (default 300)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _one_slot(provider: str, base_url: str | None) -> bool:
    if provider != "openai-compatible":
        return False
    from crane_lsp.llm.providers import is_local

    return is_local(base_url)


def parse_settings(value: str | None, kind: str) -> list[Setting]:
    from crane_lsp.bench.cases import BenchError

    if value is None:
        return ["-RT", "+RT"] if kind == "junobench" else ["+RT"]
    norm = _SETTING_ALIASES.get(value.strip().lower())
    if norm is None:
        raise BenchError(f"--setting {value!r}: use +RT, -RT or both")
    return ["-RT", "+RT"] if norm == "both" else ["+RT" if norm == "+RT" else "-RT"]


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from rich.console import Console

    from crane_lsp.bench.cases import BenchError

    console = Console(stderr=True)
    try:
        return asyncio.run(_run(args, console))
    except BenchError as exc:
        console.print(f"[red]crane-lsp bench:[/] {exc}", soft_wrap=True, highlight=False)
        return 2
    except KeyboardInterrupt:
        print("interrupted: answers so far are in the cache; run the same command to resume", file=sys.stderr)
        return 2


async def _run(args: argparse.Namespace, console: Console) -> int:
    import fnmatch
    from pathlib import Path

    from rich.console import Console as RichConsole

    from crane_lsp.bench.cache import AnswerCache, default_cache_path
    from crane_lsp.bench.cases import BenchError, load_cases
    from crane_lsp.bench.data import resolve_cases
    from crane_lsp.bench.paper import PREDICTION_ONLY, load_paper_rows, paper_rows_for
    from crane_lsp.bench.report import build_report, render_terminal, to_markdown
    from crane_lsp.bench.runner import make_progress, run_bench

    folder = resolve_cases(args.cases)
    kind, cases = load_cases(folder)
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.instance, g) for g in args.only)]
    if args.limit is not None:
        cases = cases[: args.limit]
    if not cases:
        raise BenchError(f"{folder}: no instances selected")
    provider = args.provider or ("recorded:gpt-5" if kind == "junobench" else "checks")
    concurrency = args.concurrency if args.concurrency is not None else (4 if kind == "junobench" else 1)
    if args.concurrency is None and _one_slot(provider, args.base_url):
        concurrency = 1  # a local server answers one request at a time: queued ones time out
    if concurrency < 1:
        raise BenchError("--concurrency must be at least 1")
    if args.votes is not None and args.votes < 1:
        raise BenchError("--votes must be at least 1")
    settings = parse_settings(args.setting, kind)
    live = provider in LLM_PROVIDERS  # recorded answers and checks send no request: nothing to cache
    cache = (
        open_cache(Path(args.cache or default_cache_path()))
        if live and not args.no_cache
        else AnswerCache.disabled()
    )
    try:
        predictor = make_predictor(provider, args, kind, folder, cache)
    except BaseException:
        cache.close()
        raise
    votes = getattr(predictor, "votes", None)
    if provider == "openai-compatible" and args.base_url:
        try:
            await _reachable(args.base_url)
        except BaseException:
            await predictor.aclose()
            cache.close()
            raise
    try:
        with make_progress(console, disable=args.quiet) as progress:
            results = await run_bench(cases, predictor, settings, concurrency=concurrency, progress=progress)
    finally:
        await predictor.aclose()
        cache.close()
    rows = load_paper_rows(folder) if kind == "junobench" else []
    paper = paper_rows_for(rows, args.model or provider, PREDICTION_ONLY)
    totals = [r for r in rows if r.task == PREDICTION_ONLY and r.library == "total"]
    report = build_report(
        results,
        benchmark=str(folder),
        kind=kind,
        predictor=predictor.label,
        settings=settings,
        votes=votes,
        paper=paper,
        paper_totals=totals,
    )
    render_terminal(report, RichConsole())
    for out, text in ((args.report, to_markdown), (args.json, lambda r: r.model_dump_json(indent=1))):
        if out:
            try:
                Path(out).parent.mkdir(parents=True, exist_ok=True)
                Path(out).write_text(text(report), encoding="utf-8")
            except OSError as exc:
                raise BenchError(f"cannot write {out}: {exc.strerror or exc}") from exc
    scored = sum(s.scores.n for s in report.settings)
    return 0 if scored else 2


async def _reachable(base_url: str) -> None:
    """Fail fast on a dead server (one quick GET) instead of one failed request per instance."""
    import httpx

    from crane_lsp.bench.cases import BenchError

    try:
        async with httpx.AsyncClient(timeout=10) as client:
            await client.get(base_url.rstrip("/") + "/models")
    except httpx.HTTPError as exc:
        raise BenchError(f"cannot reach the server at {base_url} ({type(exc).__name__})") from exc


def open_cache(path: Path) -> AnswerCache:
    import sqlite3

    from crane_lsp.bench.cache import AnswerCache
    from crane_lsp.bench.cases import BenchError

    try:
        return AnswerCache(path)
    except (OSError, sqlite3.Error) as exc:
        raise BenchError(
            f"cannot open the answer cache {path}: {exc} (use --cache PATH or --no-cache)"
        ) from exc


def make_predictor(
    provider: str, args: argparse.Namespace, kind: str, folder: Path, cache: AnswerCache
) -> CasePredictor:
    """The predictor for ``--provider``; BenchError (exit 2) for a mismatch or a missing key."""
    from crane_lsp.bench.cases import BenchError

    if provider.startswith("recorded:"):
        from crane_lsp.bench.recorded import RecordedPredictor

        if kind != "junobench":
            raise BenchError("recorded:<model> replays JunoBench's recorded answers: give a JunoBench folder")
        return RecordedPredictor(folder, provider.split(":", 1)[1], votes=args.votes or 5)
    if provider in ("checks", "dryrun", "checks+dryrun"):
        if kind != "notebooks":
            raise BenchError(f"--provider {provider} needs a live kernel: give a folder of notebooks")
        from crane_lsp.bench.notebooks import NotebookPredictor

        return NotebookPredictor(timeout_s=args.timeout, layers=provider)
    if provider in LLM_PROVIDERS:
        from crane_lsp.bench.live import CachedVotes, JunoLLMPredictor, llm_settings
        from crane_lsp.bench.runner import RateLimiter
        from crane_lsp.llm import LLMError

        try:
            llm = CachedVotes(
                llm_settings(provider, args), cache, votes=args.votes or 5, limiter=RateLimiter(args.rate)
            )
        except LLMError as exc:  # a missing key, no model, no base URL: said plainly, exit 2
            raise BenchError(str(exc).removeprefix("crane-lsp: ")) from exc
        if kind == "junobench":
            return JunoLLMPredictor(llm)
        from crane_lsp.bench.notebooks import NotebookPredictor

        return NotebookPredictor(llm=llm, timeout_s=args.timeout)
    raise BenchError(
        f"unknown provider {provider!r}: use recorded:<model>, checks, dryrun, checks+dryrun, "
        f"{', '.join(LLM_PROVIDERS)}"
    )
