"""A fix may not pass by doing less: the static stop before a candidate is dry-run.

A candidate that deletes or comments out the failing call, wraps it in ``try``/``except``, or no longer
binds a name the original cell binds would "run clean" by not doing the cell's work. Refused here,
from the cells' syntax alone (the analysis's ``defines`` for the names, ``ast`` for calls and
handlers), before any fork is spent on it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from crane_lsp.analysis.origins import analyze_cached
from crane_lsp.analysis.parse import analyze


@dataclass(frozen=True)
class GuardResult:
    """``refused``: why the candidate does less (empty: it passed); ``checked``: what was compared."""

    refused: str
    checked: str


_OPERATIONS = (ast.Call, ast.BinOp, ast.Subscript)


def _calls_on(tree: ast.AST, line: int) -> int:
    """Calls, operators and subscripts that start on 1-based ``line`` (the failing one among them): a
    repair swaps or wraps an operand, it never has fewer of them."""
    return sum(1 for n in ast.walk(tree) if isinstance(n, _OPERATIONS) and getattr(n, "lineno", 0) == line)


#: Python's own call-binding errors: the call has an argument too many (or misplaced) by the
#: interpreter's rule, so a repair may drop one whole argument of it
_BINDING = re.compile(
    r"got multiple values for (?:keyword )?argument|takes .*positional arguments? but \d+ (?:were|was) given"
)


def rejects_binding(exception: str | None, message: str) -> bool:
    """The crash is Python refusing to bind a call's arguments (a TypeError the interpreter words)."""
    return exception == "TypeError" and bool(_BINDING.search(message))


def _dropped_argument_ops(old: ast.AST, new: ast.AST, line: int, new_line: int) -> int:
    """Operations inside the one argument that the edit dropped from a call on 1-based ``line``
    (``new_line`` in the edited cell; the call otherwise the same: callee, the other arguments, the
    keywords), else 0."""

    def calls(tree: ast.AST, at: int) -> list[ast.Call]:
        return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n, "lineno", 0) == at]

    for before in calls(old, line):
        args = [ast.dump(a) for a in before.args]
        for after in calls(new, new_line):
            if ast.dump(after.func) != ast.dump(before.func) or len(after.args) != len(args) - 1:
                continue
            kept = [ast.dump(a) for a in after.args]
            gone = [i for i in range(len(args)) if args[:i] + args[i + 1 :] == kept]
            same_keywords = [ast.dump(k) for k in after.keywords] == [ast.dump(k) for k in before.keywords]
            if gone and same_keywords:
                dropped = before.args[gone[0]]
                return sum(1 for n in ast.walk(dropped) if isinstance(n, _OPERATIONS))
    return 0


_NAMESPACES = frozenset({"globals", "locals", "vars"})


def _edits_namespace(tree: ast.AST) -> bool:
    """The cell deletes from or pops its namespace by key (``del globals()[k]``,
    ``globals().pop(k)``): the names it leaves are decided at run time."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id in _NAMESPACES:
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Del):
                    return True
                if isinstance(node, ast.Attribute) and node.attr in ("pop", "clear", "popitem"):
                    return True
    return False


def always_bound(source: str) -> list[str]:
    """Names the cell binds at its top level, whatever its branches and loops do (assignments,
    imports, definitions, ``with ... as``), less those a later top-level ``del`` removes: a run of it
    that completes leaves each of them bound."""
    try:
        tree = ast.parse(analyze_cached(source).python)
    except SyntaxError:
        return []
    if _edits_namespace(tree):
        return []  # ``del globals()[k]`` in a loop: which names remain is not known from the text
    names: list[str] = []
    for stmt in tree.body:
        targets: list[ast.AST] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign) and (
            not isinstance(stmt, ast.AnnAssign) or stmt.value is not None
        ):
            targets = [stmt.target]
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names += [(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"]
        elif isinstance(stmt, ast.Delete):  # ``del _tmp`` at the top level: not bound after the run
            gone = {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            names = [n for n in names if n not in gone]
        for target in targets:
            names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def _handlers(tree: ast.AST) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Try | ast.TryStar | ast.With))


def does_less(
    original: str,
    edited: str,
    failing_line: int | None,
    edited_line: int | None = None,
    *,
    binding: bool = False,
) -> GuardResult:
    """Whether ``edited`` does less than ``original``: the failing call (0-based ``failing_line`` of the
    original; ``edited_line`` where it is in the edited cell, when the fix moved it) gone or commented
    out, a new ``try``/``with`` (suppress) around it, a name the original binds no longer bound.
    ``binding``: the crash is Python refusing the call's arguments (``rejects_binding``): dropping one
    whole argument of the failing call is then the repair, not less work."""
    before, after = analyze_cached(original), analyze(edited)  # the original: once for every candidate
    bound = sorted({a.name for a in before.defines})
    checked = "binds " + (", ".join(bound) if bound else "no name") + " as the original"
    try:
        old_tree, new_tree = ast.parse(before.python), ast.parse(after.python)
    except SyntaxError:
        return GuardResult("the edited cell does not parse", checked)
    checked += "; adds no try/except"
    if _handlers(new_tree) > _handlers(old_tree):
        return GuardResult("wraps the failing code in try/except (or a suppressing with)", checked)
    if failing_line is not None:
        checked += f"; keeps the calls and operators of line {failing_line + 1}"
        wanted = _calls_on(old_tree, failing_line + 1)
        moved = failing_line if edited_line is None else edited_line
        if binding:
            wanted -= _dropped_argument_ops(old_tree, new_tree, failing_line + 1, moved + 1)
        if _calls_on(new_tree, moved + 1) < wanted:
            return GuardResult(
                f"removes or comments out the failing call on line {failing_line + 1}", checked
            )
    lost = [name for name in bound if name not in {a.name for a in after.defines}]
    if lost:
        return GuardResult(f"no longer binds {', '.join(lost)}", checked)
    return GuardResult("", checked)
