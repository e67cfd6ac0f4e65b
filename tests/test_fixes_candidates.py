"""Candidates and the does-less guard on their own (pure: the verification in a real kernel is in
test_fixes_verify.py and test_fixes_families.py)."""

from __future__ import annotations

from crane_lsp.fixes.candidates import candidates
from crane_lsp.fixes.edit import apply, changed_chars, unified_diff
from crane_lsp.fixes.guard import does_less
from crane_lsp.prediction import Fix, Prediction, Source

CELL = "if True:\n    total = df['Region'].sum()\nshown = total"


def observed(exception: str, line: int, message: str = "", raw_message: str = "") -> Prediction:
    """A dry run's verdict: ``exception`` raised on 0-based ``line``, with its words."""
    return Prediction(
        crash=True,
        certainty="observed",
        exception=exception,
        line=line,
        message=message,
        raw_message=raw_message,
        source=Source(layer="dryrun"),
    )


def test_the_llms_prose_fix_becomes_an_edit_when_it_quotes_a_line() -> None:
    p = Prediction(
        crash=True,
        certainty="observed",
        exception="KeyError",
        line=1,
        fix=Fix(description="Use the lowercase column: `total = df['region'].sum()`"),
        source=Source(layer="dryrun"),
    )
    (fix,) = [f for f in candidates(p, CELL) if f.layer == "llm"]
    assert fix.new_text == "    total = df['region'].sum()"  # its indentation kept
    assert (fix.start_line, fix.end_line) == (1, 2)
    prose = p.model_copy(update={"fix": Fix(description="rename the column to lowercase")})
    assert not [f for f in candidates(prose, CELL) if f.layer == "llm"]


def test_smallest_change_first_and_the_diff() -> None:
    small = Fix(description="a", start_line=1, end_line=2, new_text="    total = df['region'].sum()")
    big = Fix(
        description="b", start_line=1, end_line=2, new_text="    total = df.iloc[:, 0].astype(float).sum()"
    )
    assert changed_chars(CELL, small) < changed_chars(CELL, big)
    diff = unified_diff(CELL, small, "cell 2")
    assert "-    total = df['Region'].sum()" in diff and "+    total = df['region'].sum()" in diff


def test_the_guard_names_what_does_less() -> None:
    def edited(text: str, start: int = 1, end: int = 2) -> str:
        out = apply(CELL, Fix(description="d", start_line=start, end_line=end, new_text=text))
        assert out is not None
        return out

    assert does_less(CELL, edited("    total = df['region'].sum()"), 1).refused == ""
    assert "comments out" in does_less(CELL, edited("    total = 0  # df['Region'].sum()"), 1).refused
    wrapped = "    try:\n        total = df['Region'].sum()\n    except KeyError:\n        total = 0"
    assert "try/except" in does_less(CELL, edited(wrapped), 1, 2).refused
    assert "no longer binds shown" in does_less(CELL, edited("show = total", 2, 3), 1).refused


def test_a_numeric_option_the_library_takes_as_text() -> None:
    p = observed("ValueError", 0, message="ValueError: 45 option for line not understood")
    (fix,) = candidates(p, "fig = sm.qqplot(x, line=45, fit=True)")
    assert fix.new_text == "fig = sm.qqplot(x, line='45', fit=True)" and fix.layer == "dryrun-facts"


def test_a_remove_is_made_tolerant_only_where_the_cell_drops_that_label_so() -> None:
    """``items.remove('x')`` failing is silenced only when the cell already drops 'x' only where it is
    still there: elsewhere the label may be a typo, and a tolerant remove would do less."""
    p = observed("ValueError", 1, raw_message="list.remove(x): x not in list")
    tolerant = "df.drop(columns='units', inplace=True, errors='ignore')\ncols.remove('units')"
    (fix,) = [f for f in candidates(p, tolerant) if "only where present" in f.title]
    assert fix.new_text == "if 'units' in cols: cols.remove('units')"
    strict = "df.drop(columns='units', inplace=True)\ncols.remove('units')"
    assert not [f for f in candidates(p, strict) if "only where present" in f.title]
    other = "df.drop(columns='size', errors='ignore')\ncols.remove('units')"
    assert not [f for f in candidates(p, other) if "only where present" in f.title]


def test_keys_from_another_frame_needs_the_keys_to_come_from_elsewhere() -> None:
    p = observed("KeyError", 3)
    cell = "keys = wide.columns\npart = narrow[narrow['c'] == 0]\nfor k in keys:\n    part[k].max()"
    titles = [f.title for f in candidates(p, cell)]
    assert "Take part from wide (the frame the keys come from)" in titles
    same = "keys = narrow.columns\npart = narrow[narrow['c'] == 0]\nfor k in keys:\n    part[k].max()"
    assert not [f for f in candidates(p, same) if f.title.startswith("Take part")]


def test_labels_per_tick_only_replaces_a_list_of_the_counted_length() -> None:
    p = observed("ValueError", 1, message="ValueError: 2 labels are given for 3 tick positions: one per tick")
    cell = "d = Display(cm, display_labels=['a', 'b'])\nd.plot()"
    (fix,) = [f for f in candidates(p, cell) if f.title.startswith("Let the library")]
    assert (fix.start_line, fix.new_text) == (0, "d = Display(cm, display_labels=None)")
    three = "d = Display(cm, display_labels=['a', 'b', 'c'])\nd.plot()"
    assert not [f for f in candidates(p, three) if f.title.startswith("Let the library")]


def test_a_name_the_cell_deletes_at_the_top_level_is_not_expected_bound() -> None:
    from crane_lsp.fixes.guard import always_bound

    cell = "import pandas as _pd\n_cats = list(df['a'])\ndf['b'] = _pd.Categorical(_cats)\ndel _pd, _cats"
    assert always_bound(cell) == ["df"]  # the frame it writes into stays; the temporaries go
    assert always_bound("_tmp = 1\ndel _tmp\n_tmp = 2") == ["_tmp"]
    dynamic = "_rp_a = 1\nx = 2\nfor k in [k for k in globals() if k[0] == '_']:\n    del globals()[k]"
    assert always_bound(dynamic) == [], "names deleted by key at run time: no claim"


def test_the_nearest_parameter_breaks_a_tie_by_the_shared_beginning() -> None:
    from crane_lsp.fixes.near import nearest

    assert nearest("cs", ["s", "c", "marker"]) == "c"  # as near as 's' by difflib: 'c' begins it
    assert nearest("sizes", ["loc", "scale", "size"]) == "size"
    assert nearest("zzz", ["loc", "scale"]) is None
