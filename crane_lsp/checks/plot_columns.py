"""Column names that the plotting call looks up in a DataFrame and does not find.

- ``plot.seaborn-column``: ``sns.scatterplot(data=df, x='Agee', y='b')``. seaborn 0.13 resolves a string
  given for ``x``/``y``/``hue``/... among ``data``'s columns and then its index level names, and raises
  ``ValueError: Could not interpret value `Agee` for `x``` when neither has it (``regplot``/``lmplot`` index
  the frame directly: ``KeyError``; ``pairplot``'s ``hue`` too).
- ``plot.frame-column``: ``df.plot(x='Agee', y='b')``, ``df.plot.scatter(x=..., y=...)``, ``y=['b', 'c']``:
  pandas' ``PlotAccessor`` indexes the frame with ``x`` and ``y`` before drawing: ``KeyError``.

Certain only when the frame is pandas' own class with every column label known (``Val.labels``), all of them
strings, its index names known too (seaborn), and the function is the library's own (the probe read
``sns.scatterplot`` from the loaded module: a name rebound by the user is not judged).
"""

from __future__ import annotations

import ast
import difflib

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val, has_star
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

SEABORN = "plot.seaborn-column"
FRAME = "plot.frame-column"
_PANDAS_FRAME = ("pandas.DataFrame", "pandas.core.frame.DataFrame")
_SNS_KEYS = ("x", "y", "hue", "size", "style", "units", "weights", "col", "row")
#: seaborn functions (0.13) that resolve those keywords through ``VectorPlotter``/``PlotData``: ValueError.
SNS_VALUE_ERROR = frozenset(
    {
        "scatterplot", "lineplot", "relplot", "histplot", "kdeplot", "ecdfplot", "rugplot", "displot",
        "barplot", "boxplot", "violinplot", "boxenplot", "stripplot", "swarmplot", "pointplot",
        "countplot", "catplot",
    }
)  # fmt: skip
#: seaborn functions that index ``data`` with the name (``data[x]``): KeyError; the keywords they index.
SNS_KEY_ERROR = {"regplot": ("x", "y"), "lmplot": ("x", "y"), "pairplot": ("hue",)}
#: ``df.plot.<kind>`` / ``df.plot(kind=...)`` kinds whose ``x``/``y`` pandas looks up as columns.
_FRAME_KINDS = frozenset({"line", "bar", "barh", "scatter", "area", "hexbin"})


def _frame(v: Val | None) -> bool:
    return (
        v is not None
        and v.kind == Kind.DATAFRAME
        and v.summary is not None
        and v.summary.type in _PANDAS_FRAME
        and v.labels is not None
        and all(isinstance(c, str) for c in v.labels)
    )


def _names(w: CellWalk, node: ast.expr, allow_list: bool) -> list[tuple[str, ast.expr]]:
    """The column names a keyword's value gives: a string (or, when allowed, a list of strings)."""
    ok, value = w.const(node)
    if ok and isinstance(value, str):
        return [(value, node)]
    if allow_list and ok and isinstance(value, list) and all(isinstance(v, str) for v in value):
        elts = (
            node.elts if isinstance(node, ast.List) and len(node.elts) == len(value) else [node] * len(value)
        )
        return list(zip(value, elts, strict=True))
    return []


def _seaborn_function(w: CellWalk, call: ast.Call) -> str | None:
    """``sns.<name>`` when it is seaborn's own function (the probe read it from the loaded module)."""
    if not isinstance(call.func, ast.Attribute):
        return None
    mod = w.module_of(call.func.value)
    if mod is None or mod.split(".")[0] != "seaborn":
        return None
    name = call.func.attr
    if name not in SNS_VALUE_ERROR and name not in SNS_KEY_ERROR:
        return None
    fn = w.snapshot.variables.get(w.text(call.func))
    if fn is None or fn.kind != Kind.FUNCTION or not (fn.module or "").startswith("seaborn"):
        return None
    versions = w.snapshot.versions
    parts = (((versions.packages.get("seaborn") if versions else None) or "0") + ".0").split(".")
    if not (parts[0].isdigit() and parts[1].isdigit()) or (int(parts[0]), int(parts[1])) < (0, 11):
        return None  # seaborn 0.11 (2020) brought the variable lookup these rules describe
    return name


