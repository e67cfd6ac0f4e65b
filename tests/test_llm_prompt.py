"""The prompt text, the cell slice, the answer parser and the token budget against the paper's prompts."""

from __future__ import annotations

import json
import re
import statistics

import pytest

from crane_lsp.analysis.positions import Span
from crane_lsp.bench.data import shipped
from crane_lsp.checks.registry import Finding
from crane_lsp.layers import KnownCrash
from crane_lsp.llm.prompt import (
    ANSWER_SCHEMA,
    LLMAnswer,
    MalformedAnswer,
    build_messages,
    compact_code,
    count_tokens,
    number_lines,
    parse_answer,
    prompt_tokens,
    relevant_cells,
)

JUNO = shipped("junobench")


def test_minus_rt_has_no_runtime_section_and_plus_rt_has_it() -> None:
    executed = ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"]
    minus = build_messages(executed, "df['b']", None)
    plus = build_messages(executed, "df['b']", "df: DataFrame | shape (1, 1)\n  columns: 'a': int64")
    assert [m.role for m in minus] == ["system", "user"]
    assert "Runtime" not in minus[0].content and "# Runtime information" not in minus[1].content
    assert "Runtime info" in plus[0].content
    assert "# Runtime information:\ndf: DataFrame | shape (1, 1)" in plus[1].content
    user = minus[1].content
    assert user.startswith("# Executed Cells:\n## Cell 1\nimport pandas as pd\n## Cell 2\ndf = pd.DataFrame")
    assert user.endswith("# Target Cell:\n1 df['b']")


def test_target_lines_keep_their_numbers_when_blank_lines_are_skipped() -> None:
    target = "\nx = 1\n\n# note\ny = x['a']"
    assert number_lines(target) == "2 x = 1\n4 # note\n5 y = x['a']"


def test_findings_are_passed_as_verified_facts() -> None:
    finding = Finding(
        check_id="pandas.missing_column",
        exception="KeyError",
        span=Span(1, 0, 1, 9),
        message="column 'b' does not exist in df",
        evidence=(("df.columns", "['a']"),),
    )
    system, user = build_messages(["df = 1"], "x = 1\ndf['b']", None, [KnownCrash.of_finding(finding)])
    assert "Verified facts" in system.content
    assert "# Verified facts:\n- line 2: KeyError: column 'b' does not exist in df (df.columns = ['a'])" in (
        user.content
    )


def test_executed_cells_lose_comments_blank_lines_and_pure_displays_only() -> None:
    code = (
        "# load\n\ndf = load()  # keep me\n"
        "df.head()\nprint(df.shape)\ndf\n"
        "df.sort_values('a', inplace=True)\nlist(it)\ns = '''\n# inside a string\n'''"
    )
    out = compact_code(code)
    assert out.split("\n") == [
        "df = load()  # keep me",
        "df.sort_values('a', inplace=True)",
        "list(it)",
        "s = '''",
        "# inside a string",
        "'''",
    ]
    # IPython syntax is not Python: only comment and blank lines go
    assert compact_code("%matplotlib inline\n\n# c\n!pip install x\ndf.head()") == (
        "%matplotlib inline\n!pip install x\ndf.head()"
    )


def test_slice_keeps_the_cells_that_can_change_what_the_target_reads() -> None:
    executed = [
        "import pandas as pd\nimport numpy as np",  # 0: binds pd (read by cell 1)
        "df = pd.read_csv('a.csv')",  # 1: binds df
        "other = pd.read_csv('b.csv')",  # 2: unrelated (calls on the module pd do not change pd)
        "df.drop('x', axis=1, inplace=True)",  # 3: mutates df through a method call
        "def score(frame):\n    return model.predict(frame[cols])",  # 4: def read by the target
        "model = fit(other_data)\ncols = ['a']",  # 5: globals the def reads
        "print(np.zeros(3))",  # 6: unrelated
    ]
    assert relevant_cells(executed, "score(df)") == [0, 1, 3, 4, 5]
    # a cell whose names cannot be known (star import) is always kept
    assert 0 in relevant_cells(["from x import *", "y = 1"], "y")
    # cells keep their execution-order numbers in the prompt
    user = build_messages(executed, "score(df)", None)[1].content
    assert "## Cell 4\ndf.drop" in user and "## Cell 3" not in user


