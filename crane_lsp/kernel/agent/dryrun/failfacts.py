"""The facts at the failing line of a dry run: STANDARD LIBRARY ONLY, called in the jailed child.

When the cell raises, the child still holds the traceback and its frames. Before it answers,
``_ff_collect`` reads the failing line's AST (the cell's, and that of the innermost function defined
in an earlier cell), looks the names, static attributes and plain subscripts it reads up in the
frame, and summarises them with the probe's own budgeted summarisers (nothing imported, nothing
iterated, no property run); it adds the loop the line is in (the loop variables and, where the
iterable says so cheaply, which iteration) and the earlier statement that last assigned each name.
Everything fits a slice of the dry run's budget and a size cap; privacy mode leaves values out as
the probe does. Never raises: a failure is an ``error`` field, never a lost verdict.
"""

import contextlib as _ff_contextlib
import json as _ff_json
import sys as _ff_sys
import time as _ff_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import _Clock, _Deadline
    from crane_lsp.kernel.agent.probe.summaries import _classify, _summarise
    from crane_lsp.kernel.agent.safe import _MISSING, _mro, _qualname, _static
    from crane_lsp.kernel.agent.wire import (
        DEFAULT_BUDGETS,
        FailFactsWire,
        FailFrameWire,
        FailLoopWire,
        FailValueWire,
        Kind,
        ObjectWire,
        QueryWire,
    )

#: At most this long for the facts (and never more than half of what is left of the dry run's budget).
_FF_MAX_S = 0.6
#: Per value: shape, dtype and columns come first, then statistics on a small sample (NaN counts).
_FF_OBJECT_S = 0.25
_FF_MARGIN_S = 0.15
_FF_MAX_VALUES = 6  # per frame: the innermost user function's line, then the cell's
_FF_MAX_BYTES = 24_000  # the whole facts block, as JSON: column statistics go first when it is bigger
_FF_CELL_FILE = "<crane-dryrun>"
_FF_MAX_SOURCE = 200_000  # characters of a cell parsed for its failing line (a long cell parses in ~0.1 s)
#: Kinds that say nothing about a crash: ``np``, ``len``, a class.
_FF_SKIP_KINDS = frozenset((Kind.MODULE, Kind.CLASS, Kind.FUNCTION))
#: Kinds whose summary runs the user's code (a Dataset's ``__getitem__``): named, not read, so that
#: code cannot reach the jail after the crash and turn the observed verdict into ``blocked``.
_FF_UNREAD_KINDS = frozenset((Kind.TORCH_DATASET, Kind.TORCH_ITERABLE_DATASET, Kind.DATALOADER))


def _ff_collect(exc, payload, started):
    """The facts block of the verdict for ``exc`` (the cell's exception), or None when not wanted."""
    if not payload.get("facts", True):
        return None
    begun = _ff_time.perf_counter()
    # the parent's clock started before the fork (and the answer must travel back): keep a margin
    left = float(payload.get("budget_s", 3.0)) - (begun - started) - _FF_MARGIN_S
    out: FailFactsWire = {"values": [], "loops": [], "privacy": bool(payload.get("privacy"))}
    if left < 0.1:
        out["error"] = "no time left in the dry run's budget"
        return out
    query: QueryWire = {
        **DEFAULT_BUDGETS,
        "sample_rows": 1000,
        "max_columns": 6,  # every column's name and dtype; statistics (NaN counts) for the first six
        "max_list_items": 20,
        "object_budget_s": _FF_OBJECT_S,
        "request_budget_s": min(_FF_MAX_S, left / 2),
        "privacy": bool(payload.get("privacy")),
    }
    clock = _Clock(query["request_budget_s"], _FF_OBJECT_S)
    try:
        _ff_fill(out, exc, payload, query, clock)
    except _Deadline:
        out["deadline_hit"] = True
    except BaseException as err:  # the facts are a bonus: never lose the verdict over them
        out["error"] = type(err).__name__ + ": " + str(err)[:200]
    out["deadline_hit"] = bool(out.get("deadline_hit") or clock.hit)
    _ff_fit(out)
    out["elapsed_ms"] = round((_ff_time.perf_counter() - begun) * 1000, 2)
    return out


