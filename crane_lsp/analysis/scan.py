"""The scan: one pass over a parsed cell that records names, chains, subscripts, calls and trust events.

It runs BEFORE the kernel is asked anything (its facts are the probe query), so it knows only the
syntax; the value walk (``analysis.walk``) runs after the snapshot and carries values.
"""

from __future__ import annotations

import ast

from crane_lsp.analysis.facts import (
    UNTRUSTED_ALL,
    UNTRUSTED_FILES,
    UNTRUSTED_MODULES,
    Argument,
    Assignment,
    AttributeChain,
    Call,
    CellFacts,
    ImportUse,
    NameUse,
    Operation,
    Subscript,
    TrustEvent,
)
from crane_lsp.analysis.kinds import Op, ScopeKinds
from crane_lsp.analysis.positions import PosMap, Span
from crane_lsp.analysis.syntax import (
    _DYNAMIC_FUNCS,
    _FILE_LINE_MAGICS,
    _FILE_METHODS,
    _HARMLESS_LINE_MAGICS,
    _LEAVES,
    _MODULE_LINE_MAGICS,
    _MUTATING_METHODS,
    _OPEN_FUNCS,
    _OPERATORS,
    _PANDAS_INPLACE_ONLY,
    _PATH_KEYWORDS,
    _PURE_BUILTINS,
    _READER_FUNCS,
    _bound_in,
    _chain_parts,
    _never_suppresses,
    _non_empty,
    _Scope,
)
from crane_lsp.analysis.values import child_nodes
from crane_lsp.analysis.values import literal as _literal


