"""What a shortened run changed, followed through the cell: STANDARD LIBRARY ONLY.

Joined before ``shorten_rules.py`` in the kernel and imported alone by the client, like it. A shortened
run changes three kinds of thing: data it sampled (names of the namespace, ``rows``), loops it cut short
(their lines, ``loops``) and iteration parameters it lowered (``params``). Whether a crash on the
failing line is the full run's crash depends on whether what that line reads was changed, so the
changes are followed through the cell's own statements: a flow-insensitive data flow over the AST,
conservative across calls and attributes. A statement that reads a changed value changes every name it
stores, every object it calls a method on and every name it hands to a call (a call may mutate its
arguments); a function the cell defines, or one of the kernel's that the run listed in ``calls``, reads
the globals its code names.

A loop cut short keeps its first and last iterations. What its body binds afresh in an iteration is the
last iteration's value, the full run's too (kind ``loop``); what its body reads before binding it in the
same iteration (an accumulator, ``x = f(x)``, ``xs.append(...)``, ``x[t] = x[t - 1] + ...``) is
*carried* from the iterations the cut skipped, and may differ in any way (kind ``carried``). Aliasing
through objects (an optimizer holding a model's parameters) is not followed: it changes values, not
the shapes and names crashes of that kind are about.
"""

import sys as _shf_sys
from typing import Any

#: the kinds of change, from the least to the most doubtful
_SHF_LOOP, _SHF_PARAM, _SHF_SAMPLED, _SHF_CARRIED = "loop", "param", "sampled", "carried"


def _shf_ast() -> Any:
    return _shf_sys.modules.get("ast") or __import__("ast")  # IPython has imported it in the kernel


def _shf_root(node, ast):
    """The name at the root of ``a.b[c].d`` (None for anything else)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _shf_what_root(what):
    """``data['train']`` -> ``data``; ``model.n_estimators`` -> ``model``; ``epochs on line 4`` -> None."""
    if " on line " in what:
        return None
    for stop in ("[", "."):
        what = what.split(stop, 1)[0]
    return what or None


def _shf_loads(node, ast):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _shf_effects(node, ast, modules=frozenset()):
    """``(reads, writes)`` of one statement: its header only for a compound statement (their bodies are
    statements of their own); a definition reads what its body reads (when it is called)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return _shf_loads(node, ast), {node.name}
    if isinstance(node, (ast.For, ast.AsyncFor)):
        parts = [node.iter]
        writes = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    elif isinstance(node, (ast.While, ast.If)):
        parts, writes = [node.test], set()
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        parts = [item.context_expr for item in node.items]
        writes = {
            n.id for item in node.items if item.optional_vars is not None
            for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name)
        }  # fmt: skip
    elif isinstance(node, ast.Try) or (hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)):
        parts, writes = [h.type for h in node.handlers if h.type is not None], set()
        writes |= {h.name for h in node.handlers if h.name}
    elif hasattr(ast, "Match") and isinstance(node, ast.Match):
        parts, writes = [node.subject], set()
    else:
        parts, writes = [node], set()
    reads: set = set()
    local = set()  # a comprehension's or a lambda's own names are not the cell's
    for part in parts:
        for sub in ast.walk(part):
            if isinstance(sub, ast.comprehension):
                local |= {n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name)}
            elif isinstance(sub, ast.Lambda):
                local |= {a.arg for a in ast.walk(sub.args) if isinstance(a, ast.arg)}
    for part in parts:
        reads |= _shf_loads(part, ast)
        for sub in ast.walk(part):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                writes.add(sub.id)
            elif isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(
                sub.ctx, (ast.Store, ast.Del)
            ):
                root = _shf_root(sub, ast)
                if root:
                    writes.add(root)
            elif isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Attribute):
                    root = _shf_root(sub.func.value, ast)  # a method may change its object
                    if root and root not in modules:  # ``np.linalg.svd(a)`` changes no ``np``
                        writes.add(root)
                for arg in [*sub.args, *(k.value for k in sub.keywords)]:
                    root = _shf_root(arg, ast)  # a call may change what it is handed
                    if root and root not in modules:
                        writes.add(root)
            elif isinstance(sub, ast.AugAssign):
                root = _shf_root(sub.target, ast)
                if root:
                    reads.add(root)
                    writes.add(root)
    return reads - local, writes - local


