"""A cell longer than ``analysis.parse.MAX_LINES``: read in two goes, its first part, then every line.

``analyze`` reads a long cell's top-level statements up to ``MAX_LINES`` and stops there: a crash it
finds before is certain (and really raised, in a real kernel), nothing after is reported or trusted in
that first read, and the prediction says where it stopped. The server publishes that verdict at once,
then reads the rest (``analyze_whole`` in its worker, ``checkpass.finish_checks_phase``): a crash on
the last line of a 6,000-line cell is found, certain, and really raised there. The dry run's safe-mode
screen reads every line, and origins find an assignment past the cut in an executed cell.
"""

from __future__ import annotations

from typing import Any

import pytest
from check_util import assert_predicts, predict, prepare, run_cell
from probe_util import snapshot

from crane_lsp.analysis.parse import MAX_LINES, analyze, analyze_whole
from crane_lsp.dryrun import screen
from crane_lsp.kernel.link import KernelLink
from crane_lsp.pipeline import Pipeline, _inline, origins, unchecked_note
from crane_lsp.server import checkpass
from crane_lsp.settings import Settings
from crane_lsp.snapshot import ProbeQuery

SETUP = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})"
FILLER = "x{i} = df['a'].sum() + {i}"
PROVEN = "x{i} = len(df) + {i}"  # lines the checks prove do not raise: a crash after them is certain


def long_cell(lines: int, at: dict[int, str], filler: str = FILLER) -> str:
    """``lines`` lines of harmless column arithmetic, with ``at[k]`` as the (0-based) line ``k``."""
    return "\n".join(at.get(i, filler.format(i=i)) for i in range(lines)) + "\n"


def test_a_crash_before_the_cut_is_certain_and_raises_there(kernel: Any) -> None:
    cell = long_cell(MAX_LINES + 500, {40: "y = df['missing']"})
    first = assert_predicts(kernel, SETUP, cell, "KeyError", 40, check_id="pandas.missing-column")
    assert "missing" in first.message


def test_the_first_read_reports_nothing_past_the_cut_and_the_cell_still_raises_there(kernel: Any) -> None:
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
    [("df.to_sql('out', con)", "writes outside its files"), ("import socket", "network")],
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


LONG = 6000
LAST = {  # the last line of a 6,000-line cell, and what it raises
    "NameError": "y = long_undefined_name + 1",
    "KeyError": "y = df['missing']",
}


@pytest.mark.parametrize("exception", sorted(LAST))
def test_the_whole_read_finds_a_crash_on_the_last_line_of_a_long_cell(kernel: Any, exception: str) -> None:
    cell = long_cell(LONG, {LONG - 1: LAST[exception]}, PROVEN)
    prepare(kernel, SETUP)
    assert predict(kernel, cell) == []  # the first read stops at MAX_LINES ...
    facts = analyze_whole(cell)
    assert facts.unchecked_from is None
    snap = snapshot(kernel, ProbeQuery(**facts.probe_query_fields()))
    found = checkpass.check_whole(cell, snap, [])  # ... the server's second read, as its worker runs it
    assert found is not None
    assert (found["exception"], found["line"], found["certainty"]) == (exception, LONG - 1, "certain")
    assert run_cell(kernel, cell) == (exception, LONG - 1)  # and the cell really raises there


async def test_two_reads_through_a_real_link_first_part_then_every_line(kernel: Any) -> None:
    """What the server publishes for a long cell, in order: the first part's verdict (nothing found,
    "the rest is being read"), then the one on every line; a crash in the first part ends it there."""
    prepare(kernel, SETUP)
    cell = long_cell(LONG, {LONG - 1: LAST["NameError"]}, PROVEN)
    early = long_cell(LONG, {40: "y = df['missing']", LONG - 1: LAST["NameError"]}, PROVEN)
    settings = Settings.model_validate({"dry_run": "off"})
    async with await KernelLink.connect(kernel.connection_file) as link:
        pipeline = Pipeline.from_settings(settings, link)
        first = await checkpass.run_checks_phase(_inline, pipeline, cell, [])
        assert not first.prediction.crash and first.unchecked_from == MAX_LINES
        assert (
            f"stop at line {MAX_LINES + 1} of this {LONG}-line cell: the rest is being read"
            in (first.prediction.notes[0])
        )
        whole = await checkpass.finish_checks_phase(_inline, pipeline, cell, [], first)
        assert whole is not None and whole.snapshot is not None
        found = whole.prediction
        assert (found.exception, found.line, found.certainty) == ("NameError", LONG - 1, "certain")
        assert "long_undefined_name" in found.message and not found.notes
        crash_first = await checkpass.run_checks_phase(_inline, pipeline, early, [])
        found = crash_first.prediction
        assert (found.exception, found.line, found.certainty) == ("KeyError", 40, "certain")
        assert "nothing from there on is checked" in crash_first.prediction.notes[0]
        assert await checkpass.finish_checks_phase(_inline, pipeline, early, [], crash_first) is None
    assert run_cell(kernel, early) == ("KeyError", 40)
