"""The value walk: a cell's certainly-run statements in order, with what each name holds before each.

A tiny abstract interpreter: a name is read from the snapshot until the cell (or code the analysis
cannot follow, per ``facts.untrusted_from``) may have changed it; names the cell binds by simple
assignment get the value of their right-hand side when that is known (a new estimator, a ``.T`` of a
known array), and become unknown otherwise. Anything uncertain is ``None``, and checks stay silent on
``None``. The checks are step hooks on this ONE walk (``checks.registry``): each statement is visited
once, with every hook called on it in the state the walk has there.

``for`` loops over known items (literal lists/tuples of int/str, ``range`` with known bounds, a kernel
list/tuple whose items the probe reported, ``df.columns`` of a frame with exact labels) are walked pass by
pass with the loop name bound to each item (see ``CellWalk._passes``); a finding in a pass names the item.
The probe omits list items in privacy mode, so loops over kernel lists are not walked there.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from crane_lsp.analysis.effects import MUTATING_LIB_FUNCS, NON_RETAINING_BUILTINS, PURE_BUILTINS
from crane_lsp.analysis.evaluate import Evaluator
from crane_lsp.analysis.facts import UNTRUSTED_ALL, CellFacts
from crane_lsp.analysis.kinds import Kind, constant_kind
from crane_lsp.analysis.positions import Span
from crane_lsp.analysis.userfuncs import pure_user_call
from crane_lsp.analysis.values import (
    _CHAIN_METHODS,
    _IMMUTABLE_KINDS,
    _NEW_OBJECT_METHODS,
    LIB_KINDS,
    PURE_LIBS,
    PURE_METHODS,
    Val,
    first_layer_linear,
    has_star,
    root_name,
)
from crane_lsp.analysis.values import child_nodes as _children
from crane_lsp.analysis.values import walk_list as _walk_list
from crane_lsp.snapshot import Snapshot

#: Passes of one ``for`` loop the walk follows, and loop-body statements it visits in all.
MAX_LOOP_PASSES = 50
MAX_LOOP_STEPS = 2000


class _Env(dict[str, "Val | None"]):
    """The walk's name -> value map; every write is noted in ``written`` (names bound since the walk last
    went opaque, which going opaque must forget)."""

    def __init__(self, written: set[str], items: dict[str, Val | None] | None = None) -> None:
        super().__init__(items or {})
        self.written = written

    def __setitem__(self, key: str, value: Val | None) -> None:
        super().__setitem__(key, value)
        self.written.add(key)

    def update(self, other: Any = (), **kw: Any) -> None:  # type: ignore[override]
        for key, value in dict(other, **kw).items():
            self[key] = value


class CellWalk(Evaluator):
    """Walk a cell's certainly-executed statements; evaluate expressions against the snapshot."""

    def __init__(self, facts: CellFacts, snapshot: Snapshot) -> None:
        self.facts = facts
        self.snapshot = snapshot
        self.lines = facts.python.splitlines()
        self.tree: ast.Module | None = facts.tree()
        self._since_opaque: set[str] = set()  # names bound since the walk last went opaque
        self.env: dict[str, Val | None] = _Env(self._since_opaque)  # names the cell bound (None: unknown)
        self.line = 0  # 0-based line of the statement being looked at
        self._stmt: ast.stmt | None = None
        self._ver = 0  # bumped whenever ``env`` or ``opaque`` changes: part of the ``ev`` memo key
        self._memo: dict[tuple[int, int, int, int, bool, bool], Val | None] = {}
        self._texts: dict[int, str] = {}
        self._evaluated: dict[int, list[ast.AST]] = {}
        self._nodes: dict[int, list[ast.AST]] = {}
        self._of_stmt: ast.stmt | None = None  # the statement ``_of_type`` is about
        self._of_type: dict[tuple[type[ast.AST], ...], list[Any]] = {}
        self._of_kinds: frozenset[type[ast.AST]] = frozenset()
        self._kinds: dict[int, frozenset[type[ast.AST]]] = {}
        # set once the cell changed an object that other kernel names may share (``d['x'] = 1`` for a ``d``
        # from a kernel list, a user function call): from then on no kernel value is trusted
        self.opaque = False
        self._shared_line = False  # another statement ends on the line this one starts on
        self._guard = False
        # names a loop body may have changed on an earlier pass: on later passes their kernel value is stale
        self._dirty: frozenset[str] = frozenset()
        self.loop_note = ""  # "loop item 3 of 3: col = 'Cabin'" while walking a pass of a loop
        self._pass_budget = MAX_LOOP_STEPS  # loop-body statements the walk may still visit
        # ends of user-function calls the walk followed that changed nothing: what the scan distrusted
        # because of them holds again (``TrustEvent.site``); ``_untrusted`` caches the lines that leaves
        self._vouched: set[tuple[int, int]] = set()
        self._untrusted: dict[str, int | None] = {}

    # ---- walking -------------------------------------------------------------------------------
    def steps(self) -> Iterator[ast.stmt]:
        """Statements that certainly run, in order; the walk updates ``env`` after each is yielded."""
        if self.tree is None:
            return
        yield from self._block(self.tree.body)

    def _block(self, body: list[ast.stmt]) -> Iterator[ast.stmt]:
        prev_end = -1
        for stmt in body:
            self.line = stmt.lineno - 1
            self._stmt = stmt
            self._shared_line = prev_end == stmt.lineno
            prev_end = stmt.end_lineno or stmt.lineno
            yield stmt
            if isinstance(stmt, ast.With):
                yield from self._block(stmt.body)
            elif isinstance(stmt, ast.For):
                yield from self._passes(stmt)
            self._line_of(stmt)
            self._after(stmt)

    def _line_of(self, stmt: ast.stmt) -> None:
        self.line, self._stmt, self._shared_line = stmt.lineno - 1, stmt, False

    def _passes(self, loop: ast.For) -> Iterator[ast.stmt]:
        """The passes of a ``for`` loop over KNOWN items (a literal list/tuple of int/str, a ``range`` with
        known bounds, a kernel list/tuple whose exact int/str values the probe reported), binding the target
        name to each item in turn, up to ``MAX_LOOP_PASSES``.

        Every pass runs its whole body only when nothing in it can leave early (break/continue/return/raise/
        try/yield); otherwise only the first pass is walked, up to the first statement that could leave.
        From the second pass on, kernel values of names the body may change are stale (``_dirty``); values
        the cell binds follow the walk's own tracking. A pass after which the walk went opaque (a kernel
        object may have changed) ends the walk of the loop: the items of a kernel list may have changed too.
        """
        if loop.orelse or not isinstance(loop.target, ast.Name):
            return
        got = self._loop_items(loop.iter)
        if got is None:
            return
        items, from_kernel, n = got
        target = loop.target.id
        body = loop.body
        if _leaves_early(body):
            body = list(itertools.takewhile(lambda st: not _leaves_early([st]), body))
            items = items[:1]
        if not body:
            return
        start, end = loop.lineno - 1, (loop.end_lineno or loop.lineno) - 1
        changed = frozenset(name for name, ln in self.facts.untrusted_from.items() if start <= ln <= end)
        saved, saved_dirty, saved_note = dict(self.env), self._dirty, self.loop_note
        for k, item in enumerate(items[:MAX_LOOP_PASSES]):
            if k > 0 and (
                UNTRUSTED_ALL in changed or (from_kernel and self.opaque) or self._pass_budget < len(body)
            ):
                break
            self._pass_budget -= len(body)
            if k > 0:
                self._dirty = saved_dirty | changed
            note = f"loop item {k + 1} of {n}: {target} = {item!r}"
            self.loop_note = f"{saved_note}; {note}" if saved_note else note
            self.env[target] = Val(kind=constant_kind(item), text=repr(item), value=item)
            self._ver += 1
            yield from self._block(body)
        self.env, self._dirty, self.loop_note = _Env(self._since_opaque, saved), saved_dirty, saved_note
        self._since_opaque.update(saved)
        self._ver += 1  # what the loop left is unknown; ``_after`` on the loop marks it all changed
        if self.opaque:
            self._go_opaque()

    def _loop_items(self, node: ast.expr) -> tuple[list[int | str], bool, int] | None:
        """The exact items a ``for`` loop over ``node`` takes (int/str only; the first ``MAX_LOOP_PASSES``),
        whether they come from a kernel object, and how many there are; None when not proven."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            if "range" in self.env or not self.trusted("range") or "range" in self.snapshot.variables:
                return None
            if node.keywords:
                return None
            got = [self.const(a) for a in node.args]
            if not got or len(got) > 3 or not all(ok and type(v) is int for ok, v in got):
                return None
            try:
                r = range(*[v for _, v in got])
            except ValueError:
                return None
            return (list(r[:MAX_LOOP_PASSES]), False, len(r)) if len(r) else None
        ok, value = self.const(node)
        if not ok:
            v = self.ev(node)
            if v is None:
                return None
            if v.kind == Kind.LIST_LITERAL and isinstance(v.value, (list, tuple)):
                value = v.value
            elif v.kind in (Kind.INDEX, Kind.NDARRAY) and isinstance(v.value, tuple):  # ``df.columns``
                items = [x for x in v.value if type(x) in (int, str)]
                return (items, True, len(items)) if items and len(items) == len(v.value) else None
            elif v.kind in (Kind.LIST, Kind.TUPLE) and v.summary is not None and v.summary.values is not None:
                if v.summary.length != len(v.summary.values):
                    return None
                items = [x for x in v.summary.values if type(x) in (int, str)]
                if items and len(items) == len(v.summary.values):
                    return [x for x in items if not isinstance(x, float)], True, len(items)
                return None
            else:
                return None
        if isinstance(value, (list, tuple)) and value and all(type(x) in (int, str) for x in value):
            return list(value), False, len(value)
        return None

    def _go_opaque(self) -> None:
        """Stop trusting kernel objects; values the cell derived from them may share them too, so only
        its own fresh values survive."""
        keys = list(self._since_opaque) if self.opaque else list(self.env)
        self.opaque = True
        for k in keys:
            v = self.env.get(k)
            if v is not None and not (v.fresh or v.kind in _IMMUTABLE_KINDS):
                self.env[k] = None
        self._since_opaque.clear()
        self._ver += 1

    def _after(self, stmt: ast.stmt) -> None:
        """Update ``env`` for what ``stmt`` bound or may have changed."""
        self._after_inner(stmt)
        self._ver += 1

    def _after_inner(self, stmt: ast.stmt) -> None:
        if self.opaque or self._mutates(stmt):
            self._go_opaque()

        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self.env[alias.asname] = Val(kind=Kind.MODULE, text=alias.asname, qualname=alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.env[top] = Val(kind=Kind.MODULE, text=top, qualname=top)
            return
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for alias in stmt.names:
                qual = f"{stmt.module}.{alias.name}"
                pure = stmt.module.split(".")[0] in PURE_LIBS
                self.env[alias.asname or alias.name] = (
                    Val(kind=Kind.MODULE_ATTR, text=alias.name, qualname=qual) if pure else None
                )
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            value = self.ev(stmt.value)
            self._changes(stmt, skip_targets=True)
            if value is not None:
                self.env[name] = replace(value, text=name)
            elif self._new_object(stmt.value):
                self.env[name] = Val(kind=Kind.DERIVED, text=name)  # value unknown, but nobody else holds it
            else:
                self.env[name] = None
            return
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            ok, value = self.const(ast.BinOp(left=stmt.target, op=stmt.op, right=stmt.value))
            if ok and type(value) is int and isinstance(stmt.op, (ast.Add, ast.Sub, ast.Mult)):
                self.env[stmt.target.id] = Val(kind=Kind.INT, text=stmt.target.id, value=value)  # ``i += 1``
                return
        self._changes(stmt, skip_targets=False)

    def _new_object(self, node: ast.expr) -> bool:
        """``df.groupby("a")["b"].sum()``: a pure library chain ending in a method making a new object."""
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _NEW_OBJECT_METHODS
            and self._pure_chain(node)
        )

    def _fresh(self, name: str | None) -> bool:
        v = self.env.get(name) if name is not None else None
        return v is not None and (v.fresh or v.kind in _IMMUTABLE_KINDS)

    def _mutates(self, stmt: ast.stmt) -> bool:
        """Could ``stmt`` change an object that is not the cell's own fresh value? (Rebinding names is not a
        change of objects; calls into the libraries, pure methods and fresh objects are safe.)"""
        for node in self.nodes(stmt) if isinstance(stmt, _FLAT) else _walk_executable(stmt):
            if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(
                node.ctx, (ast.Store, ast.Del)
            ):
                if not self._fresh(root_name(node)):
                    return True
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if not self._fresh(node.target.id):
                    return True
            elif isinstance(node, ast.Call) and not self._safe_call(node):
                return True
        return False

    def _pure_chain(self, call: ast.Call) -> bool:
        """``df['a'].value_counts().plot()``: pure methods all the way down to a library value."""
        node: ast.AST = call
        while True:
            if isinstance(node, ast.Call):
                func = node.func
                if not isinstance(func, ast.Attribute) or func.attr not in _CHAIN_METHODS:
                    return False
                inplace = next((kw.value for kw in node.keywords if kw.arg == "inplace"), None)
                if inplace is not None and not (isinstance(inplace, ast.Constant) and inplace.value is False):
                    return False
                node = func.value
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            elif isinstance(node, ast.Name):
                v = self.ev(node)
                return v is not None and v.kind in LIB_KINDS
            else:
                return False

    def _safe_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Name) and pure_user_call(self, call):
            return True  # a user function the walk followed, which changes nothing shared (userfuncs)
        if isinstance(func, ast.Attribute):
            if self.module_of(func.value) is not None:
                lib = self.lib_func(func)
                return (
                    lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
                )
            if self._pure_method(call) or (isinstance(func.value, ast.Name) and self._fresh(func.value.id)):
                return True
            if self._pure_chain(call):
                return True
            if isinstance(func.value, ast.Constant):
                return True  # "a b".split(), "{}".format(...)
            receiver = self.ev(func.value)
            return bool(receiver and receiver.summary and receiver.summary.type.startswith("matplotlib."))
        if isinstance(func, ast.Name):
            if func.id in PURE_BUILTINS and func.id not in self.env and self.trusted(func.id):
                return (
                    func.id not in self.snapshot.variables
                    or self.snapshot.variables[func.id].kind == Kind.FUNCTION
                )
            lib = self.lib_func(func)
            return lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
        return False

    def _changes(self, stmt: ast.stmt, skip_targets: bool) -> None:
        changed: set[str] = set()
        # a value the cell holds that escapes (passed on, stored, aliased) may be changed through the other
        # reference later (``pipe = make_pipeline(model); pipe.fit(...)`` fits ``model``): forget it. A
        # method's receiver does not escape, and neither does a frame a column is read from (``t0[c].sum()``):
        # anything done to the column that could write back into the frame makes the walk opaque
        receivers: set[int] = set()
        loads: list[ast.Name] = []
        env = self.env
        for node in self.nodes(stmt):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    loads.append(node)
                else:
                    changed.add(node.id)
            elif node.__class__ is ast.Constant:
                continue
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                if not isinstance(node.ctx, ast.Load):
                    r = root_name(node)
                    if r:
                        changed.add(r)
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.value, ast.Name)
                    and (v := env.get(node.value.id)) is not None
                    and v.kind == Kind.DATAFRAME
                ):
                    receivers.add(id(node.value))
            elif isinstance(node, ast.Call):
                changed.update(self._call_changes(node))
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    receivers.add(id(node.func.value))
                elif isinstance(node.func, ast.Name) and self._non_retaining(node.func.id):
                    receivers.update(_read_through(node))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                changed.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    changed.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                changed.update(node.names)
        for n in loads:
            if id(n) not in receivers:
                v = env.get(n.id)
                if v is not None and v.kind not in _IMMUTABLE_KINDS:
                    changed.add(n.id)
        if skip_targets and isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                changed.discard(target.id)
        updates = {n: self._fitted_update(n, stmt) for n in changed}  # all against the state before stmt
        self.env.update(updates)

    def _non_retaining(self, name: str) -> bool:
        """``name`` is the builtin of that name, one that keeps no reference to its arguments."""
        if name not in NON_RETAINING_BUILTINS or name in self.env or not self.trusted(name):
            return False
        kernel = self.snapshot.variables.get(name)
        return kernel is None or kernel.kind == Kind.FUNCTION

    def _vouch(self, call: ast.Call) -> None:
        """``call`` ran a user function to its end without changing anything shared: its arguments and
        the globals it reads keep their kernel values after it. Only a call the statement certainly
        makes once (not in a loop: a later pass may differ; not in a branch)."""
        stmt = self._stmt
        if self.loop_note or self.facts.posmap is None or not isinstance(stmt, _FLAT):
            return
        if not any(n is call for n in self.evaluated(stmt)):
            return  # a call that may not run (a branch of ``a if t else b``, a lambda, ``x and f(y)``)
        self._vouched.add(self.facts.posmap.end(call))
        self._untrusted.clear()
        self._ver += 1

    def _call_changes(self, call: ast.Call, receivers: bool = True) -> set[str]:
        out: set[str] = set()
        func = call.func
        if receivers and isinstance(func, ast.Name) and pure_user_call(self, call):
            self._vouch(call)
            return out
        if (
            isinstance(func, ast.Attribute)
            and receivers
            and self.module_of(func.value) is None
            and not self._pure_method(call)
            and not self._pure_chain(call)
        ):
            r = root_name(func.value)
            if r:
                out.add(r)  # a method may change its receiver (inplace=True, fit, append, ...)
        lib = self.lib_func(func) if not isinstance(func, ast.Lambda) else None
        pure_lib = lib is not None and lib[0].split(".")[0] in PURE_LIBS and lib[1] not in MUTATING_LIB_FUNCS
        builtin = isinstance(func, ast.Name) and func.id in PURE_BUILTINS and func.id not in self.env
        receiver = self.ev(func.value) if isinstance(func, ast.Attribute) else None
        lib_method = receiver is not None and receiver.kind in LIB_KINDS
        callee = self.ev(func) if isinstance(func, ast.Name) else None
        if callee is not None and callee.kind == Kind.TORCH_MODULE and first_layer_linear(callee.summary):
            return out  # nn.Linear (or a Sequential starting with one) never writes to its input
        pure = (
            pure_lib
            or lib_method
            or (builtin and self.trusted(func.id) if isinstance(func, ast.Name) else False)
        )
        if not pure:
            for a in [*call.args, *(kw.value for kw in call.keywords)]:
                for sub in _walk_list(a):
                    if isinstance(sub, ast.Name):
                        out.add(sub.id)
        return out

    def _pure_method(self, call: ast.Call) -> bool:
        """``x.method(...)`` that leaves ``x`` as it was (``df.head()``, ``est.predict(X)``)."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return False
        v = self.ev(func.value)
        if v is None or func.attr not in PURE_METHODS.get(v.kind, ()):
            return False
        inplace = next((kw.value for kw in call.keywords if kw.arg == "inplace"), None)
        return inplace is None or (isinstance(inplace, ast.Constant) and inplace.value is False)

    def _fitted_update(self, name: str, stmt: ast.stmt) -> Val | None:
        """``est.fit(X)`` / ``est.fit_transform(X)`` on a cell-built estimator: remember what it saw."""
        current = self.env.get(name) if name in self.env else None
        if current is None or current.est is None or current.est.from_kernel or not _simple(stmt):
            return None
        for node in self.nodes(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
            ):
                if (
                    node.func.attr in ("fit", "fit_transform", "fit_predict")
                    and node.args
                    and not has_star(node)
                ):
                    x = self.ev(node.args[0])
                    if x is None or x.shape is None or len(x.shape) != 2:
                        return None
                    names = (
                        tuple(x.labels)
                        if x.labels is not None
                        and all(isinstance(v, str) for v in x.labels)
                        and x.kind == Kind.DATAFRAME
                        else None
                    )
                    return replace(
                        current,
                        est=replace(current.est, fitted=True, n_features=x.shape[1], feature_names=names),
                    )
                return None
        return None

    def span(self, node: ast.AST) -> Span:
        """Where ``node`` is in the cell as the editor shows it (``CellFacts.span``)."""
        return self.facts.span(node)

    # ---- expressions a statement certainly evaluates --------------------------------------------
    def nodes(self, stmt: ast.stmt) -> list[ast.AST]:
        """``ast.walk(stmt)``, listed once per statement (the walk looks at each statement many times)."""
        got = self._nodes.get(id(stmt))
        if got is None:
            got = self._nodes[id(stmt)] = _walk_list(stmt)
        return got

    def evaluated(self, stmt: ast.stmt) -> list[ast.AST]:
        """Sub-expressions of ``stmt`` that run whenever ``stmt`` runs (no lambdas, branches, loops);
        computed once per statement, shared by every check."""
        got = self._evaluated.get(id(stmt))
        if got is None:
            got = self._evaluated[id(stmt)] = self._evaluated_nodes(stmt)
        return got

    def evaluated_of(self, stmt: ast.stmt, *types: type[ast.AST]) -> list[Any]:
        """The nodes of ``evaluated(stmt)`` that are instances of ``types`` (the step hooks' usual first
        filter, done once per statement for all of them)."""
        if stmt is not self._of_stmt:  # hooks ask about the statement being walked: one table at a time
            # seeded with one pass: (C,) -> the nodes of exact class C, in order
            table: dict[tuple[type[ast.AST], ...], list[Any]] = {}
            for n in self.evaluated(stmt):
                key = (n.__class__,)
                group = table.get(key)
                if group is None:
                    table[key] = [n]
                else:
                    group.append(n)
            self._of_stmt, self._of_type = stmt, table
            self._of_kinds = frozenset(key[0] for key in table)
        got = self._of_type.get(types)
        if got is None:
            if len(types) == 1 and _is_leaf(types[0]):
                got = self._of_type[types] = []  # absent from the seeded table: the statement has none
            else:
                got = self._of_type[types] = [n for n in self.evaluated(stmt) if isinstance(n, types)]
        return got

    def kinds(self, stmt: ast.stmt) -> frozenset[type[ast.AST]]:
        """The node types among ``evaluated(stmt)``: a hook that only looks at calls skips a statement
        without any (``checks.registry``)."""
        got = self._kinds.get(id(stmt))
        if got is None:
            self.evaluated_of(stmt, ast.Name)  # seeds the statement's by-class table, and its kinds
            got = self._kinds[id(stmt)] = self._of_kinds
        return got

    def knows_any(self, stmt: ast.stmt) -> bool:
        """Whether a name ``stmt`` certainly evaluates has a value the walk knows here. A step hook
        proves a crash from a known value (an array, a frame, an estimator, a module), so on a statement
        without one it has nothing to go on (``checks.registry.Trigger.needs_value``)."""
        env, variables = self.env, self.snapshot.variables
        for node in self.evaluated_of(stmt, ast.Name):
            name = node.id
            if name in env:
                if env[name] is not None:
                    return True
            elif name in variables and self.ev(node) is not None:
                return True
        return False

    def method_calls(self, stmt: ast.stmt, *names: str) -> list[tuple[ast.Call, ast.Attribute]]:
        """Calls ``x.name(...)`` that ``stmt`` certainly evaluates, with their ``x.name`` (any method
        name when none is given): the head most call hooks start with."""
        return [
            (n, n.func)
            for n in self.evaluated_of(stmt, ast.Call)
            if isinstance(n.func, ast.Attribute) and (not names or n.func.attr in names)
        ]

    def _evaluated_nodes(self, stmt: ast.stmt) -> list[ast.AST]:
        roots: list[ast.AST]
        if isinstance(stmt, (ast.If, ast.While)):
            roots = [stmt.test]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            roots = [stmt.iter]
        elif isinstance(stmt, ast.With):
            roots = [item.context_expr for item in stmt.items]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.Match)):
            roots = []
        elif isinstance(stmt, ast.Assert):
            roots = [stmt.test]
        else:
            roots = [stmt]
        out: list[ast.AST] = []
        for r in roots:
            _certain_nodes(r, out)
        return out


