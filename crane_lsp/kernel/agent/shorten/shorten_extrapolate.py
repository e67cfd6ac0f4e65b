"""The failing operation of a shortened run re-run at the full size, on shapes: STANDARD LIBRARY ONLY.

Joined before ``dryrun.py``; runs in the jailed child of a shortened run, after the cell raised. The
instruction that raised is found from the traceback (its line and columns: ``co_positions``), its
expression in the cell's AST (an operator, a subscript or a call), and its operands are evaluated again
in the failing frame. Every NumPy array or torch tensor among them whose shape holds a dimension the
sample shrank (a sample's size) is stood in for at the full size: a NumPy array by a zero-strided
read-only view of that shape (``broadcast_to``: no memory), a torch tensor by a ``meta`` tensor (shapes
only, a module called on it moved to ``meta`` too). The operation then runs again:

- it raises the same exception: at the full size it fails too (``fails``);
- it runs: the crash came from the sample (``passes``: a position beyond the sample, a full-size
  object meeting a sampled one);
- anything else (an operand with no shape, a frame, a value computed from the sample's content, a
  different exception, too large to stand in): ``undecided``.

An operation whose shaped operands hold no sampled dimension ``fails`` as it did. All of it happens in
the child's own copy, which dies after answering; nothing here is imported into the kernel.
"""

import sys as _shx_sys
from typing import Any

_SHX_FILE = "<crane-dryrun>"
_SHX_MAX_ELEMENTS = 20_000_000  # a NumPy stand-in bigger than this would make the re-run slow


def _shx_ast() -> Any:
    return _shx_sys.modules.get("ast") or __import__("ast")  # IPython imported it in the kernel


def _shx_extrapolate(exc, text, shortened):
    """``{"status": "fails"|"passes"|"undecided", "why": str}`` for the operation that raised ``exc``
    (``text``: the cell as it was compiled, after IPython's transforms)."""
    try:
        return _shx_try(exc, text, shortened)
    except BaseException as err:  # never lose the verdict over it
        return {"status": "undecided", "why": f"the re-run failed: {type(err).__name__}"}


def _shx_undecided(why):
    return {"status": "undecided", "why": why}