def _shf_bodies(node, ast):
    """The statement lists directly inside a compound statement."""
    bodies = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            bodies.append(value)
    bodies.extend(h.body for h in getattr(node, "handlers", ()) or ())
    bodies.extend(c.body for c in getattr(node, "cases", ()) or ())
    return bodies


def _shf_statements(body, ast):
    """Every statement in ``body``, depth first (a definition's body is not entered: it is one statement)."""
    for node in body:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in _shf_bodies(node, ast):
                yield from _shf_statements(inner, ast)


def _shf_carried(loop, ast, modules=frozenset()):
    """Names the loop's body reads before binding them in the same iteration, and also changes:
    their value after a cut depends on the iterations skipped."""
    body = loop.body
    writes: set = set()
    for node in _shf_statements(body, ast):
        writes |= _shf_effects(node, ast, modules)[1]
    target = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        target = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    carried: set = set()
    bound = set(target)
    reads_first = _shf_loads(loop.test, ast) if isinstance(loop, ast.While) else set()
    carried |= (reads_first & writes) - bound
    for node in body:  # in order: a name bound by a plain assignment at the top of the body is fresh
        for inner in _shf_statements([node], ast):
            reads, _writes = _shf_effects(inner, ast, modules)
            carried |= (reads & writes) - bound
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target_node in targets:
                if isinstance(target_node, ast.Name):
                    bound.add(target_node.id)
                elif isinstance(target_node, (ast.Tuple, ast.List)):
                    bound |= {e.id for e in target_node.elts if isinstance(e, ast.Name)}
    return carried, writes - target


def _shf_changes(tree, shortened, calls, ast, skip=None, modules=frozenset()):
    """``{name: kinds}``: the cell's names whose value the shortened run may have changed (``skip``:
    a statement whose own effects come after what it reads: the failing one, outside loops)."""
    changed: dict = {}

    def mark(name, kind):
        if name:
            changed.setdefault(name, set()).add(kind)

    for item in shortened.get("rows") or ():
        mark(_shf_what_root(item.get("what") or ""), _SHF_SAMPLED)
    param_lines = set()
    for item in shortened.get("params") or ():
        what = item.get("what") or ""
        if " on line " in what:
            param_lines.add(int(what.rsplit(" ", 1)[1]))
        else:
            mark(_shf_what_root(what), _SHF_PARAM)
    cut = {int(line) for line in (shortened.get("loops") or {})}
    statements = list(_shf_statements(tree.body, ast))
    for node in statements:
        line = getattr(node, "lineno", None)
        if line in param_lines:
            for name in _shf_effects(node, ast, modules)[1]:
                mark(name, _SHF_PARAM)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and line in cut:
            carried, writes = _shf_carried(node, ast, modules)
            for name in writes:
                mark(name, _SHF_CARRIED if name in carried else _SHF_LOOP)
        elif line in cut:  # a comprehension over a long range cut short: fewer items
            for name in _shf_effects(node, ast, modules)[1]:
                mark(name, _SHF_SAMPLED)
    effects = [_shf_effects(node, ast, modules) for node in statements if node is not skip]
    effects = [(reads | _shf_called(reads, calls), writes) for reads, writes in effects]
    for _round in range(len(effects) + 1):  # to a fixed point: each round spreads changes one step
        grew = False
        for reads, writes in effects:
            kinds = set().union(*(changed.get(name, ()) for name in reads)) if reads else set()
            kinds.discard(_SHF_LOOP)  # a loop's last iteration is the full run's last iteration too
            for name in writes:
                have = changed.setdefault(name, set())
                if not kinds <= have:
                    have |= kinds
                    grew = True
        if not grew:
            break
    return {name: kinds for name, kinds in changed.items() if kinds}


def _shf_called(reads, calls):
    """The globals read by the kernel's functions (and user objects' methods) that ``reads`` names."""
    found: set[str] = set()
    for name in reads:
        found.update((calls or {}).get(name) or ())
    return found


def _shf_failing_node(tree, line, ast):
    """The innermost statement on ``line`` (a compound statement's header counts), and the loops
    around it."""
    best, loops = None, []

    def visit(body, around):
        nonlocal best, loops
        for node in body:
            start, end = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
            if not start <= line <= end:
                continue
            best, loops = node, list(around)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return
            inner = [*around, node] if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) else around
            for sub in _shf_bodies(node, ast):
                visit(sub, inner)

    visit(tree.body, [])
    return best, loops


