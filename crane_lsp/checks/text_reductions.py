"""pandas reductions that need numbers, on text: ``df.mean()`` / ``df['name'].mean()`` /
``df.groupby('k').mean()`` where a column holds text.

pandas 3 raises ``TypeError`` (``Cannot perform reduction 'mean' with string dtype``; in a groupby
``dtype 'str' does not support operation 'mean'``; on an object column ``Could not convert 'x' to numeric``)
unless ``numeric_only=True`` drops such columns. ``sum``, ``min``, ``max`` and ``describe`` work on text and
are not judged; nor is pandas before 2.0 (the probe's version), where ``mean`` dropped text columns. A
column counts as text when the probe read its dtype as pandas' string dtype (``str``,
``string``) or, for an ``object`` column, when its value statistics hold a string ``float()`` rejects. The
receiver must be pandas' own ``DataFrame``/``Series`` (a subclass may override the reduction) whose every
column summary is known (``frame_columns``): a kernel frame, a column selection or a drop of one.
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val, frame_columns, has_star
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step
from crane_lsp.snapshot import ColumnSummary, ValueStats

CHECK = "pandas.text-reduction"
#: Reductions pandas computes in floating point: each raises TypeError on a text column.
NUMERIC_REDUCTIONS = ("mean", "median", "std", "var", "sem", "skew", "kurt")
_STRING_DTYPES = ("str", "string", "string[python]", "string[pyarrow]")
_PANDAS_FRAME = ("pandas.DataFrame", "pandas.core.frame.DataFrame")
_PANDAS_SERIES = ("pandas.Series", "pandas.core.series.Series")
#: Keywords of ``groupby`` that do not change which columns are aggregated.
_PLAIN_GROUPBY = frozenset({"as_index", "sort", "group_keys", "observed", "dropna"})


def _text(dtype: str | None, stats: ValueStats | None) -> str | None:
    """An example of the text a column holds, when it certainly holds text (None: not proven)."""
    if dtype in _STRING_DTYPES:
        bad = [b for b in (stats.non_numeric_examples or []) if b.startswith(("'", '"'))] if stats else []
        return bad[0] if bad else f"dtype {dtype}"
    if dtype == "object" and stats is not None:
        bad = [b for b in stats.non_numeric_examples or [] if b.startswith(("'", '"'))]
        return bad[0] if bad else None
    return None


def _text_column(cols: tuple[ColumnSummary, ...], skip: tuple[str, ...] = ()) -> tuple[str, str] | None:
    for c in cols:
        if c.name in skip or c.label_repr is not None:
            continue
        example = _text(c.dtype, c.stats)
        if example is not None:
            return c.name, example
    return None


def _which(name: str, v: Val) -> str:
    return name if v.kind == Kind.SERIES else f"column {name!r}"


def _own_frame(v: Val) -> bool:
    """pandas' own DataFrame: a kernel one (its summary says so) or one derived from it by the walk."""
    if v.summary is not None:
        return v.summary.type in _PANDAS_FRAME
    return v.columns is not None  # a selection/drop of a kernel frame: pandas builds its own class


def _plain_call(call: ast.Call) -> bool:
    """No positional arguments, ``numeric_only`` absent or False, only ``skipna`` besides."""
    if call.args or has_star(call):
        return False
    for kw in call.keywords:
        if kw.arg == "numeric_only" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            continue
        if kw.arg != "skipna":
            return False
    return True


def _group_keys(w: CellWalk, call: ast.AST) -> tuple[Val, tuple[str, ...]] | None:
    """``frame.groupby('k')`` / ``frame.groupby(['a', 'b'])`` by existing columns: (frame, keys)."""
    if (
        not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute))
        or call.func.attr != "groupby"
    ):
        return None
    if len(call.args) != 1 or has_star(call) or any(k.arg not in _PLAIN_GROUPBY for k in call.keywords):
        return None
    ok, key = w.const(call.args[0])
    keys = (key,) if ok and isinstance(key, str) else tuple(key) if ok and isinstance(key, list) else None
    frame = w.ev(call.func.value)
    if keys is None or frame is None or frame.kind != Kind.DATAFRAME or frame.labels is None:
        return None
    if not all(isinstance(k, str) and frame.labels.count(k) == 1 for k in keys):
        return None
    return frame, keys


def _pandas_2(w: CellWalk) -> bool:
    """pandas 2.0 made ``numeric_only=False`` the default: before, ``df.mean()`` dropped text columns."""
    versions = w.snapshot.versions
    major = (versions.packages.get("pandas") or "0").split(".")[0] if versions is not None else "0"
    return major.isdigit() and int(major) >= 2


@step(CHECK, on=(ast.Call,), words=NUMERIC_REDUCTIONS)
def _text_reduction(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``mean``/``median``/``std``/... of a frame, column or groupby that holds text, without numeric_only."""
    if not _pandas_2(w):
        return []
    for node, method in w.method_calls(stmt, *NUMERIC_REDUCTIONS):
        if not _plain_call(node):
            continue
        grouped = _group_keys(w, method.value)
        if grouped is not None:
            frame, keys = grouped
            cols = frame_columns(frame)
            bad = _text_column(cols, keys) if cols is not None and _own_frame(frame) else None
            where = f"{w.text(method.value)}"
        else:
            got = w.ev(method.value)
            if got is None:
                continue
            frame = got
            if frame.kind == Kind.DATAFRAME:
                cols = frame_columns(frame)
                bad = _text_column(cols) if cols is not None and _own_frame(frame) else None
            elif frame.kind == Kind.SERIES and (
                frame.summary is None or frame.summary.type in _PANDAS_SERIES
            ):
                example = _text(frame.dtype, frame.stats)
                bad = (frame.text, example) if example is not None else None
            else:
                bad = None
            where = frame.text
        if bad is None:
            continue
        return finding_at(
            w,
            CHECK,
            "TypeError",
            node,
            f"{where}.{method.attr}() needs numbers, but {_which(bad[0], frame)} holds text (e.g. {bad[1]}); "
            f"select the numeric columns or pass numeric_only=True",
            [(f"{bad[0]} holds", bad[1])],
            [frame],
        )
    return []
