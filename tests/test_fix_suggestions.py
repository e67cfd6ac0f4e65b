"""Certain repairs: a misspelt column literal is replaced by the one existing column it meant."""

from __future__ import annotations

import ast

from crane_lsp.analysis.positions import Span
from crane_lsp.checks.pandas import _did_you_mean
from crane_lsp.checks.registry import Finding
from crane_lsp.pipeline import finding_to_prediction


def _const(text: str) -> ast.AST:
    return ast.parse(text, mode="eval").body


def test_case_insensitive_match_is_suggested() -> None:
    assert _did_you_mean(_const("'Region'"), ["Region"], ["date", "region", "units"]) == (
        "'region'",
        "did you mean 'region'?",
    )


def test_close_spelling_is_suggested_only_when_unambiguous() -> None:
    assert _did_you_mean(_const("'revenu'"), ["revenu"], ["revenue", "units"]) == (
        "'revenue'",
        "did you mean 'revenue'?",
    )
    assert (
        _did_you_mean(_const("'price_1'"), ["price_1"], ["price_2", "price_3"]) is None
    )  # two equally close
    assert _did_you_mean(_const("'zzz'"), ["zzz"], ["revenue", "units"]) is None


def test_only_a_single_string_literal_is_rewritten() -> None:
    assert _did_you_mean(_const("['Region']"), ["Region"], ["region"]) is None
    assert _did_you_mean(_const("'Region'"), ["Region", "Units"], ["region", "units"]) is None


def test_fix_is_a_whole_line_edit_keeping_the_users_quotes() -> None:
    target = 'x = 1\ntotal = df["Region"].sum()\n'
    finding = Finding(
        check_id="pandas.missing-column",
        exception="KeyError",
        span=Span(1, 11, 1, 19),
        message="column 'Region' does not exist in df",
        replacement=(Span(1, 11, 1, 19), "'region'", "did you mean 'region'?"),
    )
    prediction = finding_to_prediction(finding, [], target)
    assert prediction.fix is not None
    assert (prediction.fix.start_line, prediction.fix.end_line) == (1, 2)
    assert prediction.fix.new_text == 'total = df["region"].sum()'
    assert prediction.fix.description == "did you mean 'region'?"
