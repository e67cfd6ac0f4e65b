"""A cell longer than the checks read (``analysis.parse.MAX_LINES``): the start is checked, the rest is not.

The checks read a long cell's top-level statements up to ``MAX_LINES`` and stop there: a crash they
find before is still certain (and really raised, in a real kernel), nothing after is reported or
trusted, the prediction says where reading stopped, the dry run's safe-mode screen still reads every
line, and origins still find an assignment past the cut in an executed cell.
"""

from __future__ import annotations

from typing import Any

import pytest
from check_util import assert_predicts, predict, prepare, run_cell

from crane_lsp.analysis.parse import MAX_LINES, analyze
from crane_lsp.dryrun import screen
from crane_lsp.pipeline import origins, unchecked_note

SETUP = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})"
FILLER = "x{i} = df['a'].sum() + {i}"


def long_cell(lines: int, at: dict[int, str]) -> str:
    """``lines`` lines of harmless column arithmetic, with ``at[k]`` as the (0-based) line ``k``."""
    return "\n".join(at.get(i, FILLER.format(i=i)) for i in range(lines)) + "\n"


def test_a_crash_before_the_cut_is_certain_and_raises_there(kernel: Any) -> None:
    cell = long_cell(MAX_LINES + 500, {40: "y = df['missing']"})
    first = assert_predicts(kernel, SETUP, cell, "KeyError", 40, check_id="pandas.missing-column")
    assert "missing" in first.message


def test_nothing_past_the_cut_is_reported_and_the_cell_still_raises_there(kernel: Any) -> None:
    crash_at = MAX_LINES + 100
    cell = long_cell(MAX_LINES + 500, {crash_at: "y = df['missing']"})
    prepare(kernel, SETUP)
    assert predict(kernel, cell) == []  # the check would fire on this line in a short cell ...
    assert run_cell(kernel, cell) == ("KeyError", crash_at)  # ... and the cell does raise there
    facts = analyze(cell)
    assert facts.unchecked_from == MAX_LINES
    assert f"stop at line {MAX_LINES + 1} of this {MAX_LINES + 500}-line cell" in unchecked_note(facts)


def test_the_cut_falls_between_top_level_statements() -> None:
    """A statement that starts within the budget is read whole, however far it runs."""
    block = ["for i in range(3):"] + [f"    t{k} = i + {k}" for k in range(30)]
    start = MAX_LINES - 5
    at = {start + k: line for k, line in enumerate(block)}
    cell = long_cell(MAX_LINES + 100, at)
    facts = analyze(cell)
    assert facts.unchecked_from == start + len(block)
    assert facts.tree() is not None and facts.tree().body[-1].lineno == start + 1  # type: ignore[union-attr]


def test_names_after_the_cut_are_untrusted_and_unread() -> None:
    cell = long_cell(MAX_LINES + 10, {MAX_LINES + 5: "z = undefined_thing + 1"})
    facts = analyze(cell)
    assert "undefined_thing" not in facts.read_names()  # never asked of the kernel, never a NameError
    assert not facts.is_trusted("df", (MAX_LINES + 5, 0))
    assert facts.is_trusted("df", (MAX_LINES - 1, 0))


def test_a_short_cell_and_a_whole_read_are_not_cut() -> None:
    assert analyze(long_cell(MAX_LINES, {})).unchecked_from is None
    assert analyze(long_cell(MAX_LINES + 50, {}), max_lines=None).unchecked_from is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [("df.to_csv('out.csv')", "saves"), ("import socket", "network")],
)
def test_the_safe_mode_screen_reads_past_the_cut(line: str, reason: str) -> None:
    cell = long_cell(MAX_LINES + 300, {MAX_LINES + 200: line})
    verdict = screen(analyze(cell))
    assert not verdict.safe and reason in verdict.reason, verdict
    assert screen(analyze(long_cell(MAX_LINES + 300, {}))).safe


def test_origins_find_an_assignment_past_the_cut_of_an_executed_cell() -> None:
    executed = [long_cell(MAX_LINES + 300, {10: "model = 1", MAX_LINES + 250: "model = 2"})]
    (origin,) = origins(["model"], executed)
    assert (origin.cell, origin.line) == (0, MAX_LINES + 250)