@step(SEABORN, on=(ast.Call,), words=(*sorted(SNS_VALUE_ERROR), *SNS_KEY_ERROR))
def _seaborn(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A seaborn call naming a column that is neither a column nor an index level of ``data``."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not isinstance(node, ast.Call) or has_star(node):
            continue
        name = _seaborn_function(w, node)
        if name is None:
            continue
        data_node = next(
            (k.value for k in node.keywords if k.arg == "data"), node.args[0] if node.args else None
        )
        if data_node is None or len(node.args) > 1:
            continue
        data = w.ev(data_node)
        if data is None or not _frame(data) or data.index_names is None or data.labels is None:
            continue
        keys = SNS_KEY_ERROR.get(name, _SNS_KEYS)
        for kw in node.keywords:
            if kw.arg not in keys:
                continue
            for col, where in _names(w, kw.value, allow_list=False):
                if col in data.labels or (name not in SNS_KEY_ERROR and col in data.index_names):
                    continue
                exc = "KeyError" if name in SNS_KEY_ERROR else "ValueError"
                return finding_at(
                    w,
                    SEABORN,
                    exc,
                    where,
                    f"sns.{name}: {kw.arg}={col!r} is not a column of {data.text}",
                    [(f"{data.text}.columns", str(list(data.labels))[:300])],
                    [data],
                    replacement=_closest(col, data.labels) if isinstance(where, ast.Constant) else None,
                )
    return []


def _closest(word: str, labels: tuple[object, ...]) -> tuple[str, str] | None:
    close = difflib.get_close_matches(word, [str(c) for c in labels], n=1)
    return (repr(close[0]), f"use the column {close[0]!r}") if close else None


def _frame_plot(w: CellWalk, call: ast.Call) -> Val | None:
    """The frame of ``df.plot(...)`` (kind absent or a literal of ``_FRAME_KINDS``) or ``df.plot.<kind>``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "plot":
        kind = next((k.value for k in call.keywords if k.arg == "kind"), None)
        ok, value = w.const(kind) if kind is not None else (True, "line")
        if call.args or not ok or value not in _FRAME_KINDS:
            return None
        base = func.value
    elif isinstance(func.value, ast.Attribute) and func.value.attr == "plot" and func.attr in _FRAME_KINDS:
        if call.args:
            return None
        base = func.value.value
    else:
        return None
    frame = w.ev(base)
    return frame if _frame(frame) else None


def _matplotlib_loaded(w: CellWalk) -> bool:
    """pandas draws with matplotlib: without it ``df.plot`` raises ImportError before looking at columns."""
    return "matplotlib" in w.snapshot.imported or any(
        s.kind == Kind.MODULE and (s.module or "").split(".")[0] == "matplotlib"
        for s in w.snapshot.variables.values()
    )


@step(FRAME, on=(ast.Call,), words=("plot",))
def _frame_columns(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``df.plot(x=..., y=...)`` naming a column the frame does not have."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not isinstance(node, ast.Call) or has_star(node):
            continue
        frame = _frame_plot(w, node)
        if frame is None or frame.labels is None or not _matplotlib_loaded(w):
            continue
        for kw in node.keywords:
            if kw.arg not in ("x", "y"):
                continue
            for col, where in _names(w, kw.value, allow_list=kw.arg == "y"):
                if col in frame.labels:
                    continue
                return finding_at(
                    w,
                    FRAME,
                    "KeyError",
                    where,
                    f"{frame.text}.plot: {kw.arg}={col!r} is not a column of {frame.text}",
                    [(f"{frame.text}.columns", str(list(frame.labels))[:300])],
                    [frame],
                    replacement=_closest(col, frame.labels) if isinstance(where, ast.Constant) else None,
                )
    return []
