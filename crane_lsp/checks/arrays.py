"""NumPy and PyTorch shape checks: broadcasting, matrix products, concatenation, reshape, axes, ``nn.Linear``
inputs, ``.item()``, ``.numpy()`` on tensors that require grad, and tensors on different devices.

Shapes come from the snapshot (or simple shape algebra on them: ``.T``, basic indexing); a check fires
only when every dimension it compares is known. NumPy raises ``ValueError`` (``AxisError`` for axes),
PyTorch ``RuntimeError`` (``IndexError`` for dims).
"""

from __future__ import annotations

import ast
import math

from crane_lsp.analysis.kinds import ARRAY_LIKE, SEQUENCES, Kind
from crane_lsp.analysis.values import ARRAY_REDUCTIONS, Val, first_layer_linear, kwarg, literal
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

Shape = tuple[int, ...]

_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_REDUCTIONS = ARRAY_REDUCTIONS | frozenset(
    {"cumprod", "median", "nansum", "nanmean", "nanmax", "nanmin", "ptp"}
)


def _finding(
    w: CellWalk, check_id: str, exc: str, node: ast.AST, message: str, vals: list[Val]
) -> list[Finding]:
    """A finding whose evidence is the shapes of the arrays involved."""
    evidence = tuple((f"{v.text}.shape", str(v.full_shape())) for v in vals if v.full_shape() is not None)
    return finding_at(w, check_id, exc, node, message, evidence, vals)


def _array(w: CellWalk, node: ast.AST) -> tuple[Val, Shape] | None:
    v = w.ev(node)
    if v is None or v.kind not in ARRAY_LIKE:
        return None
    shape = v.full_shape()
    return (v, shape) if shape is not None else None


def broadcast(a: Shape, b: Shape) -> Shape | None:
    out: list[int] = []
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if x != 1 and y != 1 else (y if x == 1 else x))
    longer = a if len(a) > len(b) else b
    return (*longer[: len(longer) - len(out)], *reversed(out))


def _exc(*vals: Val) -> str:
    return "RuntimeError" if any(v.kind == Kind.TENSOR for v in vals) else "ValueError"


def _mixed(a: Val, b: Val) -> bool:
    return a.kind != b.kind  # ndarray with tensor: conversion rules differ, stay out of it


# ------------------------------------------------------------------------------------------------