#: Statements with no statements inside (so no function or class body): ``_walk_executable`` of one is
#: all of its nodes.
_FLAT = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Return,
    ast.Delete,
    ast.Raise,
    ast.Assert,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Pass,
    ast.Break,
    ast.Continue,
)


def _walk_executable(stmt: ast.stmt) -> Iterator[ast.AST]:
    """``ast.walk`` without the bodies of functions and classes the statement only defines."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not stmt:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(node.decorator_list)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _read_through(call: ast.Call) -> list[int]:
    """Ids of the names a call's arguments only read from (``X`` in ``print(X.shape, f"{y[0]}")``):
    through attributes, subscripted values and f-strings, never through another call or an operator."""
    out: list[int] = []
    todo: list[ast.AST] = [*call.args, *(kw.value for kw in call.keywords)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            out.append(id(node))
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            todo.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            todo.extend(node.values)
        elif isinstance(node, ast.FormattedValue):
            todo.append(node.value)
    return out


_LEAF: dict[type, bool] = {}


def _is_leaf(cls: type) -> bool:
    """Whether ``isinstance(n, cls)`` means ``n.__class__ is cls`` (no subclasses: ``ast.Call``, not
    ``ast.expr`` nor ``ast.Constant``, whose deprecated aliases subclass it)."""
    got = _LEAF.get(cls)
    if got is None:
        got = _LEAF[cls] = not cls.__subclasses__()
    return got


def _simple(stmt: ast.stmt) -> bool:
    return not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try, ast.Match))


def _leaves_early(body: list[ast.stmt]) -> bool:
    """Could a pass through ``body`` stop before its end (break/continue/return/raise/try/yield)?"""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(
                node,
                (
                    ast.Break,
                    ast.Continue,
                    ast.Return,
                    ast.Raise,
                    ast.Try,
                    ast.Yield,
                    ast.YieldFrom,
                    ast.Await,
                ),
            ):
                return True
    return False


def _certain_nodes(root: ast.AST, out: list[ast.AST]) -> None:
    """Append ``root`` and the sub-expressions that run whenever it runs, in pre-order: not inside a
    lambda or comprehension, only the test of ``a if t else b``, only the first operand of ``and``/``or``.
    (Exact classes: ``ast.parse`` builds no subclasses of these.)"""
    todo = [root]
    pop, push, add = todo.pop, todo.append, out.append
    while todo:
        node = pop()
        add(node)
        cls = node.__class__
        if cls in _DEFERRED:
            continue
        if cls is ast.IfExp:
            push(node.test)  # type: ignore[attr-defined]
            continue
        if cls is ast.BoolOp:
            push(node.values[0])  # type: ignore[attr-defined]
            continue
        kids = _children(node)
        kids.reverse()
        todo += kids


_DEFERRED = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