def _shf_dependence(source, line, shortened):
    """What the failing ``line`` reads that the shortened run changed: ``{"kinds": {...}, "names":
    {name: [kinds]}, "in_function": bool}``, or None when the cell cannot be read (then the caller
    falls back to its rules)."""
    ast = _shf_ast()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if not line:
        return None
    calls = shortened.get("calls") or {}
    modules = frozenset(
        shortened.get("modules") or ()
    )  # names bound to modules: calling into one changes it not
    node, loops = _shf_failing_node(tree, int(line), ast)
    if node is None:
        return None
    changed = _shf_changes(tree, shortened, calls, ast, None if loops else node, modules)
    in_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
    reads = _shf_effects(node, ast, modules)[0] if not in_function else _shf_loads(node, ast)
    reads |= _shf_called(reads, calls)
    cut = {int(k) for k in (shortened.get("loops") or {})}
    names: dict[str, set[str]] = {}
    for loop in loops:  # inside a loop cut short: what its body carries is carried here too
        if loop.lineno in cut:
            carried, _writes = _shf_carried(loop, ast, modules)
            for name in reads & carried:
                names.setdefault(name, set()).add(_SHF_CARRIED)
    for name in reads:
        kinds = changed.get(name)
        if kinds:
            names.setdefault(name, set()).update(kinds)
    kinds = set().union(*names.values()) if names else set()
    return {"kinds": kinds, "names": {k: sorted(v) for k, v in names.items()}, "in_function": in_function}


def _shf_merged(first, second):
    """What either of two runs shortened (both runs' changes count)."""
    merged: dict[str, Any] = {"rows": [], "params": [], "loops": {}, "calls": {}, "modules": []}
    for facts in (first, second):
        merged["rows"] += list(facts.get("rows") or ())
        merged["params"] += list(facts.get("params") or ())
        merged["loops"].update(facts.get("loops") or {})
        merged["modules"] = sorted({*merged["modules"], *(facts.get("modules") or ())})
        for name, names in (facts.get("calls") or {}).items():
            merged["calls"][name] = sorted({*merged["calls"].get(name, ()), *names})
    return merged


def _shf_slow_part(text, line):
    """What to shorten, from where the full run is (``text``: the cell as IPython transformed it):
    inside a loop the rewrite can cut (``for`` over ``range``, a counted ``while``), that loop (and the
    loops in it) is cut, and only the data the loop reads is sampled (a training loop's loader; none for
    a loop over something else); elsewhere the data the slow statement reads is sampled; when unknown,
    every large object the cell names."""
    ast = _shf_ast()
    if ast is None or not line:
        return {"where": {"line": line, "mode": "sample"}}
    try:
        tree = ast.parse(text)
    except Exception:
        return {"where": {"line": line, "mode": "sample"}}
    span = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        if _shf_cuttable(node, ast) and (span is None or node.lineno < span[0]):
            span = (node.lineno, node.end_lineno or node.lineno)
    slow = next((n for n in tree.body if n.lineno <= line <= (n.end_lineno or n.lineno)), None)
    reads = sorted(_shf_feeds(tree, slow, ast)) if slow is not None else []
    if span is None:
        return {"where": {"line": line, "mode": "sample", "reads": reads}}
    return {"where": {"line": line, "mode": "loops", "span": list(span), "reads": reads}}


def _shf_feeds(tree, slow, ast):
    """The names the slow top-level statement reads, and those the cell computed them from: the data
    whose rows the time goes to (a sample of the rest would only add ways to invent a crash)."""
    statements = list(_shf_statements(tree.body, ast))
    effects = [_shf_effects(node, ast) for node in statements]
    needed = set(_shf_effects(slow, ast)[0])
    for node in _shf_statements([slow], ast):
        needed |= _shf_effects(node, ast)[0]
    for _round in range(len(effects) + 1):
        grew = False
        for reads, writes in effects:
            if writes & needed and not reads <= needed:
                needed |= reads
                grew = True
        if not grew:
            break
    return needed


def _shf_cuttable(node, ast):
    """A loop the rewrite routes through the child's helpers (``_ShRewrite``)."""
    if isinstance(node, ast.While):
        test = node.test
        counted = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.NotEq)
        return isinstance(test, ast.Compare) and all(isinstance(op, counted) for op in test.ops)
    target = node.iter
    if isinstance(target, ast.Call) and target.args and not _shf_is_range(target, ast):
        target = target.args[0]  # tqdm(range(n)), enumerate(range(n))
    return _shf_is_range(target, ast)


def _shf_is_range(node, ast):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