def _shx_failing(exc):
    """``(frame, (line, end_line, col, end_col))`` of the cell's instruction that raised, or None."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _SHX_FILE:
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    positions = list(found.tb_frame.f_code.co_positions())
    index = found.tb_lasti // 2
    if not 0 <= index < len(positions) or None in positions[index]:
        return None
    return found.tb_frame, positions[index]


def _shx_node(text, where):
    ast = _shx_ast()
    tree = ast.parse(text)
    line, end_line, col, end_col = where
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.Call, ast.Subscript)) and (
            node.lineno,
            node.end_lineno,
            node.col_offset,
            node.end_col_offset,
        ) == (line, end_line, col, end_col):
            return node
    return None


def _shx_simple(node):
    """An operand that evaluates again to the same value: no generator, await, assignment or lambda."""
    ast = _shx_ast()
    unsafe = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda, ast.GeneratorExp)
    return not any(isinstance(sub, unsafe) for sub in ast.walk(node))


def _shx_operands(node):
    """The operand expressions of the failing operation (stood in for) and the rest (evaluated as is)."""
    ast = _shx_ast()
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Subscript):
        if any(isinstance(sub, ast.Name) for sub in ast.walk(node.slice)):
            return None  # a computed position may come from the sample
        return [node.value]
    if isinstance(node, ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        receiver = [node.func.value] if isinstance(node.func, ast.Attribute) else []  # ``X.sum(axis=2)``
        return [*receiver, *node.args, *(k.value for k in node.keywords)]
    return None


def _shx_full_sizes(shortened):
    """Sample size -> full size, for the row samples of this run."""
    sizes = {}
    for item in shortened.get("rows") or ():
        if item.get("unit", "rows") == "rows" and item.get("kept") and item.get("of"):
            sizes[int(item["kept"])] = int(item["of"])
    return sizes


def _shx_kind(value):
    kind = type(value)
    module = (kind.__module__ or "").split(".", 1)[0]
    if module == "numpy" and kind.__name__ == "ndarray":
        return "numpy"
    if module == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        return "torch"
    return None


def _shx_plain(value, depth=0):
    """A constant-like operand (a number, text, None, a slice, a tuple or list of those): the same in
    the full run, unless computed from the sample (an int is checked for that by its expression)."""
    if value is None or type(value) in (bool, int, float, str, complex) or value is Ellipsis:
        return True
    if type(value) is slice:
        return all(_shx_plain(part, depth + 1) for part in (value.start, value.stop, value.step))
    if type(value) in (tuple, list) and depth < 2 and len(value) <= 16:
        return all(_shx_plain(item, depth + 1) for item in value)
    return False


def _shx_try(exc, text, shortened):
    failing = _shx_failing(exc)
    if failing is None:
        return _shx_undecided("the failing instruction is not in the cell")
    frame, where = failing
    node = _shx_node(text, where)
    operands = _shx_operands(node) if node is not None else None
    if not operands:
        return _shx_undecided("the failing operation is not an operator, a constant subscript or a call")
    if not all(_shx_simple(o) for o in operands):
        return _shx_undecided("an operand would not evaluate to the same value again")
    full = _shx_full_sizes(shortened)
    ast = _shx_ast()
    scope = dict(frame.f_locals)
    values = [eval(compile(ast.Expression(o), _SHX_FILE, "eval"), frame.f_globals, scope) for o in operands]
    kinds = [_shx_kind(v) for v in values]
    for value, kind, operand in zip(values, kinds, operands, strict=False):
        if kind in ("numpy", "torch"):
            continue
        if type(value).__name__ == "module":  # ``np.linalg.inv(a)``: the function's module
            continue
        if not _shx_plain(value):  # a frame, an indexer, an estimator: what it holds is not its shape
            return _shx_undecided(f"an operand ({type(value).__name__}) has no shape to stand in for")
        if type(value) is int and not isinstance(operand, ast.Constant):
            return _shx_undecided("a computed position or size may come from the sample")
    sampled = [
        tuple(full.get(int(d), int(d)) for d in v.shape) if any(int(d) in full for d in v.shape) else None
        for v in values
        if _shx_kind(v) in ("numpy", "torch")
    ]
    sampled_by_operand = iter(sampled)
    sampled = [next(sampled_by_operand) if k in ("numpy", "torch") else None for k in kinds]
    if not any(sampled):
        return {"status": "fails", "why": "no operand holds a dimension the sample shrank"}
    standins = _shx_standins(values, kinds, sampled)
    if isinstance(standins, str):
        return _shx_undecided(standins)
    names = [f"__crane_shx_{i}__" for i in range(len(operands))]
    rebuilt = _shx_rebuild(node, operands, names)
    scope.update(zip(names, standins, strict=False))
    if node is not None and isinstance(node, ast.Call):
        _shx_module_to_meta(rebuilt, frame, scope, kinds)
    shapes = ", ".join(f"{tuple(s)}" for s in sampled if s)
    try:
        eval(compile(rebuilt, _SHX_FILE, "eval"), frame.f_globals, scope)
    except type(exc):
        return {"status": "fails", "why": f"it fails at the full shape {shapes} too"}
    except MemoryError:
        return _shx_undecided("the full size does not fit the dry run's memory")
    except BaseException as err:
        return _shx_undecided(f"at the full shape it raised {type(err).__name__} instead")
    return {"status": "passes", "why": f"it runs at the full shape {shapes}"}


def _shx_standins(values, kinds, sampled):
    """Full-size stand-ins: sampled operands at their full shape, the others as they are (torch
    tensors on ``meta`` so that they meet the stand-ins there); a reason string when it cannot."""
    out = []
    uses_torch = any(k == "torch" and s for k, s in zip(kinds, sampled, strict=False))
    for value, kind, shape in zip(values, kinds, sampled, strict=False):
        if kind == "numpy" and shape is not None:
            np = _shx_sys.modules["numpy"]
            if value.dtype.kind not in "biufc":
                return "a sampled array of objects has no stand-in"
            count = 1
            for d in shape:
                count *= d
            if count > _SHX_MAX_ELEMENTS:
                return f"a stand-in of shape {shape} is too large to re-run"
            out.append(np.broadcast_to(np.zeros((), dtype=value.dtype), shape))
        elif kind == "torch" and (shape is not None or uses_torch):
            torch = _shx_sys.modules["torch"]
            size = shape if shape is not None else tuple(value.shape)
            out.append(torch.empty(size, dtype=value.dtype, device="meta"))
        else:
            out.append(value)
    return out


def _shx_rebuild(node, operands, names):
    """The failing expression with its operands replaced by the stand-ins' names."""
    ast = _shx_ast()
    import copy

    clone = copy.deepcopy(node)
    slot = iter(ast.Name(id=name, ctx=ast.Load()) for name in names)
    if isinstance(clone, ast.BinOp):
        clone.left, clone.right = next(slot), next(slot)
    elif isinstance(clone, ast.Subscript):
        clone.value = next(slot)
    else:  # a call: the receiver of a method, then the arguments in order (as _shx_operands)
        if isinstance(clone.func, ast.Attribute):
            clone.func.value = next(slot)
        clone.args = [next(slot) for _ in clone.args]
        for keyword in clone.keywords:
            keyword.value = next(slot)
    expression = ast.Expression(clone)
    ast.fix_missing_locations(expression)
    return expression


def _shx_module_to_meta(expression, frame, scope, kinds):
    """A torch module called on a stand-in: its parameters on ``meta`` too (the child's copy)."""
    if "torch" not in kinds:
        return
    ast = _shx_ast()
    func = expression.body.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in scope:
        func = func.value  # ``model.forward(x)``: the receiver (maybe a stand-in already)
    if not _shx_simple(func):
        return
    target = eval(compile(ast.Expression(func), _SHX_FILE, "eval"), frame.f_globals, scope)
    owner = getattr(target, "__self__", target)
    torch = _shx_sys.modules.get("torch")
    if torch is not None and isinstance(owner, torch.nn.Module):
        owner.to("meta")
