"""The live path end to end: the real OpenAI SDK against a fake OpenAI-compatible server on 127.0.0.1,
over a handful of JunoBench instances: votes, the SQLite cache (a re-run sends nothing), resume after an
interruption, a provider failure mid-run, reports."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm_servers import Answer, Error, FakeLLMServer, RecordedRequest, Reply, Slow, crash_answer
from rich.console import Console

from crane_lsp.bench import cli as bench_cli
from crane_lsp.bench.cache import AnswerCache
from crane_lsp.bench.cases import BenchCase, load_junobench
from crane_lsp.bench.data import shipped
from crane_lsp.llm.prompt import number_lines

JUNO = shipped("junobench")
ONLY = ["pandas_1_*", "sklearn_1_*"]
VOTES = 3
REQUESTS = 4 * 2 * VOTES  # instances x settings x votes


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def _cases() -> list[BenchCase]:
    cases = [c for c in load_junobench(JUNO) if c.instance.startswith(("pandas_1_", "sklearn_1_"))]
    assert len(cases) == 4 and len({c.target for c in cases}) == 4
    return cases


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


class Oracle:
    """Answers like a model that is right with runtime information and never predicts a crash without.

    With runtime information, the second sample of each prompt disagrees, so every vote is 2 to 1.
    """

    def __init__(self, fail: str | None = None) -> None:
        self.cases = _cases()
        self.fail = fail
        self.seen: Counter[tuple[str, bool]] = Counter()
        self.lock = threading.Lock()

    def case_of(self, req: RecordedRequest) -> tuple[BenchCase, bool]:
        user = "\n".join(_strings(req.json))  # any wire format: chat messages or Gemini contents
        case = next(c for c in self.cases if number_lines(c.target) in user)
        return case, "# Runtime information:" in user

    def __call__(self, req: RecordedRequest) -> Reply:
        case, plus = self.case_of(req)
        if case.instance == self.fail:
            return Error(400, "this request is refused")
        with self.lock:
            self.seen[(case.instance, plus)] += 1
            n = self.seen[(case.instance, plus)]
        verdict = bool(case.crash) if plus else False
        if plus and n % 3 == 2:
            verdict = not verdict
        answer = crash_answer(line=1, exception="AttributeError") if verdict else crash_answer(crash=False)
        return Answer(answer, prompt_tokens=100, completion_tokens=20)


def _args(server: FakeLLMServer, tmp_path: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    argv = [
        str(JUNO),
        "--provider",
        "openai-compatible",
        "--base-url",
        server.openai_url,
        "--model",
        "fake-model",
    ]
    argv += ["--votes", str(VOTES), "--concurrency", "2", "--quiet", "--cache", str(tmp_path / "c.sqlite")]
    for glob in ONLY:
        argv += ["--only", glob]
    return parser.parse_args([*argv, *extra])


def test_votes_cache_and_reports(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.handler = Oracle()
    js, md = tmp_path / "r.json", tmp_path / "r.md"
    assert bench_cli.run(_args(server, tmp_path, "--json", str(js), "--report", str(md))) == 0
    assert len(server.requests) == REQUESTS
    assert all(r.wire == "chat" and r.json["model"] == "fake-model" for r in server.requests)
    data = json.loads(js.read_text())
    plus, minus = data["settings"][1]["scores"], data["settings"][0]["scores"]
    assert (plus["tp"], plus["fp"], plus["fn"], plus["tn"], plus["accuracy"]) == (2, 0, 0, 2, 1.0)
    assert (minus["tp"], minus["fp"], minus["fn"], minus["tn"]) == (0, 0, 2, 2)
    assert data["mcnemar"]["only_second_correct"] == 2 and data["mcnemar"]["p_value"] == 0.5
    for row in data["results"]:
        assert len(row["votes"]) == VOTES and not row["cached"]
        if row["setting"] == "+RT":
            assert sorted(row["votes"]).count(row["truth"]) == 2 and row["predicted"] == row["truth"]
    cost = data["settings"][1]["cost"]
    assert cost["mean_prompt_tokens"] == 300 and cost["mean_completion_tokens"] == 60
    assert cost["latency_median_ms"] > 0 and cost["latency_p95_ms"] >= cost["latency_median_ms"]
    assert data["predictor"] == "openai-compatible/fake-model"
    assert "## Cost per instance" in md.read_text() and "| +RT | 4 | 2 | 0 | 0 | 2 | 1.0000" in md.read_text()

    stored = [
        json.loads(v) for (v,) in sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT value FROM answers")
    ]
    assert len(stored) == REQUESTS
    assert all(
        len(v["raw"]) == 1 and '"crash"' in v["raw"][0] and v["prediction"]["source"]["votes"] for v in stored
    )

    # the same command again: every answer from the cache, nothing sent, the same verdicts
    capsys.readouterr()
    js2 = tmp_path / "r2.json"
    assert bench_cli.run(_args(server, tmp_path, "--json", str(js2))) == 0
    assert len(server.requests) == REQUESTS
    again = json.loads(js2.read_text())
    assert all(r["cached"] for r in again["results"])
    assert [r["predicted"] for r in again["results"]] == [r["predicted"] for r in data["results"]]
    assert "answered from cache" in capsys.readouterr().out


async def test_interrupted_run_resumes_from_the_cache(server: FakeLLMServer, tmp_path: Path) -> None:
    oracle, hang, answered = Oracle(), threading.Event(), 5

    def first_run(req: RecordedRequest) -> Reply:
        if len(server.requests) > answered:
            hang.set()
            return Slow(30)  # the service stalls; the user presses Ctrl-C
        return oracle(req)

    server.handler = first_run
    task = asyncio.ensure_future(bench_cli._run(_args(server, tmp_path), Console(stderr=True, quiet=True)))
    assert await asyncio.to_thread(hang.wait, 30)
    cache_path = tmp_path / "c.sqlite"
    for _ in range(200):
        if cache_path.exists() and len(AnswerCache(cache_path)) >= answered:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(AnswerCache(cache_path)) == answered

    sent_before = len(server.requests)
    server.handler = oracle
    assert await bench_cli._run(_args(server, tmp_path), Console(stderr=True, quiet=True)) == 0
    assert len(server.requests) - sent_before == REQUESTS - answered  # only what was missing
    assert len(AnswerCache(cache_path)) == REQUESTS


def test_provider_failure_is_recorded_and_the_run_goes_on(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.handler = Oracle(fail="sklearn_1_fixed")
    js = tmp_path / "r.json"
    assert bench_cli.run(_args(server, tmp_path, "--json", str(js))) == 0
    data = json.loads(js.read_text())
    for part in data["settings"]:
        assert part["scores"]["n"] == 3 and part["scores"]["failed"] == 1
        assert [f["instance"] for f in part["failures"]] == ["sklearn_1_fixed"]
        assert "this request is refused" in part["failures"][0]["error"]
    assert "failed" in capsys.readouterr().out
    # failures are not cached: a re-run asks again for that instance only
    sent = len(server.requests)
    server.handler = Oracle()
    assert bench_cli.run(_args(server, tmp_path, "--json", str(js))) == 0
    assert len(server.requests) - sent == 2 * VOTES
    assert all(p["scores"]["failed"] == 0 for p in json.loads(js.read_text())["settings"])


def test_missing_key_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    args = parser.parse_args([str(JUNO), "--provider", "openai", "--limit", "2", "--no-cache", "--quiet"])
    assert bench_cli.run(args) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_gemini_provider_through_its_sdk(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-real")
    server.handler = Oracle()
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    js = tmp_path / "g.json"
    argv = [str(JUNO), "--provider", "gemini", "--base-url", server.gemini_url, "--model", "gemini-2.5-flash"]
    argv += [
        "--only",
        "pandas_1_*",
        "--setting",
        "+RT",
        "--votes",
        "1",
        "--no-cache",
        "--quiet",
        "--json",
        str(js),
    ]
    assert bench_cli.run(parser.parse_args(argv)) == 0
    assert len(server.requests) == 2 and all(r.wire == "gemini" for r in server.requests)
    data = json.loads(js.read_text())
    assert data["predictor"] == "gemini/gemini-2.5-flash"
    assert data["settings"][0]["scores"]["accuracy"] == 1.0
    # the paper ran this model: its own figures come along for comparison
    assert {p["setting"] for p in data["paper"]} == {"-RT", "+RT"}