def test_key_shaped_literals_never_reach_the_prompt() -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0"
    messages = build_messages(
        [f"openai.api_key = '{secret}'"], f"client = OpenAI(api_key='{secret}')", "k = 1"
    )
    assert all(secret not in m.content for m in messages)
    assert "[REDACTED]" in messages[1].content


@pytest.mark.parametrize(
    ("text", "crash", "line", "exception"),
    [
        (
            '{"reasoning": "r", "crash": true, "line": 3, "exception": "KeyError", "fix": null}',
            True,
            3,
            "KeyError",
        ),
        ('Sure!\n```json\n{"reasoning": "r", "crash": false, "line": null}\n```\nDone.', False, None, None),
        ('{"reasoning": "paper style", "detection": true}', True, None, None),
        ('<think>maybe {"crash": true}</think>\n{"reasoning": "r", "crash": false}', False, None, None),
        (
            '{"crash": "false", "line": "line 7", "exception": "builtins.ValueError: bad"}',
            False,
            7,
            "ValueError",
        ),
        (
            'noise {"a": 1} then {"crash": true, "exception": "pandas.errors.ParserError"}',
            True,
            None,
            "ParserError",
        ),
    ],
)
def test_parse_answer_is_tolerant_but_typed(
    text: str, crash: bool, line: int | None, exception: str | None
) -> None:
    answer = parse_answer(text)
    assert (answer.crash, answer.line, answer.exception) == (crash, line, exception)


@pytest.mark.parametrize(
    "text", ["", "I think it crashes.", '{"crash": "maybe"}', '{"reasoning": "no verdict"}', "{crash: true"]
)
def test_garbled_answers_are_rejected(text: str) -> None:
    with pytest.raises(MalformedAnswer):
        parse_answer(text)


def test_schema_is_strict_and_matches_the_model() -> None:
    props = ANSWER_SCHEMA["properties"]
    assert ANSWER_SCHEMA["additionalProperties"] is False
    assert set(ANSWER_SCHEMA["required"]) == set(props) == set(LLMAnswer.model_fields)
    assert next(iter(props)) == "reasoning"  # reasoning before the verdict


def test_count_tokens_is_o200k_offline() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens are plain text here


def _paper_parts(text: str) -> tuple[list[str], str, str | None]:
    head, target = text.split("# Target Cell:\n", 1)
    runtime = None
    if "# Current relevent runtime information:\n" in head:
        head, runtime = head.split("# Current relevent runtime information:\n", 1)
    cells = [
        c.strip("\n")
        for c in re.split(r"^## Cell \d+:\n", head.split("# Executed Cells:\n", 1)[1], flags=re.M)
    ]
    return cells[1:], target, runtime


def test_our_whole_prompt_is_no_larger_than_the_papers_user_message() -> None:
    """Same cells, same target, same recorded runtime text: our system + user vs the paper's user alone."""
    ours_minus, paper_minus, ours_plus, paper_plus = [], [], [], []
    for path in sorted((JUNO / "prompts" / "code").glob("*.txt")):
        text = path.read_text()
        cells, target, _ = _paper_parts(text)
        ours_minus.append(prompt_tokens(build_messages(cells, target, None)))
        paper_minus.append(count_tokens(text))
        text = (JUNO / "prompts" / "code_runinfo" / path.name).read_text()
        cells, target, runtime = _paper_parts(text)
        ours_plus.append(prompt_tokens(build_messages(cells, target, runtime)))
        paper_plus.append(count_tokens(text))
    assert len(ours_minus) == 222
    assert statistics.median(paper_minus) == 648  # the paper's figure, reproduced
    assert statistics.median(ours_minus) <= statistics.median(paper_minus)
    assert statistics.median(ours_plus) <= statistics.median(paper_plus)


def test_case_file_prompts_keep_the_target_and_its_numbering() -> None:
    case = json.loads((JUNO / "cases" / "NBspecific_10.json").read_text())["buggy"]
    user = build_messages([c["code"] for c in case["executed"]], case["target"]["code"], None)[1].content
    assert user.endswith("4 check_stationarity(train['ActivePower'])")
    assert "train = scaler.fit_transform" in user  # the cell that made train an ndarray stays
