"""The kind of answer a Prediction is, as a typed field every door decides from (issue 35).

The model refuses a verdict that disagrees with ``crash`` and a no-verdict without its reason; the
hover, the terminal's walk, ``check``'s exit status and the JSON read the field, so rewording a
headline changes no decision. The real-kernel side (timeout, blocked, ends-kernel, clean, a kernel
that dies) is in tests/test_jail_verdicts.py.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crane_lsp.dryrun import DryRunOutcome, outcome_to_prediction
from crane_lsp.dryrun.shortened import ShortenedRun, ShortenedRuns, judge
from crane_lsp.output_json import cell_json
from crane_lsp.prediction import Prediction


def test_the_verdict_follows_crash_and_a_no_verdict_names_its_reason() -> None:
    assert Prediction(crash=True, certainty="certain", exception="KeyError").verdict == "crash"
    assert Prediction.nothing_found().verdict == "nothing-found"
    assert Prediction.ran_clean("ran clean").verdict == "clean"
    with pytest.raises(ValidationError):
        Prediction(crash=False, certainty="none", verdict="crash")
    with pytest.raises(ValidationError):
        Prediction(crash=False, certainty="none", verdict="no-verdict")  # no reason
    with pytest.raises(ValidationError):
        Prediction(crash=True, certainty="observed", no_verdict="timeout")


def test_a_headline_in_any_words_is_still_a_no_verdict() -> None:
    """The decision never reads the message: a reworded headline keeps its hover and its kind."""
    reworded = Prediction.unanswered("timeout", "the sandboxed copy ran out of time")
    assert reworded.says_why_not() and not Prediction.nothing_found("no verdict: words only").says_why_not()
    assert Prediction.unanswered("llm-failed", "the model was silent").llm_unanswered()
    assert not reworded.llm_unanswered()


@pytest.mark.parametrize(
    ("outcome", "verdict", "reason"),
    [
        ({"outcome": "completed"}, "clean", None),
        ({"outcome": "completed", "standin": {"devices": ["cuda:0"]}}, "nothing-found", None),
        ({"outcome": "timeout", "budget_s": 2.0}, "no-verdict", "timeout"),
        ({"outcome": "blocked", "message": "writes a file"}, "no-verdict", "blocked"),
        ({"outcome": "exits", "message": "os._exit(1)"}, "no-verdict", "ends-kernel"),
        ({"outcome": "no_verdict", "message": "needs the values of t"}, "no-verdict", "needs-values"),
        ({"outcome": "unavailable", "message": "no fork"}, "nothing-found", None),
        ({"outcome": "raised", "exception": "ValueError", "message": "bad\nmore", "line": 1}, "crash", None),
    ],
)
def test_each_dry_run_outcome_has_its_kind(
    outcome: dict[str, object], verdict: str, reason: str | None
) -> None:
    p = outcome_to_prediction(DryRunOutcome.model_validate(outcome), "x = f()\n")
    assert (p.verdict, p.no_verdict) == (verdict, reason), p
    if verdict == "crash":
        assert p.raw_message == "bad\nmore" and p.message == "ValueError: bad"


def _run(outcome: str, **fields: object) -> ShortenedRun:
    return ShortenedRun.model_validate({"outcome": outcome, "plan": {"rows": 1000}, **fields})


def test_shortened_runs_say_which_kind_of_no_verdict() -> None:
    raised = {"exception": "KeyError", "message": "'k'", "line": 2}
    alone = judge(ShortenedRuns(runs=[_run("raised", **raised)]), "3 s", "a\nb\n")
    assert (alone.verdict, alone.no_verdict) == ("no-verdict", "shortened-doubt"), alone
    skipped = judge(ShortenedRuns(runs=[], skipped_full="it ran 40 s in the kernel before"), "3 s", "a\n")
    assert (skipped.verdict, skipped.no_verdict) == ("no-verdict", "not-run"), skipped
    quiet = judge(ShortenedRuns(runs=[_run("completed")]), "3 s", "a\n")
    assert quiet.verdict == "nothing-found" and quiet.message.startswith("no crash seen in a shortened run")


def test_the_json_carries_the_kind_and_the_reason() -> None:
    row = cell_json(
        0, Prediction.unanswered("blocked", "no verdict: stopped"), execution_counts=[1], executed_cells=[]
    )
    assert (row.verdict, row.no_verdict, row.crash) == ("no-verdict", "blocked", False)
    crash = cell_json(
        0, Prediction(crash=True, certainty="observed"), execution_counts=[1], executed_cells=[]
    )
    assert (crash.verdict, crash.no_verdict) == ("crash", None)


def test_the_terminal_repeats_no_raw_message_and_decides_from_the_fields() -> None:
    """``check``'s panel shows an observed crash's headline only when it says more than the library's
    own message (which the diagnosis quotes): a cause, or a shortened run; never by comparing words."""
    from crane_lsp.commands.render import cause_line
    from crane_lsp.prediction import Source

    def observed(message: str, raw: str, cause: str = "") -> Prediction:
        return Prediction(
            crash=True,
            certainty="observed",
            exception="KeyError",
            message=message,
            raw_message=raw,
            cause=cause,
            diagnosis=f"seen: {raw}. {raw}",  # the raw message quoted, however it is worded
            source=Source(layer="dryrun"),
        )

    assert cause_line(observed("KeyError: 'price'", "'price'\nmore lines")) == ""
    assert cause_line(observed("`df` has no column 'price'", "'price'", cause="no column")) != ""
    shortened = "KeyError: 'price' (raised at line 2 in a shortened run: 1,000 of 90,000 rows)"
    assert cause_line(observed(shortened, "'price'")) == shortened
    checks = Prediction(crash=True, certainty="certain", exception="KeyError", message="m", raw_message="x")
    assert cause_line(checks) == ""