def _ff_frames(exc):
    """``(cell frame and line, innermost user frame and line)`` from the traceback; either may be None."""
    shell = _ff_shell()
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    cell = user = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == _FF_CELL_FILE:
            cell = (tb.tb_frame, tb.tb_lineno)
        elif filename in names or "/ipykernel_" in filename or filename.startswith("<ipython-input-"):
            user = (tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return cell, user, names


def _ff_shell():
    ipython = _ff_sys.modules.get("IPython")
    try:
        return ipython.get_ipython() if ipython is not None else None
    except Exception:
        return None


def _ff_fill(out, exc, payload, query, clock):
    import ast  # imported by IPython already: a lookup in sys.modules
    import linecache

    cell, user, names = _ff_frames(exc)
    if user is not None:
        frame, line = user
        code = frame.f_code
        info: FailFrameWire = {"function": code.co_name, "line": line, "first_line": code.co_firstlineno}
        count = names.get(code.co_filename)
        if type(count) is int:
            info["execution_count"] = count
        lines = linecache.getlines(code.co_filename)
        if 0 < line <= len(lines):
            info["text"] = lines[line - 1].strip()[:160]
        out["frame"] = info
        if lines and sum(map(len, lines)) <= _FF_MAX_SOURCE:
            tree = ast.parse("".join(lines))
            scope = _ff_function_node(tree, code.co_name, code.co_firstlineno) or tree
            _ff_read_line(out, scope, frame, line, "frame", query, clock)
    if cell is not None:
        frame, line = cell
        out["line"] = line
        if clock.request_over():
            return
        scope = _ff_cell_scope(frame, payload)
        if scope is not None:
            _ff_read_line(out, scope, frame, line, "line", query, clock)


def _ff_cell_scope(frame, payload):
    """The AST the cell's failing frame runs: the cell, or a function the cell itself defines (its
    own body); None when the cell is too long to parse here."""
    import ast

    source = payload.get("source") or ""
    shell = _ff_shell()
    if shell is not None:
        source = shell.transform_cell(source)
    if len(source) > _FF_MAX_SOURCE:
        return None
    tree = ast.parse(source)
    code = frame.f_code
    if code.co_name == "<module>":
        return tree
    return _ff_function_node(tree, code.co_name, code.co_firstlineno)


def _ff_function_node(tree, name, first_line):
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if start == first_line or node.lineno == first_line:
                return node
    return None


def _ff_statement(scope, line):
    """The innermost statement of ``scope`` on ``line`` and the ``for`` loops around it (outermost first)."""
    import ast

    found, loops = None, []
    body = list(_ff_children(scope))
    while body:
        nxt = []
        for node in body:
            if not isinstance(node, ast.stmt) or not node.lineno <= line <= (node.end_lineno or node.lineno):
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node is not scope:
                continue
            found = node
            if isinstance(node, ast.For | ast.AsyncFor) and line > node.lineno:
                loops.append(node)
            nxt = list(_ff_children(node))
            break
        body = nxt
    return found, loops


def _ff_children(node):
    for field in ("body", "orelse", "finalbody", "handlers"):
        yield from getattr(node, field, None) or ()
    for case in getattr(node, "cases", None) or ():
        yield from case.body


def _ff_header(stmt):
    """The expressions a statement evaluates on its own line (a compound statement: its header)."""
    import ast

    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.iter]
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Try):
        return []
    return [stmt]


def _ff_reads(nodes):
    """Texts of what the nodes read, in source order: ``x``, ``self.w``, ``labels[i]``, ``d['k']``
    (a statement over several lines is one expression: all of it; no callee: ``np.dot``, ``df.drop``)."""
    import ast

    found = []
    for top in nodes:
        callees = {id(n.func) for n in ast.walk(top) if isinstance(n, ast.Call)}  # ``np.dot``, ``df.drop``
        for node in ast.walk(top):
            if id(node) in callees and not isinstance(node, ast.Name):
                continue
            if isinstance(node, ast.Name | ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Load):
                text = _ff_text(node)
                if text is not None:
                    found.append((node.lineno, node.col_offset, text))
    ordered = []
    for _l, _c, text in sorted(found):
        if text not in ordered:
            ordered.append(text)
    return ordered


def _ff_text(node):
    """``a``, ``a.b.c`` or ``a[k]`` (k a name or a constant) with a name at the root, else None."""
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _ff_text(node.value)
        return None if base is None or "[" in base else base + "." + node.attr
    if isinstance(node, ast.Subscript):
        base = _ff_text(node.value)
        key = node.slice
        if base is None or "[" in base:
            return None
        if isinstance(key, ast.Name):
            return base + "[" + key.id + "]"
        if isinstance(key, ast.Constant) and type(key.value) in (int, str):
            return base + "[" + repr(key.value) + "]"
    return None


