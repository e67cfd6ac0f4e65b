"""Calls into functions the user defined (earlier in the cell, or in an earlier cell): followed from source.

A call ``prep(df)`` to a plain function whose ``def`` the walk can read -- in the cell's own tree, or the
source text the kernel summary carries (``ObjectSummary.source``, read from linecache) -- is followed by
a second, inner walk of the function's body, with its parameters bound to the argument values:

- the body becomes a small synthetic "cell": one placeholder line ``p = ...`` per parameter (and per
  global the outer cell bound) so that the scan sees those names bound, then the body's text; the
  placeholders' values are put into the inner walk's ``env`` before the first body statement. A
  parameter bound to a kernel name the outer walk still trusts is not a placeholder: the inner snapshot
  holds that name's summary under the parameter's name, so every check (and the reach rule) sees it as
  a kernel value.
- the walk stops at the first top-level ``return`` (its value, when the walk computes it, flows back to
  the caller) and before any statement that could leave early (a ``return`` or ``raise`` inside).
- anything the walk cannot follow makes the call opaque, as before: ``*args``/``**kwargs``, decorators,
  closures, nested definitions, generators, ``global``/``nonlocal``, recursion, depth past
  ``MAX_DEPTH``, globals the snapshot does not hold, a non-literal default.

``Followed.pure`` says the inner walk never went opaque (nothing shared may have changed).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.funcsource import UserFunc, kernel_function
from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.parse import analyze
from crane_lsp.analysis.reach import first_risky_line
from crane_lsp.analysis.values import Val, has_star, literal
from crane_lsp.snapshot import ObjectSummary, Snapshot

#: How deep calls into user functions are followed (a call inside a followed function is depth 2).
MAX_DEPTH = 2
#: Longest function body (lines) followed.
MAX_BODY_LINES = 200

_log = logging.getLogger(__name__)
_BUILTINS = frozenset(dir(builtins))
_PLACEHOLDER = " = ..."
#: Builds the inner walk's facts (refined) and its step hooks: ``(facts, snapshot) -> (facts, hooks)``.
#: ``CellWalk`` is ``Any`` here: the walk's evaluator calls into this module, which builds walks of the
#: same type as the one it is given (``type(w)``), so it does not import the walk.
CellWalk = Any
Hook = Callable[[CellWalk, ast.stmt], list[Any]]
Prepare = Callable[[CellFacts, Snapshot], tuple[CellFacts, dict[str, Hook]]]


@dataclass
class Followed:
    """What following one call found: the first inner finding, the function-relative 1-based line it is
    on (and the earlier body line that may raise first, when reaching it is not proven), the returned
    value, and whether nothing shared changed."""

    func: UserFunc
    finding: Any | None = None
    line: int = 0
    risky_line: int | None = None  # 1-based body line that may raise before ``line``; None: none may
    returned: Val | None = None
    pure: bool = False
    renames: dict[str, tuple[str, ...]] | None = None  # parameter -> the caller's kernel variables


_ANALYZED: OrderedDict[str, CellFacts] = OrderedDict()


def _cached_analyze(source: str) -> CellFacts:
    got = _ANALYZED.get(source)
    if got is None:
        got = _ANALYZED[source] = analyze(source)
        if len(_ANALYZED) > 64:
            _ANALYZED.popitem(last=False)
    return got


def resolve(w: CellWalk, call: ast.Call) -> UserFunc | None:
    """The user function ``call`` certainly calls, or None."""
    func = call.func
    if not isinstance(func, ast.Name):
        return None
    name = func.id
    known: dict[str, UserFunc] = getattr(w, "uf_funcs", {})
    if name in known:
        return known[name]
    if name in w.env:  # bound by the cell: a ``def`` at the top level, not rebound since
        lines = _cell_lines(w)
        if lines is None:
            return None
        binds = _cell_bindings(w).get(name, [])
        at = bisect.bisect_left(binds, (w.line, -1))
        last = binds[at - 1][2] if at > 0 else None
        if not isinstance(last, ast.FunctionDef) or last.name != name:
            return None
        text = "\n".join(lines[last.lineno - 1 : last.end_lineno])
        return UserFunc(name, last, lines, f"{name}\0cell\0{last.lineno}\0{text}")
    v = w.ev(func)
    if v is None or v.kind != Kind.FUNCTION or v.summary is None:
        return None
    return kernel_function(name, v.summary)


def _cell_lines(w: CellWalk) -> tuple[str, ...] | None:
    """The cell's parsed lines, when they keep the editor's numbering (no multi-line magic); once per walk."""
    if not hasattr(w, "uf_lines"):
        same = w.tree is not None and w.facts.python.count("\n") == w.facts.source.count("\n")
        w.uf_lines = tuple(w.lines) if same else None
    got: tuple[str, ...] | None = w.uf_lines
    return got


def _cell_bindings(w: CellWalk) -> dict[str, list[tuple[int, int, ast.stmt]]]:
    """Name -> (0-based line, index, top-level statement) of each statement of the cell that binds it
    (anywhere inside), in order; built once per walk."""
    got: dict[str, list[tuple[int, int, ast.stmt]]] | None = getattr(w, "uf_binds", None)
    if got is None:
        got = w.uf_binds = {}
        for i, stmt in enumerate(w.tree.body if w.tree is not None else ()):
            for name in _binds(stmt):
                got.setdefault(name, []).append((stmt.lineno - 1, i, stmt))
    return got


def _binds(stmt: ast.stmt) -> set[str]:
    """Names ``stmt`` binds anywhere in it (assignment targets, definitions)."""
    out: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, _DEFS):
            out.add(node.name)
    return out


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: What a followed body may not hold: scope writes, generators, coroutines, closures.
_NOT_FOLLOWED = (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda, *_DEFS)


def _followable(node: ast.FunctionDef) -> bool:
    args = node.args
    if node.decorator_list or args.vararg or args.kwarg:
        return False
    return not any(isinstance(sub, _NOT_FOLLOWED) for stmt in node.body for sub in ast.walk(stmt))


def _body(node: ast.FunctionDef) -> list[ast.stmt]:
    """The statements that certainly run in order: up to the first top-level ``return`` (kept), stopping
    before a statement that holds a ``return``/``raise`` deeper down (it may leave early)."""
    out: list[ast.stmt] = []
    for stmt in node.body:
        if isinstance(stmt, ast.Return):
            out.append(stmt)
            break
        if any(isinstance(sub, (ast.Return, ast.Raise)) for sub in ast.walk(stmt)):
            break
        out.append(stmt)
    return out


def _body_text(func: UserFunc, body: list[ast.stmt]) -> tuple[str, int] | None:
    """The body's text, dedented, and the function-relative 0-based line it starts on."""
    first, last = body[0], body[-1]
    end = last.end_lineno or last.lineno
    if end - first.lineno + 1 > MAX_BODY_LINES:
        return None
    after = func.node.body[len(body)] if len(func.node.body) > len(body) else None
    if after is not None and after.lineno == end:
        return None  # ``a; b`` on one line, cut in between
    lines = list(func.lines[first.lineno - 1 : end])
    if first.lineno == func.node.lineno:  # ``def f(x): return x[0]``
        if end != first.lineno:
            return None
        return lines[0][first.col_offset :], 0
    indent = first.col_offset
    out = []
    for line in lines:
        if line.strip() and not line[:indent].isspace():
            return None  # a continuation line less indented than the body (inside a string)
        out.append(line[indent:] if line.strip() else "")
    return "\n".join(out), first.lineno - func.node.lineno


