"""The LLM's fix as an edit, through the REAL openai and google-genai SDKs against fake servers on
127.0.0.1: the schema each request carries, and what each kind of answer becomes (an edit of the
target cell; a description for an old-style string; nothing, with a note, for a malformed object or a
line outside the cell). Whether the edit is any good is the jail's to say (test_fixes_llm.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fake_llm_servers import Answer, FakeLLMServer, Raw, crash_answer

from crane_lsp.fixes.candidates import candidates
from crane_lsp.layers import Ask
from crane_lsp.llm import dialects
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.llm.prompt import FIX_SCHEMA, parse_answer
from crane_lsp.settings import Settings

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'region': ['n', 's'], 'units': [1, 2]})"]
TARGET = "for r in ['n']:\n    total = df['Units'].sum()\nprint(total)"
EDIT = {"line": 2, "code": "    total = df['units'].sum()", "why": "The column is 'units', in lower case."}

PROVIDERS = ["openai", "openai-compatible", "gemini"]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server
    dialects.forget()


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "Fx8Xw7Vu6Ts5Rq4Po3Nm")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza" + "SyTestKey0123456789abcdefghijklmnopq")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


Make = Callable[..., LLMPredictor]


@pytest.fixture
async def predictor() -> AsyncIterator[Make]:
    """``predictor(provider, server, **settings)``; each is closed after the test (its SDK client)."""
    made: list[LLMPredictor] = []

    def make(provider: str, server: FakeLLMServer, **extra: Any) -> LLMPredictor:
        base = server.gemini_url if provider == "gemini" else server.openai_url
        model = {"openai": "gpt-4o-mini", "openai-compatible": "qwen2.5-coder", "gemini": "gemini-2.5-flash"}
        settings = Settings(provider=provider, base_url=base, model=model[provider], retries=0, **extra)
        made.append(LLMPredictor(settings, backoff_s=0.01))
        return made[-1]

    yield make
    for llm in made:
        await llm.aclose()


def sent_fix_schema(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """The ``fix`` property of the schema the request asked the server to enforce."""
    if provider == "gemini":
        return dict(body["generationConfig"]["responseSchema"]["properties"]["fix"])
    if provider == "openai":  # the Responses API
        schema = body["text"]["format"]["schema"]
    else:
        schema = body["response_format"]["json_schema"]["schema"]
    return dialects.fix_object(schema)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_edit_fix_is_asked_for_and_becomes_a_fix_of_the_right_lines(
    fake_llm: FakeLLMServer, predictor: Make, provider: str
) -> None:
    fake_llm.push(Answer(crash_answer(line=2, exception="KeyError", fix=EDIT)))
    p = await predictor(provider, fake_llm).predict(Ask(TARGET, EXECUTED))
    fix_schema = sent_fix_schema(provider, fake_llm.requests[-1].json)
    if provider == "gemini":  # Gemini's own dialect: a nullable OBJECT, its fields in order
        assert (fix_schema["type"], fix_schema["nullable"]) == ("OBJECT", True)
        assert fix_schema["required"] == fix_schema["property_ordering"] == ["line", "code", "why"]
        assert fix_schema["properties"]["line"]["type"] == "INTEGER"
    else:  # strict: every property required, nothing else allowed
        assert fix_schema == FIX_SCHEMA and fix_schema["additionalProperties"] is False
    assert p.crash and p.line == 1
    fix = p.fix
    assert fix is not None and fix.layer == "llm"
    assert (fix.start_line, fix.end_line) == (1, 2)  # 0-based, end exclusive: line 2 of the cell
    assert fix.new_text == "    total = df['units'].sum()"
    assert fix.description == EDIT["why"] and fix.title == "Use total = df['units'].sum()"
    assert not any("fix" in n for n in p.notes), p.notes


async def test_code_written_flush_left_gets_the_lines_indentation(
    fake_llm: FakeLLMServer, predictor: Make
) -> None:
    flush = {"line": 2, "code": "total = df['units'].sum()\ntotal += 0\n", "why": "lower case"}
    fake_llm.push(Answer(crash_answer(line=2, fix=flush)))
    p = await predictor("openai", fake_llm).predict(Ask(TARGET, EXECUTED))
    assert p.fix is not None and p.fix.new_text == "    total = df['units'].sum()\n    total += 0"
    assert (p.fix.start_line, p.fix.end_line) == (1, 2)  # the two lines replace line 2 alone


async def test_an_old_string_fix_still_works_as_prose(fake_llm: FakeLLMServer, predictor: Make) -> None:
    prose = "Use the lowercase column: `total = df['units'].sum()`"
    fake_llm.push(Answer(crash_answer(line=2, fix=prose)))
    p = await predictor("openai", fake_llm).predict(Ask(TARGET, EXECUTED))
    assert p.fix is not None and (p.fix.description, p.fix.new_text, p.fix.start_line) == (prose, None, None)
    # the candidates still read the quoted line of the prose, indented as the failing line
    (edit,) = [f for f in candidates(p, TARGET) if f.layer == "llm"]
    assert (edit.start_line, edit.end_line, edit.new_text) == (1, 2, "    total = df['units'].sum()")


@pytest.mark.parametrize(
    ("fix", "why"),
    [
        ({"line": 2, "why": "lower case"}, "code: Field required"),
        ({"line": "two", "code": "x = 1", "why": ""}, "line: Input should be a valid integer"),
        ({"line": 2, "code": "   ", "why": "nothing"}, "the fix has no code"),
        (["total = df['units'].sum()"], "a list, not an edit"),
    ],
)
async def test_a_malformed_fix_object_is_dropped_with_a_note_and_the_verdict_survives(
    fake_llm: FakeLLMServer, predictor: Make, fix: Any, why: str
) -> None:
    fake_llm.push(Answer(crash_answer(line=2, exception="KeyError", fix=fix)))
    p = await predictor("openai", fake_llm).predict(Ask(TARGET, EXECUTED))
    assert (p.crash, p.certainty, p.exception, p.line) == (True, "predicted", "KeyError", 1)
    assert p.fix is None
    assert any(n.startswith("the LLM's fix was dropped: not an edit") and why in n for n in p.notes), p.notes
    assert len(fake_llm.requests) == 1  # a bad fix is not a malformed answer: not asked again


@pytest.mark.parametrize("line", [0, 4, 99])
async def test_an_edit_outside_the_cell_is_dropped_with_a_note(
    fake_llm: FakeLLMServer, predictor: Make, line: int
) -> None:
    fake_llm.push(Answer(crash_answer(line=2, fix={**EDIT, "line": line})))
    p = await predictor("openai", fake_llm).predict(Ask(TARGET, EXECUTED))
    assert p.crash and p.fix is None
    assert f"the LLM's fix was dropped: it edits line {line}, outside this cell's 3 lines" in p.notes


async def test_votes_take_the_fix_of_the_chosen_answer(fake_llm: FakeLLMServer, predictor: Make) -> None:
    other = {"line": 2, "code": "    total = df.iloc[:, 1].sum()", "why": "by position"}
    fake_llm.push(
        Answer(crash_answer(line=2, exception="KeyError", fix=EDIT)),
        Answer(crash_answer(line=3, exception="NameError", fix=other)),
        Answer(crash_answer(line=2, exception="KeyError", fix=EDIT)),
    )
    p = await predictor("openai", fake_llm, votes=3).predict(Ask(TARGET, EXECUTED))
    assert p.exception == "KeyError" and p.fix is not None
    assert p.fix.new_text == EDIT["code"]


async def test_a_server_without_schemas_is_told_the_edit_in_the_prompt(
    fake_llm: FakeLLMServer, predictor: Make
) -> None:
    """The instructions dialect lists the fix's keys; the model's fenced, prose-wrapped answer parses."""
    fake_llm.push(Raw(400, b'{"error": {"message": "Unrecognized request argument: response_format"}}'))
    text = (
        'Here:\n```json\n{"reasoning": "no column Units", "crash": true, "line": 2, "exception": '
        '"KeyError", "evidence": [], "fix": {"line": 2, "code": "total = df[\'units\'].sum()", '
        '"why": "lower case"}}\n```'
    )
    fake_llm.push(Answer(text))
    p = await predictor("openai-compatible", fake_llm).predict(Ask(TARGET, EXECUTED))
    system = fake_llm.requests[-1].json["messages"][0]["content"]
    assert '"fix": {"line": integer, "code": string, "why": string}|null' in system
    assert p.fix is not None and p.fix.new_text == "    total = df['units'].sum()"


def test_the_parser_keeps_the_answer_typed() -> None:
    answer = parse_answer('{"crash": true, "line": 2, "fix": {"line": "line 2", "code": "x = 1\\n"}}')
    assert answer.fix is not None and not isinstance(answer.fix, str)
    assert (answer.fix.line, answer.fix.code, answer.fix.why) == (2, "x = 1", "")
    assert parse_answer('{"crash": true, "fix": "  "}').fix is None  # an empty string is no fix
    dropped = parse_answer('{"crash": true, "fix": 3}')
    assert dropped.fix is None and dropped.fix_dropped == "a int, not an edit"
    assert dropped.model_copy(deep=True).fix_dropped == dropped.fix_dropped