@step("array.broadcast", on=(ast.BinOp, ast.Compare))
def _broadcast(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Element-wise arithmetic or comparison between arrays/tensors whose shapes cannot broadcast."""
    for node in w.evaluated_of(stmt, ast.BinOp, ast.Compare):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH):
            pairs.append((node.left, node.right))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _COMPARE):
            pairs.append((node.left, node.comparators[0]))
        for left, right in pairs:
            a, b = _array(w, left), _array(w, right)
            if a is None or b is None or _mixed(a[0], b[0]):
                continue
            if broadcast(a[1], b[1]) is None:
                return _finding(
                    w,
                    "array.broadcast",
                    _exc(a[0], b[0]),
                    node,
                    f"shapes {a[1]} ({a[0].text}) and {b[1]} ({b[0].text}) cannot be broadcast together",
                    [a[0], b[0]],
                )
    return []


# ------------------------------------------------------------------------------------------------


def _dot_ok(a: Shape, b: Shape) -> bool:
    if not a or not b:
        return True  # a scalar multiplies anything
    if len(b) == 1:
        return a[-1] == b[0]
    return a[-1] == b[-2]


def _matmul_ok(a: Shape, b: Shape) -> bool:
    if not a or not b:
        return False
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        return False
    if len(a) > 2 and len(b) > 2:
        return broadcast(a[:-2], b[:-2]) is not None
    return True


def _matmul_pair(w: CellWalk, node: ast.AST) -> tuple[ast.AST, ast.AST, str] | None:
    """Operands of ``a @ b`` / ``np.dot(a, b)`` / ``a.dot(b)`` / ``torch.matmul(a, b)``, and which rule."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right, "matmul"
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and len(node.args) == 2:
        mod = w.module_of(func.value)
        if mod == "numpy" and func.attr in ("dot", "matmul"):
            return node.args[0], node.args[1], func.attr
        if mod == "torch" and func.attr in ("matmul", "mm"):
            return node.args[0], node.args[1], "matmul"
    if isinstance(func, ast.Attribute) and len(node.args) == 1 and func.attr in ("dot", "matmul", "mm"):
        base = w.ev(func.value)
        if base is not None and base.kind == Kind.NDARRAY and func.attr == "dot":
            return func.value, node.args[0], "dot"
        if base is not None and base.kind == Kind.TENSOR and func.attr in ("matmul", "mm"):
            return func.value, node.args[0], "matmul"
    return None


@step("array.matmul", on=(ast.BinOp, ast.Call))
def _matmul(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``@`` / ``dot`` / ``matmul`` / ``mm`` between arrays whose inner dimensions differ."""
    for node in w.evaluated_of(stmt, ast.BinOp, ast.Call):
        got = _matmul_pair(w, node)
        if got is None:
            continue
        a, b = _array(w, got[0]), _array(w, got[1])
        if a is None or b is None or _mixed(a[0], b[0]):
            continue
        rule = got[2]
        if a[0].kind == Kind.TENSOR and (not a[1] or not b[1]):
            continue
        ok = _dot_ok(a[1], b[1]) if rule == "dot" else _matmul_ok(a[1], b[1])
        if not ok:
            return _finding(
                w,
                "array.matmul",
                _exc(a[0], b[0]),
                node,
                f"cannot multiply shapes {a[1]} ({a[0].text}) and {b[1]} ({b[0].text}): "
                "inner dimensions differ",
                [a[0], b[0]],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("array.concatenate", on=(ast.Call,), words=("concatenate", "vstack", "hstack", "cat"))
def _concat(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``np.concatenate``/``vstack``/``hstack``/``torch.cat`` of arrays whose other dimensions differ."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        mod = w.module_of(node.func.value)
        fn = node.func.attr
        if not (
            (mod == "numpy" and fn in ("concatenate", "vstack", "hstack")) or (mod == "torch" and fn == "cat")
        ):
            continue
        seq = node.args[0]
        if not isinstance(seq, (ast.List, ast.Tuple)) or len(seq.elts) < 2:
            continue
        arrays = [_array(w, e) for e in seq.elts]
        if any(a is None for a in arrays):
            continue
        vals = [a[0] for a in arrays if a is not None]
        shapes = [a[1] for a in arrays if a is not None]
        if len({v.kind for v in vals}) != 1:
            continue
        axis_node = kwarg(node, "axis") if mod == "numpy" else (kwarg(node, "dim") or kwarg(node, "axis"))
        if axis_node is None and len(node.args) > 1:
            axis_node = node.args[1]
        axis = 0
        if axis_node is not None:
            ok, axis = literal(axis_node)
            if not ok or not isinstance(axis, int) or isinstance(axis, bool):
                continue
        if fn == "vstack":  # np.atleast_2d first
            shapes = [(1, 1) if not s else ((1, *s) if len(s) == 1 else s) for s in shapes]
            axis = 0
        elif fn == "hstack":  # np.atleast_1d first
            shapes = [s or (1,) for s in shapes]
            axis = 0 if all(len(s) == 1 for s in shapes) else 1
        problem = (
            "zero-dimensional arrays cannot be concatenated"
            if any(len(s) == 0 for s in shapes)
            else _concat_problem(shapes, axis)
        )
        if problem:
            exc = (
                "RuntimeError"
                if mod == "torch"
                else ("AxisError" if problem.startswith("axis") else "ValueError")
            )
            if mod == "torch" and problem.startswith("axis"):
                exc = "IndexError"
            return _finding(w, "array.concatenate", exc, node, f"{mod}.{fn}: {problem}", vals)
    return []


def _concat_problem(shapes: list[Shape], axis: int) -> str | None:
    nd = len(shapes[0])
    if any(len(s) != nd for s in shapes):
        return "the arrays have different numbers of dimensions: " + ", ".join(str(s) for s in shapes)
    if nd == 0:
        return None
    if not -nd <= axis < nd:
        return f"axis {axis} is out of bounds for arrays of dimension {nd}"
    ax = axis % nd
    for d in range(nd):
        if d != ax and len({s[d] for s in shapes}) > 1:
            return f"sizes differ in dimension {d} (not the concatenation axis {ax}): " + ", ".join(
                str(s) for s in shapes
            )
    return None


# ------------------------------------------------------------------------------------------------


@step("array.reshape", on=(ast.Call,), words=("reshape", "view"))
def _reshape(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``reshape``/``view`` into a shape whose size differs from the array's."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or node.keywords:
            continue
        fn = node.func.attr
        target: ast.AST | None = None
        dims_nodes: list[ast.expr] = []
        if fn in ("reshape", "view") and node.args:
            base = w.ev(node.func.value)
            if (
                base is not None
                and base.kind in ARRAY_LIKE
                and not (fn == "view" and base.kind != Kind.TENSOR)
            ):
                target, dims_nodes = node.func.value, node.args
            elif (
                fn == "reshape" and len(node.args) == 2 and w.module_of(node.func.value) in ("numpy", "torch")
            ):
                target, dims_nodes = node.args[0], node.args[1:]
        if target is None:
            continue
        arr = _array(w, target)
        if arr is None:
            continue
        if len(dims_nodes) == 1:
            ok, dims = literal(dims_nodes[0])
            dims = (dims,) if ok and isinstance(dims, int) else dims
        else:
            got = [literal(d) for d in dims_nodes]
            ok, dims = all(g[0] for g in got), tuple(g[1] for g in got)
        if (
            not ok
            or not isinstance(dims, (tuple, list))
            or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
        ):
            continue
        size = math.prod(arr[1])
        known = [d for d in dims if d != -1]
        if any(d < -1 for d in dims) or dims.count(-1) > 1:
            continue
        prod = math.prod(known)
        bad = (prod != size) if -1 not in dims else (prod == 0 or size % prod != 0)
        if bad:
            return _finding(
                w,
                "array.reshape",
                "RuntimeError" if arr[0].kind == Kind.TENSOR else "ValueError",
                node,
                f"cannot reshape {arr[0].text} of size {size} (shape {arr[1]}) into shape {tuple(dims)}",
                [arr[0]],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("array.axis", on=(ast.Call,), words=tuple(_REDUCTIONS))
def _axis(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Reducing along an axis the array does not have."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        fn = node.func.attr
        if fn not in _REDUCTIONS:
            continue
        target: ast.AST | None = None
        axis_node: ast.AST | None = None
        if w.module_of(node.func.value) == "numpy" and node.args:
            target = node.args[0]
            axis_node = kwarg(node, "axis") or (node.args[1] if len(node.args) > 1 else None)
        else:
            base = w.ev(node.func.value)
            if base is not None and base.kind == Kind.NDARRAY:
                target, axis_node = (
                    node.func.value,
                    kwarg(node, "axis") or (node.args[0] if node.args else None),
                )
            elif base is not None and base.kind == Kind.TENSOR and not node.args:
                target, axis_node = node.func.value, kwarg(node, "dim") or kwarg(node, "axis")
        if target is None or axis_node is None:
            continue
        arr = _array(w, target)
        if arr is None:
            continue
        ok, axis = literal(axis_node)
        axes = axis if ok and isinstance(axis, tuple) else (axis,)
        if not ok or not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
            continue
        nd = len(arr[1])
        bad = [a for a in axes if not -max(nd, 1) <= a < max(nd, 1)]
        if bad:
            exc = "IndexError" if arr[0].kind == Kind.TENSOR else "AxisError"
            return _finding(
                w,
                "array.axis",
                exc,
                axis_node,
                f"axis {bad[0]} is out of bounds for {arr[0].text}, which has {nd} dimension(s)",
                [arr[0]],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("numpy.savetxt-ndim", on=(ast.Call,), words=("savetxt",))
def _savetxt(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``np.savetxt`` of an array that is not 1-D or 2-D."""
    for node, method in w.method_calls(stmt, "savetxt"):
        if len(node.args) >= 2 and w.module_of(method.value) == "numpy":
            arr = _array(w, node.args[1])
            if arr is not None and arr[0].kind == Kind.NDARRAY and len(arr[1]) not in (1, 2):
                return _finding(
                    w,
                    "numpy.savetxt-ndim",
                    "ValueError",
                    node.args[1],
                    f"np.savetxt writes 1-D or 2-D arrays; {arr[0].text} has {len(arr[1])} dimensions",
                    [arr[0]],
                )
    return []


# ------------------------------------------------------------------------------------------------


@step("tensor.item", on=(ast.Call,), words=("item", "numpy"))
def _scalar_and_grad(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``.item()`` on a multi-element array/tensor; ``.numpy()`` on a tensor that requires grad."""
    for node, method in w.method_calls(stmt, "item", "numpy"):
        if node.args or node.keywords:
            continue
        fn = method.attr
        if fn == "item":
            arr = _array(w, method.value)
            if arr is not None and math.prod(arr[1]) != 1:
                exc = "RuntimeError" if arr[0].kind == Kind.TENSOR else "ValueError"
                return _finding(
                    w,
                    "tensor.item",
                    exc,
                    node,
                    f".item() needs exactly one element; {arr[0].text} has {math.prod(arr[1])}",
                    [arr[0]],
                )
        elif fn == "numpy":
            v = w.ev(method.value)
            s = v.summary if v is not None else None
            if (
                v is not None
                and s is not None
                and v.kind == Kind.TENSOR
                and s.requires_grad
                and (s.device or "cpu") == "cpu"
            ):
                return finding_at(
                    w,
                    "tensor.item",
                    "RuntimeError",
                    node,
                    f"{v.text} requires grad: .numpy() needs .detach() first",
                    [(f"{v.text}.requires_grad", "True")],
                    [v],
                )
    return []


# ------------------------------------------------------------------------------------------------


@step("torch.linear-input", on=(ast.Call,))
def _linear(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Calling an ``nn.Linear`` (or a Sequential starting with one) on a tensor of the wrong width."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
            continue
        mod = w.ev(node.func)
        if mod is None or mod.kind != Kind.TORCH_MODULE or mod.summary is None or mod.summary.nn is None:
            continue
        info = mod.summary.nn
        if not first_layer_linear(mod.summary) or info.in_features is None:
            continue
        x = _array(w, node.args[0])
        if x is None or x[0].kind != Kind.TENSOR or not x[1]:
            continue
        if x[1][-1] != info.in_features:
            return finding_at(
                w,
                "torch.linear-input",
                "RuntimeError",
                node,
                f"{mod.text} expects inputs whose last dimension is {info.in_features}; "
                f"{x[0].text} has shape {x[1]}",
                [
                    (f"{mod.text} first Linear in_features", str(info.in_features)),
                    (f"{x[0].text}.shape", str(x[1])),
                ],
                [mod, x[0]],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("torch.device-mismatch", on=(ast.BinOp,))
def _devices(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Arithmetic between tensors on different devices."""
    for node in w.evaluated_of(stmt, ast.BinOp):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (*_ARITH, ast.MatMult))):
            continue
        a, b = _array(w, node.left), _array(w, node.right)
        if a is None or b is None or a[0].kind != Kind.TENSOR or b[0].kind != Kind.TENSOR:
            continue
        da = a[0].summary.device if a[0].summary else None
        db = b[0].summary.device if b[0].summary else None
        if da and db and da != db and a[1] and b[1]:  # a 0-d CPU tensor may join any device
            return finding_at(
                w,
                "torch.device-mismatch",
                "RuntimeError",
                node,
                f"{a[0].text} is on {da} but {b[0].text} is on {db}",
                [(f"{a[0].text}.device", da), (f"{b[0].text}.device", db)],
                [a[0], b[0]],
            )
    return []


# ------------------------------------------------------------------------------------------------


def index_keys(w: CellWalk, sl: ast.expr) -> tuple[object, ...] | None:
    """The literal keys of ``a[3]`` / ``a[1, 2]`` / ``a[:, 7]`` by axis (a slice, which never raises: None);
    None when an item is neither (``...``, ``None``, a name the walk does not know)."""
    if isinstance(sl, ast.Tuple) and any(isinstance(e, ast.Slice) for e in sl.elts):
        keys: list[object] = []
        for e in sl.elts:
            ok, k = (True, None) if isinstance(e, ast.Slice) else w.const(e)
            if not ok or not ((k is None and isinstance(e, ast.Slice)) or type(k) is int):
                return None
            keys.append(k)
        return tuple(keys)
    ok, key = w.const(sl)
    return (key if isinstance(key, tuple) else (key,)) if ok else None


@step("array.index-range", on=(ast.Subscript, ast.Call))
def _index(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A literal index past the end of an array or tensor; ``np.random.choice`` of a non-1-D array."""
    for node in w.evaluated_of(stmt, ast.Subscript, ast.Call):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            arr = _array(w, node.value)
            if arr is None:
                continue
            keys = index_keys(w, node.slice)
            if keys is None or len(keys) > len(arr[1]):
                continue
            for axis, k in enumerate(keys):
                n = arr[1][axis]
                if isinstance(k, int) and not isinstance(k, bool) and not -n <= k < n:
                    return _finding(
                        w,
                        "array.index-range",
                        "IndexError",
                        node.slice,
                        f"index {k} is out of bounds for axis {axis} of {arr[0].text}, which has size {n}",
                        [arr[0]],
                    )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "choice"
            and node.args
            and w.module_of(node.func.value) == "numpy.random"
        ):
            arr = _array(w, node.args[0])
            if arr is not None and arr[0].kind == Kind.NDARRAY and len(arr[1]) != 1:
                return _finding(
                    w,
                    "array.index-range",
                    "ValueError",
                    node.args[0],
                    f"np.random.choice needs a 1-D array; {arr[0].text} has shape {arr[1]}",
                    [arr[0]],
                )
    return []


# ------------------------------------------------------------------------------------------------


@step("array.as-list-index", on=(ast.Subscript,))
def _list_by_array(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``names[labels[i]]`` where ``labels[i]`` is still an array (e.g. labels of shape (n, 1))."""
    for node in w.evaluated_of(stmt, ast.Subscript):
        if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)):
            continue
        seq = w.ev(node.value)
        if seq is None or seq.kind not in SEQUENCES:
            continue
        key = _array(w, node.slice)
        if key is None or key[0].kind != Kind.NDARRAY or not key[1]:
            continue
        return _finding(
            w,
            "array.as-list-index",
            "TypeError",
            node.slice,
            f"a Python list cannot be indexed by an array: {key[0].text} has shape {key[1]}, "
            "so it is not a scalar index",
            [key[0]],
        )
    return []