def _ff_lookup(frame, text):
    """The value ``text`` names in ``frame``: names, stored attributes and plain subscripts only
    (no property, no ``__getattr__``; a subscript of a builtin container, of an array by an int, of
    a pandas DataFrame by one of its column labels)."""
    if "[" in text:
        base_text, key_text = text[:-1].split("[", 1)
        base = _ff_lookup(frame, base_text)
        if base is _MISSING:
            return _MISSING
        if key_text[:1] in "'\"":
            key = key_text[1:-1]
        elif key_text.lstrip("-").isdigit():
            key = int(key_text)
        else:
            key = _ff_lookup(frame, key_text)
        return _ff_item(base, key)
    parts = text.split(".")
    local = frame.f_locals
    if parts[0] in local:
        value = local[parts[0]]
    elif parts[0] in frame.f_globals:
        value = frame.f_globals[parts[0]]
    else:  # a builtin (``len``) or an unbound name
        return _MISSING
    for attr in parts[1:]:
        value = _static(value, attr, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def _ff_item(base, key):
    mro = _mro(base)
    if type(key) is int and (list in mro or tuple in mro):
        try:
            return (list if list in mro else tuple).__getitem__(base, key)
        except IndexError:
            return _MISSING
    if dict in mro and type(key) in (int, str):
        return dict.get(base, key, _MISSING)
    pd = _ff_sys.modules.get("pandas")
    if pd is not None and type(base) is pd.DataFrame and type(key) in (int, str):
        columns = base.columns  # ``df['col']``: one existing column of pandas' own frame (a view)
        if columns.is_unique and key in columns:
            return base[key]
    np = _ff_sys.modules.get("numpy")
    if (np is not None and type(base) is np.ndarray and base.ndim >= 1 and _ff_is_int(key, np)
            and -base.shape[0] <= int(key) < base.shape[0]):  # fmt: skip
        return base[int(key)]
    return _MISSING


def _ff_is_int(key, np):
    return type(key) is int or (isinstance(key, np.integer) and type(key).__module__ == "numpy")


def _ff_read_line(out, scope, frame, line, where, query, clock):
    stmt, loops = _ff_statement(scope, line)
    if stmt is None:
        return
    added = 0
    for text in _ff_reads(_ff_header(stmt)):
        if added >= _FF_MAX_VALUES or clock.request_over():
            break
        added += _ff_add(out, frame, text, where, query, clock, _ff_assigned(scope, text, stmt, loops))
    for loop in loops[-2:][::-1]:  # the innermost two
        out["loops"].append(_ff_loop(out, loop, frame, where, query, clock, scope, stmt))


def _ff_add(out, frame, text, where, query, clock, assigned):
    """Summarise what ``text`` names in ``frame`` into ``out``; whether it did."""
    value = _ff_lookup(frame, text)
    if value is _MISSING:
        return False
    try:
        kind = _classify(value)
    except Exception:
        return False
    if kind in _FF_SKIP_KINDS:
        return False
    if kind in _FF_UNREAD_KINDS:
        summary: ObjectWire = {"type": _qualname(type(value)), "kind": kind}
    else:
        summary = _summarise(value, query, clock)
    entry: FailValueWire = {"name": text, "scope": where, "summary": summary}
    if assigned:
        entry.update(assigned)
    out["values"].append(entry)
    return True


def _ff_stores(scope):
    """name -> lines of ``scope`` (not nested functions) that bind it."""
    import ast

    stores: dict = {}

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                if not isinstance(child, ast.Lambda):
                    stores.setdefault(child.name, []).append(child.lineno)
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                stores.setdefault(child.id, []).append(child.lineno)
            elif isinstance(child, ast.alias):
                name = (child.asname or child.name).split(".")[0]
                stores.setdefault(name, []).append(getattr(child, "lineno", 0) or node.lineno)
            elif isinstance(child, ast.Attribute | ast.Subscript) and isinstance(child.ctx, ast.Store):
                root: Any = child
                while isinstance(root, ast.Attribute | ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name):  # ``df['x'] = ...`` changes df
                    stores.setdefault(root.id, []).append(child.lineno)
            elif _ff_inplace(child):  # ``df.drop(..., inplace=True)`` changes df
                call: Any = child
                stores.setdefault(call.func.value.id, []).append(call.lineno)
            visit(child)

    if not isinstance(scope, ast.Module):
        for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs):
            stores.setdefault(a.arg, []).append(scope.lineno)
    visit(ast.Module(body=list(scope.body), type_ignores=[]))
    return stores


def _ff_inplace(node):
    import ast

    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords)
    )  # fmt: skip


