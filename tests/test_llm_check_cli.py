"""``crane-lsp check`` with an LLM that fails on one cell: that cell reads "no verdict: <why>" (box and
JSON), the other verdicts are kept, and the run ends with exit status 2 (issue 26)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm_servers import Answer, FakeLLMServer, RecordedRequest, Reply, crash_answer

from crane_lsp.cli import main

SCRIPT = "# %%\nx = 1\n# %%\ny = x['a']\n"


def _reply(req: RecordedRequest) -> Reply:
    if any(m["content"].endswith("# Target Cell:\n1 x = 1") for m in req.json["messages"]):
        return Answer("I am not sure what this cell does.")  # garbled, and again after the corrective turn
    return Answer(crash_answer(line=1, exception="TypeError"))


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(handler=_reply) as server:
        yield server


@pytest.mark.parametrize("as_json", [True, False])
def test_one_garbled_answer_costs_one_cell_not_the_walk(
    fake_llm: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    script = tmp_path / "two.py"
    script.write_text(SCRIPT)
    args = ["check", str(script), "--predictors", "llm", "--provider", "openai-compatible"]
    args += ["--base-url", fake_llm.openai_url, "--model", "m", "--max-tokens", "200", "--retries", "0"]
    code = main(args + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert code == 2
    assert "error: no verdict for cell 1 of 2: the LLM (openai-compatible) gave no answer" in err
    assert all(r.json["max_tokens"] == 200 for r in fake_llm.requests)
    if as_json:
        first, second = json.loads(out)
        assert first["message"].startswith("no verdict: ") and first["certainty"] == "none"
        assert second["crash"] and second["exception"] == "TypeError"
    else:
        assert "no verdict" in out and "TypeError" in out