def _bind(node: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    """Parameter -> the expression giving its value (an argument, or a literal default)."""
    if has_star(call):
        return None
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    if len(call.args) > len(positional):
        return None
    bound: dict[str, ast.expr] = {p.arg: e for p, e in zip(positional, call.args, strict=False)}
    names = {p.arg for p in a.args} | {p.arg for p in a.kwonlyargs}
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in names or kw.arg in bound:
            return None
        bound[kw.arg] = kw.value
    names_ = [p.arg for p in positional]
    defaults = dict(zip(names_[len(names_) - len(a.defaults) :], a.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None})
    for p in [*positional, *a.kwonlyargs]:
        if p.arg not in bound:
            d = defaults.get(p.arg)
            if d is None or not literal(d)[0]:
                return None
            bound[p.arg] = d
    return bound


def _locals(node: ast.FunctionDef) -> set[str]:
    out = {p.arg for p in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                out.add(sub.id)
    return out


def _safe_arg(w: CellWalk, node: ast.expr) -> bool:
    """The argument expression itself cannot raise before the call runs (a name the walk knows is bound,
    a literal)."""
    if literal(node)[0]:
        return True
    if isinstance(node, ast.Call):  # a new scikit-learn estimator: its constructor only stores parameters
        v = w.ev(node)
        return v is not None and v.kind == Kind.ESTIMATOR and v.fresh
    return isinstance(node, ast.Name) and (
        node.id in w.env or node.id in w.snapshot.variables or node.id in _BUILTINS
    )


def value_before(w: CellWalk, node: ast.expr, call: ast.Call) -> Val | None:
    """``node``'s value as the argument of ``call``: read before the call runs, so the call's own
    effects on the names in it (``untrusted_from`` on this very line) do not count, unless another
    call in the statement may change them first."""
    stmt = w._stmt
    roots = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    untrusted = w.facts.untrusted_from
    if (
        stmt is None
        or w._shared_line
        or any(isinstance(n, ast.Call) for n in ast.walk(node))
        or not any(untrusted.get(r) == w.line for r in roots)
    ):
        return w.ev(node)
    for other in w.nodes(stmt):
        if not isinstance(other, ast.Call) or any(n is call for n in ast.walk(other)):
            continue  # the call itself, or one around it (which runs after it)
        callee = {n.id for n in ast.walk(other.func) if isinstance(n, ast.Name)}
        if roots & (w._call_changes(other, receivers=True) | callee):
            return w.ev(node)
    saved = w.facts
    kept = dict(untrusted)
    for r in roots:
        if kept.get(r) == w.line:
            del kept[r]
    w.facts = replace(saved, untrusted_from=kept)
    w._ver += 1
    try:
        return w.ev(node)
    finally:
        w.facts = saved
        w._ver += 1


def _root(key: str) -> str:
    return re.split(r"[.\[]", key, maxsplit=1)[0]


def _inner_snapshot(snap: Snapshot, shadow: set[str], params: dict[str, ObjectSummary]) -> Snapshot:
    """The snapshot as the function body sees it: nothing the kernel says about names the function binds
    (a kernel ``d`` and its chains are not the parameter ``d``), and each parameter bound to a kernel
    variable holding that variable's summary."""
    if not any(_root(k) in shadow for k in (*snap.variables, *snap.attributes)) and not params:
        return snap
    variables = {k: v for k, v in snap.variables.items() if _root(k) not in shadow}
    variables.update(params)
    attributes = {k: v for k, v in snap.attributes.items() if _root(k) not in shadow}
    return snap.model_copy(update={"variables": variables, "attributes": attributes})


#: The checks' ``Prepare`` (``checks.user_functions`` registers it): the inner walk runs every step hook,
#: so that a body the checks see crash returns no value and is not pure, however it is reached.
PREPARE: list[Prepare] = []


def follow(w: CellWalk, call: ast.Call) -> Followed | None:
    """Follow ``call`` into the user function it calls, or None when it cannot be followed.

    The inner walk runs the step hooks ``PREPARE`` gives (none when nothing registered); ``finding`` is
    the first one proven reached inside the body."""
    memo: dict[tuple[Any, ...], Followed | None] | None = getattr(w, "uf_memo", None)
    if memo is None:
        memo = w.uf_memo = {}
    key = (id(call), w._ver, w.line, id(w._stmt), w.opaque, w._guard, id(w.facts))
    if key not in memo:
        memo[key] = None  # while it is being followed: a call that comes back here is not followable
        try:
            memo[key] = _follow(w, call, PREPARE[0] if PREPARE else None)
        except Exception:  # a bug here must not end the caller's walk: the call stays opaque
            _log.exception("following %s failed", ast.unparse(call)[:80])
            memo[key] = None
    return memo[key]


_SHAPES: OrderedDict[str, tuple[list[ast.stmt], str, int, set[str], list[str]] | None] = OrderedDict()


def _shape(func: UserFunc) -> tuple[list[ast.stmt], str, int, set[str], list[str]] | None:
    """What does not depend on the call: the body walked, its text and first line, the function's local
    names and the names it reads from outside; None when the function cannot be followed. Cached."""
    if func.key in _SHAPES:
        return _SHAPES[func.key]
    got = None
    body = _body(func.node) if _followable(func.node) else []
    text = _body_text(func, body) if body else None
    if text is not None:
        local = _locals(func.node)
        free = sorted({n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)} - local)
        got = (body, text[0], text[1], local, free)
    _SHAPES[func.key] = got
    if len(_SHAPES) > 64:
        _SHAPES.popitem(last=False)
    return got


def _follow(w: CellWalk, call: ast.Call, prepare: Prepare | None) -> Followed | None:
    func = resolve(w, call)
    depth: int = getattr(w, "uf_depth", 0)
    stack: tuple[str, ...] = getattr(w, "uf_stack", ())
    if func is None or depth >= MAX_DEPTH or func.key in stack:
        return None
    shape = _shape(func)
    bound = _bind(func.node, call)
    if (
        shape is None
        or bound is None
        or not all(_safe_arg(w, e) for e in [*call.args, *(k.value for k in call.keywords)])
    ):
        return None
    body, text, offset, local, free = shape
    values: dict[str, Val | None] = {}
    kernel_params: dict[str, ObjectSummary] = {}
    renames: dict[str, tuple[str, ...]] = {}
    literals: dict[str, str] = {}
    for param, expr in bound.items():
        if literal(expr)[0] and "\n" not in (src := ast.unparse(expr)):
            literals[param] = src  # bound by the placeholder line itself: ``col = 'b'``
            continue
        v = value_before(w, expr, call)
        if (
            isinstance(expr, ast.Name)
            and expr.id not in w.env
            and v is not None
            and v.summary is not None
            and v.summary is w.snapshot.variables.get(expr.id)
        ):
            kernel_params[param] = v.summary
            renames[param] = (expr.id,)
        else:
            values[param] = replace(v, text=param) if v is not None else None
            if v is not None:
                renames[param] = v.variables
    inner_funcs: dict[str, UserFunc] = {}
    for n in free:
        if n == func.name:
            return None  # recursion
        if n in w.env:
            fn = resolve(w, ast.Call(func=ast.Name(id=n, ctx=ast.Load()), args=[], keywords=[]))
            if fn is not None:
                inner_funcs[n] = fn
            values[n] = w.env[n]
        elif n in w.snapshot.variables:
            if w.opaque or not w.trusted(n):
                values[n] = None
        elif n not in _BUILTINS:
            return None  # a global the snapshot does not hold
    prefix = [f"{n} = {src}" for n, src in literals.items()] + [f"{n}{_PLACEHOLDER}" for n in values]
    source = "\n".join([*prefix, text])
    facts = _cached_analyze(source)
    if facts.syntax_error or not facts.analyzed or set(facts.read_names()) & (local - set(bound)):
        return None  # a local read before the body binds it (UnboundLocalError, not the kernel's value)
    snap = _inner_snapshot(w.snapshot, local | set(values) | set(literals), kernel_params)
    hooks: dict[str, Hook] = {}
    if (
        prepare is not None
    ):  # else the facts stay unrefined: a name passed to any plain function is distrusted
        facts, hooks = prepare(facts, snap)
    inner = type(w)(facts, snap)
    inner.uf_depth = depth + 1  # type: ignore[attr-defined]
    inner.uf_stack = (*stack, func.key)  # type: ignore[attr-defined]
    inner.uf_funcs = inner_funcs  # type: ignore[attr-defined]
    inner.opaque = w.opaque
    out = Followed(func=func, renames=renames)
    n_prefix = len(prefix)
    seeded = not values
    found: list[Any] = []
    for stmt in inner.steps():
        if stmt.lineno <= n_prefix:
            continue
        if not seeded:
            for n in values:
                inner.env[n] = values[n]
            inner._ver += 1
            seeded = True
        for hook in hooks.values():
            try:
                found.extend(hook(inner, stmt))
            except Exception:
                continue
        if found:
            break
        # a value, when nothing before the ``return`` may raise (a caller's check on the same line would
        # otherwise report its own crash where the body's comes first)
        if (
            isinstance(stmt, ast.Return)
            and stmt.value is not None
            and stmt in inner.tree.body  # type: ignore[union-attr]
            and first_risky_line(facts, snap, stmt.lineno - 1) is None
        ):
            out.returned = inner.ev(stmt.value)
    else:
        # the whole body was walked (a ``return`` or ``raise`` inside a branch cut it short: not pure)
        out.pure = not inner.opaque and (len(body) == len(func.node.body) or isinstance(body[-1], ast.Return))
    if found:
        first = min(found, key=lambda f: (f.span.line, f.span.col))
        if not inner.opaque:
            risky = first_risky_line(facts, snap, first.span.line, first.span.col)
            out.finding = first
            out.line = offset + first.span.line - n_prefix + 1
            if risky is not None:
                out.risky_line = offset + max(risky - n_prefix, 0) + 1
    return out


def returned(w: CellWalk, call: ast.Call) -> Val | None:
    """What ``call`` into a user function returns, when the inner walk computes it."""
    got = follow(w, call)
    if got is None or got.returned is None:
        return None
    back = got.returned
    renames = got.renames or {}
    variables = tuple(dict.fromkeys(v for n in back.variables for v in renames.get(n, (n,))))
    return replace(back, text=w.text(call), variables=variables)


def pure_user_call(w: CellWalk, call: ast.Call) -> bool:
    """``call`` runs a user function the walk followed to its end, and nothing shared changed in it."""
    got = follow(w, call)
    return got is not None and got.pure