def _ff_assigned(scope, text, stmt, loops):
    """Where the name at the root of ``text`` was last bound before ``stmt`` in this scope: ``assigned``
    (1-based line), and ``again`` when a line of the enclosing loop at or after ``stmt`` rebinds it
    (the value comes from an earlier iteration)."""
    root = text.split(".", 1)[0].split("[", 1)[0]
    lines = _ff_stores_cached(scope).get(root, [])
    found: dict[str, Any] = {}
    before = [n for n in lines if n < stmt.lineno]
    if before:
        found["assigned"] = max(before)
    if loops:
        loop = loops[-1]
        again = [n for n in lines if stmt.lineno <= n <= (loop.end_lineno or loop.lineno)]
        if again:
            found["again"] = min(again)
    return found


_FF_STORES: dict = {}


def _ff_stores_cached(scope):
    key = id(scope)
    if key not in _FF_STORES:
        _FF_STORES.clear()
        _FF_STORES[key] = _ff_stores(scope)
    return _FF_STORES[key]


def _ff_loop(out, loop, frame, where, query, clock, scope, stmt):
    """The loop's variables (summarised) and, where cheap, the iteration: ``range``/``enumerate``
    arithmetic, or where the value sits in a list or tuple (several places: ``positions``)."""
    import ast

    info: FailLoopWire = {"line": loop.lineno, "target": ast.unparse(loop.target)[:80],
                          "iterable": ast.unparse(loop.iter)[:120], "scope": where}  # fmt: skip
    targets = [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    for name in targets[:4]:
        if not any(v["name"] == name and v.get("scope") == where for v in out["values"]):
            _ff_add(out, frame, name, where, query, clock, {})
        for v in out["values"]:
            if v["name"] == name and v.get("scope") == where:
                v["loop"] = loop.lineno
    with _ff_contextlib.suppress(Exception):
        _ff_iteration(info, loop, frame, targets)
    return info


def _ff_iteration(info, loop, frame, targets):
    import ast

    it = loop.iter
    first = targets[0] if targets else None
    current = frame.f_locals.get(first, _MISSING) if first else _MISSING
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not it.keywords:
        args = [_ff_int(frame, a) for a in it.args]
        if it.func.id == "range" and args and None not in args and type(current) is int:
            r = range(*args)
            if current in r:
                info["iteration"], info["total"] = r.index(current) + 1, len(r)
            return
        if it.func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and type(current) is int:
            start = args[1] if len(args) > 1 and args[1] is not None else 0
            info["iteration"] = current - start + 1
            seq = _ff_sequence(frame, it.args[0]) if it.args else None
            if seq is not None:
                info["total"] = len(seq)
            return
    seq = _ff_sequence(frame, it)
    if seq is None or current is _MISSING or len(targets) != 1:
        return
    info["total"] = len(seq)
    same = [i + 1 for i, item in enumerate(seq) if item is current or (_ff_plain(item) and item == current)]
    if len(same) == 1:
        info["iteration"] = same[0]
    elif same:
        info["positions"] = same[:10]


def _ff_plain(item):
    return type(item) in (int, str, float, bool)


def _ff_int(frame, node):
    import ast

    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _ff_int(frame, node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Name):
        value = _ff_lookup(frame, node.id)
        return value if type(value) is int else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        seq = _ff_sequence(frame, node.args[0])
        return None if seq is None else len(seq)
    return None


def _ff_sequence(frame, node):
    """A literal list/tuple of constants, or a name bound to a builtin list or tuple (read, not iterated
    through any user code), at most 10,000 items; else None."""
    import ast

    if isinstance(node, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if isinstance(node, ast.Name | ast.Attribute):
        text = _ff_text(node)
        value: Any = _ff_lookup(frame, text) if text else _MISSING
        if type(value) in (list, tuple) and len(value) <= 10_000:
            return value
    return None


def _ff_fit(out):
    """Keep the block under ``_FF_MAX_BYTES``: column statistics first, then whole columns, then values."""
    if len(_ff_json.dumps(out, default=str)) <= _FF_MAX_BYTES:
        return
    for v in out["values"]:
        for col in v["summary"].get("columns", ()):
            col.pop("stats", None)
        v["summary"].pop("stats", None)
    while len(_ff_json.dumps(out, default=str)) > _FF_MAX_BYTES and out["values"]:
        cols = [v for v in out["values"] if len(v["summary"].get("columns", ())) > 5]
        if cols:
            for v in cols:
                v["summary"]["columns"] = v["summary"]["columns"][:5]
                v["summary"]["columns_truncated"] = True
            continue
        out["values"].pop()
    out["truncated"] = True