class _Analyzer:
    def __init__(self, facts: CellFacts, pmap: PosMap, python: str) -> None:
        self.f = facts
        self.pm = pmap
        self.python = python
        self.py_bytes = [line.encode("utf-8") for line in python.split("\n")]
        self.scopes: list[_Scope] = [_Scope(ScopeKinds.MODULE)]
        self.bound: set[str] = set()  # module names definitely bound by the cell so far
        self.maybe: set[str] = set()  # module names bound on some path
        self.guard = 0
        self.loop_starts: list[tuple[int, int]] = []
        self.functions: dict[str, set[str]] = {}  # cell-defined function -> module names it uses
        self.stmt_end: tuple[int, int] = (0, 0)
        self.callee: str | None = None  # set while recording what a plain-name call may change
        self.site: tuple[int, int] | None = None  # and that call's end (``TrustEvent.site``)

    # -- helpers ------------------------------------------------------------------------------
    @property
    def guarded(self) -> bool:
        return self.guard > 0

    @property
    def in_function(self) -> bool:
        scopes = self.scopes
        return len(scopes) > 1 and any(
            s.kind == ScopeKinds.FUNCTION for s in scopes
        )  # the module scope is first

    def text(self, node: ast.AST) -> str:
        """Source of ``node`` (``ast.get_source_segment`` re-splits the whole cell on every call)."""
        lineno, end_lineno = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if lineno is None or end_lineno is None or col is None or end_col is None:
            return ast.unparse(node)
        lines = self.py_bytes[lineno - 1 : end_lineno]
        if not lines:
            return ast.unparse(node)
        if len(lines) == 1:
            return lines[0][col:end_col].decode("utf-8", errors="replace")
        parts = [lines[0][col:], *lines[1:-1], lines[-1][:end_col]]
        return b"\n".join(parts).decode("utf-8", errors="replace")

    def is_global(self, name: str) -> bool:
        """Whether ``name`` at this point resolves to the module (kernel) namespace."""
        innermost = len(self.scopes) - 1
        for i in range(innermost, 0, -1):
            scope = self.scopes[i]
            if name in scope.globals_declared:
                return True
            if scope.kind == ScopeKinds.CLASS and i != innermost:
                continue
            if name in scope.local:
                return False
        return True

    def untrust(self, name: str, pos: tuple[int, int]) -> None:
        if self.in_function:
            return  # runs when called; calls to cell functions untrust what the body uses
        if self.loop_starts:
            pos = min(pos, self.loop_starts[0])
        self.f.trust_events.append(TrustEvent(name, pos, self.callee, self.site))
        old = self.f.untrusted_pos.get(name)
        if old is None or pos < old:
            self.f.untrusted_pos[name] = pos
            self.f.untrusted_from[name] = pos[0]

    def end_pos(self, node: ast.AST) -> tuple[int, int]:
        return self.pm.end(node)

    def bind(
        self, name: str, node: ast.AST, value: ast.AST | None = None, pos: tuple[int, int] | None = None
    ) -> None:
        """A Store of ``name`` in the current scope."""
        scope = self.scopes[-1]
        if scope.kind != ScopeKinds.MODULE and name not in scope.globals_declared:
            scope.local.add(name)
            return
        if self.in_function:  # ``global x; x = ...`` inside a function: bound when called
            self.maybe.add(name)
            return
        conditional = self.guarded or bool(self.loop_starts)
        self.f.defines.append(
            Assignment(name, self.pm.span(node), self.text(value) if value is not None else None, conditional)
        )
        if conditional:
            self.maybe.add(name)
        else:
            self.bound.add(name)
        self.untrust(name, pos or self.stmt_end)

    def header(self, node: ast.AST) -> None:
        """A compound statement's header expression: its effects show from its own end on."""
        saved, self.stmt_end = self.stmt_end, self.end_pos(node)
        self.expr(node)
        self.stmt_end = saved

    # -- statements ---------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        self.stmts(tree.body)

    def stmts(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            saved = self.stmt_end
            self.stmt_end = self.end_pos(stmt)
            self.stmt(stmt)
            self.stmt_end = saved

    def guarded_block(self, body: list[ast.stmt]) -> None:
        self.guard += 1
        self.stmts(body)
        self.guard -= 1

    def loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        start = self.pm.span(node)
        self.loop_starts.append((start.line, start.col))
        body_names = _bound_in(node.body)
        if isinstance(node, ast.For | ast.AsyncFor):
            body_names |= _bound_in([ast.Assign(targets=[node.target], value=ast.Constant(None))])
        if not self.in_function:
            for name in body_names:
                if self.is_global(name) and name not in self.bound:
                    self.maybe.add(name)
        if isinstance(node, ast.While):
            self.guard += 1
            self.header(node.test)
            self.guard -= 1
        target_names: set[str] = set()
        if isinstance(node, ast.For | ast.AsyncFor):
            self.store(node.target, None)
            if not self.in_function:
                target_names = {
                    n.id for n in ast.walk(node.target) if isinstance(n, ast.Name) and self.is_global(n.id)
                } - self.bound
        self.bound |= target_names  # inside the body the loop variable is always bound
        head: list[ast.stmt] = []
        if isinstance(node, ast.For) and _non_empty(node.iter):  # the first pass certainly runs ...
            for st in node.body:  # ... up to a statement that could leave it early
                if any(isinstance(n, _LEAVES) for n in ast.walk(st)):
                    break
                head.append(st)
        self.stmts(head)
        self.guarded_block(node.body[len(head) :])
        self.bound -= target_names
        self.loop_starts.pop()
        self.guarded_block(node.orelse)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            self.expr(node.value)
            for target in node.targets:
                self.store(target, node.value if len(node.targets) == 1 else None)
                self.unpack_op(target, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expr(node.value)
                self.store(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self.expr(node.target, aug=True)
            self.expr(node.value)
            self.binop_op(node.op, node.target, node.value, self.pm.span(node), aug=True)
            if isinstance(node.target, ast.Name):
                self.bind(node.target.id, node.target)
            else:
                self.mutate_root(node.target)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self.header(node.iter)
            self.iter_op(node.iter)
            self.unpack_op(node.target, None)
            self.loop(node)
        elif isinstance(node, ast.While):
            self.loop(node)
        elif isinstance(node, ast.If):
            self.header(node.test)
            self.guarded_block(node.body)
            self.guarded_block(node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                self.header(item.context_expr)
                if item.optional_vars is not None:
                    saved, self.stmt_end = self.stmt_end, self.end_pos(item.optional_vars)
                    self.store(item.optional_vars, None)
                    self.stmt_end = saved
            # a context manager may swallow the body's exception (contextlib.suppress, pytest.raises)
            if all(_never_suppresses(item.context_expr) for item in node.items):
                self.stmts(node.body)
            else:
                self.guarded_block(node.body)
        elif isinstance(node, ast.Try | ast.TryStar):
            self.guarded_block(node.body)
            for handler in node.handlers:
                self.guard += 1
                if handler.type is not None:
                    self.expr(handler.type)
                if handler.name:
                    hspan = self.pm.span(handler)
                    self.bind(handler.name, handler, pos=(hspan.line, hspan.col))
                self.stmts(handler.body)
                self.guard -= 1
            self.guarded_block(node.orelse)
            self.stmts(node.finalbody)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.function_def(node)
        elif isinstance(node, ast.ClassDef):
            for d in node.decorator_list:
                self.expr(d)
            for b in node.bases:
                self.expr(b)
            for kw in node.keywords:
                self.expr(kw.value)
            self.scopes.append(_Scope(ScopeKinds.CLASS))
            self.stmts(node.body)
            self.scopes.pop()
            self.bind(node.name, node)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.delete(target)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.import_(node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            if isinstance(node, ast.Global):
                self.scopes[-1].globals_declared.update(node.names)
            self.scopes[-1].local.difference_update(node.names)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.guard += 1
                self.expr(node.msg)
                self.guard -= 1
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self.expr(node.exc)
            if node.cause is not None:
                self.expr(node.cause)
        elif isinstance(node, ast.Match):
            self.header(node.subject)
            self.guard += 1
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, ast.MatchAs | ast.MatchStar) and sub.name:
                        self.bind(sub.name, sub)
                    elif isinstance(sub, ast.MatchValue):
                        self.expr(sub.value)
                if case.guard is not None:
                    self.expr(case.guard)
                self.stmts(case.body)
            self.guard -= 1
        else:  # pass, break, continue, type aliases
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.expr(d)
        scope = self.function_scope(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Global):
                scope.globals_declared.update(sub.names)
        scope.local |= _bound_in(node.body) - scope.globals_declared
        self.scopes.append(scope)
        self.guard += 1
        self.stmts(node.body)
        self.guard -= 1
        self.scopes.pop()
        if not self.in_function:
            self.functions[node.name] = scope.free | scope.globals_declared
        self.bind(node.name, node)

    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        span = self.pm.span(node)
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.f.imports.append(ImportUse(alias.name, (), alias.asname, span, self.guarded))
                self.bind(alias.asname or alias.name.split(".")[0], node)
        else:
            module = node.module or ""
            names = tuple(a.name for a in node.names)
            self.f.imports.append(ImportUse(module, names, None, span, self.guarded, node.level))
            for alias in node.names:
                if alias.name == "*":
                    self.untrust(UNTRUSTED_ALL, self.stmt_end)
                else:
                    self.bind(alias.asname or alias.name, node)

    # -- stores and deletes -------------------------------------------------------------------
    def store(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, target, value)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self.store(elt, None)
        elif isinstance(target, ast.Starred):
            self.store(target.value, None)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            self.record_chain(target, store=True)
            self.mutate_root(target)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
            self.record_subscript(target, store=True)
            self.mutate_root(target)

    def delete(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if self.is_global(target.id):
                self.read(target)
                if not self.in_function:
                    self.bound.discard(target.id)
                    self.maybe.add(target.id)
                    self.untrust(target.id, self.stmt_end)
            else:
                self.scopes[-1].local.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self.delete(elt)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
            self.record_subscript(target, store=False, is_del=True)
            self.mutate_root(target)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            self.record_chain(target)
            self.mutate_root(target)

    def mutate_root(self, node: ast.AST, pos: tuple[int, int] | None = None) -> None:
        root = node
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
            root = root.value
        if isinstance(root, ast.Name) and self.is_global(root.id):
            if self.in_function:
                self.scopes_function().free.add(root.id)
            self.untrust(root.id, pos or self.stmt_end)

    def scopes_function(self) -> _Scope:
        return next(s for s in reversed(self.scopes) if s.kind == ScopeKinds.FUNCTION)

    # -- expressions --------------------------------------------------------------------------
    def read(self, node: ast.Name) -> None:
        name = node.id
        if not self.is_global(name):
            return
        if self.in_function:
            self.scopes_function().free.add(name)
        if name in self.bound and not self.in_function:
            return
        if name == "get_ipython":
            return
        maybe = name in self.maybe or (self.in_function and name in self.bound)
        self.f.reads.append(NameUse(name, self.pm.span(node), self.guarded, maybe))

    def expr(self, node: ast.AST, aug: bool = False) -> None:
        cls = node.__class__  # exact-class tests first: ``ast.parse`` builds no subclasses
        if cls is ast.Constant:
            return
        if cls is ast.Name:
            if aug or node.ctx.__class__ is ast.Load:  # type: ignore[attr-defined]
                self.read(node)  # type: ignore[arg-type]
            return
        if cls is ast.Call:
            self.call(node)  # type: ignore[arg-type]
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) or aug:
                self.read(node)
            return
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Attribute):
            self.expr(node.value)
            self.record_chain(node)
            return
        if isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.expr(node.slice)
            self.record_subscript(node, store=False)
            return
        if isinstance(node, ast.Call):
            self.call(node)
            return
        if isinstance(node, ast.BoolOp):
            self.expr(node.values[0])
            self.guard += 1
            for v in node.values[1:]:
                self.expr(v)
            self.guard -= 1
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            self.guard += 1
            self.expr(node.body)
            self.expr(node.orelse)
            self.guard -= 1
            return
        if isinstance(node, ast.NamedExpr):
            self.expr(node.value)
            self.walrus(node)
            return
        if isinstance(node, ast.Lambda):
            self.lambda_(node)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            self.comprehension(node)
            return
        if isinstance(node, ast.BinOp):
            self.expr(node.left)
            self.expr(node.right)
            self.binop_op(node.op, node.left, node.right, self.pm.span(node))
            return
        for child in child_nodes(node):  # not the ``Load()`` contexts: nothing to see there
            self.expr(child)

    def walrus(self, node: ast.NamedExpr) -> None:
        assert isinstance(node.target, ast.Name)
        # in a comprehension the target binds in the enclosing scope
        saved = self.scopes
        idx = len(self.scopes) - 1
        while idx > 0 and self.scopes[idx].kind == ScopeKinds.COMPREHENSION:
            idx -= 1
        self.scopes = self.scopes[: idx + 1]
        self.guard += int(idx < len(saved) - 1)
        self.bind(node.target.id, node.target, node.value, pos=self.end_pos(node))
        self.guard -= int(idx < len(saved) - 1)
        self.scopes = saved

    def function_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> _Scope:
        """Scan the defaults (they run at definition) and return the new scope holding the parameters."""
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.expr(default)
        scope = _Scope(ScopeKinds.FUNCTION)
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                scope.local.add(a.arg)
        return scope

    def lambda_(self, node: ast.Lambda) -> None:
        scope = self.function_scope(node)
        self.scopes.append(scope)
        self.guard += 1
        self.expr(node.body)
        self.guard -= 1
        self.scopes.pop()

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        gens = node.generators
        self.expr(gens[0].iter)
        self.iter_op(gens[0].iter)
        scope = _Scope(ScopeKinds.COMPREHENSION)
        for gen in gens:
            for sub in ast.walk(gen.target):
                if isinstance(sub, ast.Name):
                    scope.local.add(sub.id)
        self.scopes.append(scope)
        self.guard += 1
        for i, gen in enumerate(gens):
            if i:
                self.expr(gen.iter)
            for cond in gen.ifs:
                self.expr(cond)
        if isinstance(node, ast.DictComp):
            self.expr(node.key)
            self.expr(node.value)
        else:
            self.expr(node.elt)
        self.guard -= 1
        self.scopes.pop()

    def call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "get_ipython":
            return  # the receiver of a transformed magic; ``ipython_effects`` handles the magic
        self.expr(node.func)
        for arg in node.args:
            self.expr(arg)
        for kw in node.keywords:
            self.expr(kw.value)
        parts = _chain_parts(node.func)
        func_text = ".".join(parts) if parts else self.text(node.func)
        receiver = method = None
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            recv_parts = _chain_parts(node.func.value)
            receiver = ".".join(recv_parts) if recv_parts else None
        args: list[Argument] = []
        for arg in node.args:
            args.append(self.argument(None, arg))
        for kw in node.keywords:
            args.append(self.argument(kw.arg, kw.value, starred=kw.arg is None))
        call = Call(
            func=func_text,
            args=tuple(args),
            span=self.pm.span(node),
            func_span=self.pm.span(node.func),
            receiver=receiver,
            method=method,
            guarded=self.guarded,
            func_is_name=parts is not None,
        )
        if not self.is_ipython(node):
            self.f.calls.append(call)
        self.path_of(call)
        self.call_effects(node, call, parts)

    def is_ipython(self, node: ast.Call) -> bool:
        f = node.func
        return (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name)
            and f.value.func.id == "get_ipython"
        )

    def argument(self, keyword: str | None, node: ast.AST, starred: bool = False) -> Argument:
        if isinstance(node, ast.Starred):
            node, starred = node.value, True
        ok, value = _literal(node)
        parts = _chain_parts(node)
        return Argument(
            keyword=keyword,
            text=self.text(node),
            literal=value if ok else None,
            is_literal=ok,
            name=".".join(parts) if parts else None,
            starred=starred,
            span=self.pm.span(node),
        )

    def path_of(self, call: Call) -> None:
        last = call.func.rsplit(".", 1)[-1]
        is_open = call.func in _OPEN_FUNCS or (call.func == "open")
        if not (is_open or (last in _READER_FUNCS and call.func_is_name)):
            return
        if is_open and call.func in ("open", "io.open", "codecs.open"):
            mode = call.positional()[1] if len(call.positional()) > 1 else call.keyword("mode")
            if mode is not None and (not mode.is_literal or set(str(mode.literal)) & set("wax+")):
                return
        first = call.positional()[0] if call.positional() else None
        if first is None:
            first = next((a for a in call.args if a.keyword in _PATH_KEYWORDS), None)
        if first is None or not first.is_literal or not isinstance(first.literal, str):
            return
        path = first.literal
        if not path or "://" in path or any(ch in path for ch in "*?{"):
            return
        assert first.span is not None
        self.f.paths.append((path, first.span))

    def call_effects(self, node: ast.Call, call: Call, parts: list[str] | None) -> None:
        end = self.end_pos(node)
        if self.is_ipython(node):
            self.ipython_effects(node, end)
            return
        last = parts[-1] if parts else None
        if last in _DYNAMIC_FUNCS and parts is not None and len(parts) == 1:
            self.untrust(UNTRUSTED_ALL, end)
        if last in _FILE_METHODS or (parts and parts[0] in ("os", "shutil", "subprocess")):
            self.untrust(UNTRUSTED_FILES, end)
        if call.func in ("open", "io.open"):
            mode = call.positional()[1] if len(call.positional()) > 1 else call.keyword("mode")
            if mode is not None and (not mode.is_literal or set(str(mode.literal)) & set("wax+")):
                self.untrust(UNTRUSTED_FILES, end)
        # a method that changes its receiver
        if isinstance(node.func, ast.Attribute) and last is not None:
            inplace = call.keyword("inplace")
            mutates = (
                (last in _MUTATING_METHODS and last not in _PANDAS_INPLACE_ONLY)
                or (last.endswith("_") and not last.startswith("_"))
                or (inplace is not None and not (inplace.is_literal and inplace.literal is False))
            )
            if mutates:
                self.mutate_root(node.func.value, end)
            if last in ("shuffle", "seed") or (last.endswith("_") and not last.startswith("_")):
                for arg in node.args:
                    self.mutate_root(arg, end)
        # a call we cannot follow may change its arguments
        if isinstance(node.func, ast.Name):
            name = node.func.id
            if name not in _PURE_BUILTINS or not self.is_global(name):
                # a library function leaves its arguments alone; which callee is one, only the
                # snapshot can tell (``CellFacts.refined``), so the event remembers the callee
                known = self.is_global(name) and name not in self.functions and name not in _MUTATING_METHODS
                self.callee = name if known else None
                self.site = end
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    self.mutate_root_of_arg(arg, end)
                self.site = None
                if name not in _PURE_BUILTINS and name not in _DYNAMIC_FUNCS:
                    self.callee = self.callee if name not in _FILE_METHODS else None
                    self.untrust(UNTRUSTED_FILES, end)
                self.callee = None
            if name in self.functions and not self.in_function:
                self.site = end
                for used in self.functions[name]:
                    self.untrust(used, end)
                self.site = None
            if name == "next":
                for arg in node.args:
                    self.mutate_root_of_arg(arg, end)

    def mutate_root_of_arg(self, arg: ast.AST, pos: tuple[int, int]) -> None:
        if isinstance(arg, ast.List | ast.Tuple | ast.Set):
            for elt in arg.elts:
                self.mutate_root_of_arg(elt, pos)
        elif isinstance(arg, ast.Dict):
            for v in arg.values:
                self.mutate_root_of_arg(v, pos)
        else:
            self.mutate_root(arg, pos)

    def ipython_effects(self, node: ast.Call, end: tuple[int, int]) -> None:
        assert isinstance(node.func, ast.Attribute)
        method = node.func.attr
        magic = ""
        if node.args and isinstance(node.args[0], ast.Constant):
            magic = str(node.args[0].value)
        args_text = ""
        if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            args_text = str(node.args[1].value)
        if method in ("system", "getoutput"):
            self.untrust(UNTRUSTED_FILES, end)
            first = magic.split()[:2]
            if first and (first[0] in _MODULE_LINE_MAGICS or first[0].startswith("pip")):
                self.untrust(UNTRUSTED_MODULES, end)
            if first and first[0] in ("python", "python3", "ipython"):
                self.untrust(UNTRUSTED_ALL, end)
        elif method == "run_line_magic":
            if magic in _MODULE_LINE_MAGICS:
                self.untrust(UNTRUSTED_MODULES, end)
                self.untrust(UNTRUSTED_FILES, end)
            elif magic in _FILE_LINE_MAGICS:
                self.untrust(UNTRUSTED_FILES, end)
            elif magic not in _HARMLESS_LINE_MAGICS:
                self.untrust(UNTRUSTED_ALL, end)
                self.untrust(UNTRUSTED_FILES, end)
            elif magic in ("time", "timeit", "prun") and args_text.strip():
                self.untrust(UNTRUSTED_ALL, end)  # the timed statement runs in the namespace
        else:
            self.untrust(UNTRUSTED_ALL, end)
            self.untrust(UNTRUSTED_FILES, end)

    # -- facts --------------------------------------------------------------------------------
    def record_chain(self, node: ast.Attribute, store: bool = False) -> None:
        parts = _chain_parts(node)
        if parts is None or not self.is_global(parts[0]):
            return
        # only the outermost chain of a nested a.b.c is recorded (the visitor sees a.b first)
        span = self.pm.span(node)
        end_line, end_col = span.end_line, span.end_col
        attr_span = Span(end_line, max(end_col - len(node.attr), 0), end_line, end_col)
        chain = AttributeChain(parts[0], tuple(parts[1:]), span, attr_span, self.guarded, store)
        if self.f.chains:
            prev = self.f.chains[-1]
            if (
                prev.base == chain.base
                and chain.attrs[: len(prev.attrs)] == prev.attrs
                and (prev.span.line, prev.span.col) == (span.line, span.col)
                and not prev.is_store
            ):
                self.f.chains[-1] = chain
                return
        self.f.chains.append(chain)

    def record_subscript(self, node: ast.Subscript, store: bool, is_del: bool = False) -> None:
        ok, key = _literal(node.slice)
        if not ok:
            return
        value = node.value
        accessor = None
        if isinstance(value, ast.Attribute) and value.attr in ("loc", "iloc", "at", "iat"):
            accessor = value.attr
            value = value.value
        target = self.target_text(value)
        if target is None or not self.is_global(target.split(".", 1)[0].split("[", 1)[0]):
            return
        self.f.subscripts.append(
            Subscript(
                target=target,
                key=key,
                span=self.pm.span(node),
                key_span=self.pm.span(node.slice),
                accessor=accessor,
                is_store=store,
                guarded=self.guarded,
                is_del=is_del,
            )
        )

    def target_text(self, node: ast.AST) -> str | None:
        parts = _chain_parts(node)
        if parts is not None:
            return ".".join(parts)
        if isinstance(node, ast.Subscript):
            inner = self.target_text(node.value)
            ok, key = _literal(node.slice)
            if inner is not None and ok:
                return f"{inner}[{key!r}]"
        return None

    def operand(self, node: ast.AST) -> Argument | None:
        ok, _ = _literal(node)
        if ok or _chain_parts(node) is not None:
            return self.argument(None, node)
        return None

    def binop_op(
        self, op: ast.operator, left: ast.AST, right: ast.AST, span: Span, aug: bool = False
    ) -> None:
        lhs, rhs = self.operand(left), self.operand(right)
        if lhs is None and rhs is None:
            return
        sym = _OPERATORS.get(type(op), "?") + ("=" if aug else "")
        self.f.operations.append(Operation(Op.BINOP, span, sym, lhs, rhs, None, self.guarded))

    def iter_op(self, node: ast.AST) -> None:
        arg = self.operand(node)
        if arg is not None:
            self.f.operations.append(Operation(Op.ITER, self.pm.span(node), left=arg, guarded=self.guarded))

    def unpack_op(self, target: ast.AST, value: ast.AST | None) -> None:
        if not isinstance(target, ast.Tuple | ast.List) or value is None:
            return
        arg = self.operand(value)
        if arg is None:
            return
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        self.f.operations.append(
            Operation(
                Op.UNPACK,
                self.pm.span(value),
                left=arg,
                n_targets=None if starred else len(target.elts),
                guarded=self.guarded,
            )
        )
