"""Keras / TensorFlow checks: a model's output width against a data iterator's classes, its input shape
against the iterator's images, and ``History`` keys that were never recorded.

The iterator facts (``num_classes``, ``image_shape``, ``class_mode``) and the model facts (output shape,
final Dense units, compiled loss) come from the probe; nothing here runs or iterates anything.
"""

from __future__ import annotations

import ast
import math

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import Val, has_star, kwarg
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step

#: Losses that compare one-hot targets with the model output element-wise (shapes must match).
ONE_HOT_LOSSES = frozenset(
    {"categorical_crossentropy", "CategoricalCrossentropy", "binary_crossentropy", "BinaryCrossentropy"}
)
DATA_METHODS = ("fit", "evaluate")


def _model_and_iterator(w: CellWalk, node: ast.AST) -> tuple[ast.Call, Val, Val] | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or has_star(node):
        return None
    if node.func.attr not in DATA_METHODS:
        return None
    model = w.ev(node.func.value)
    if model is None or model.kind != Kind.KERAS_MODEL or model.summary is None or model.summary.nn is None:
        return None
    data_node = node.args[0] if node.args else kwarg(node, "x")
    if data_node is None:
        return None
    it = w.ev(data_node)
    if it is None or it.kind != Kind.KERAS_ITERATOR or it.summary is None or it.summary.iterator is None:
        return None
    return node, model, it


def _output_width(model: Val) -> int | None:
    nn = model.summary.nn if model.summary else None
    if nn is None:
        return None
    if nn.output_shape and len(nn.output_shape) == 2 and nn.output_shape[-1] is not None:
        return nn.output_shape[-1]
    if nn.layers and nn.layers[-1] == "Dense" and nn.last_units is not None:
        return nn.last_units
    return None


def _array_targets(w: CellWalk, node: ast.AST) -> list[Finding]:
    """``model.fit(X, y)`` with a one-hot array ``y`` (n, k) against a categorical loss and a final width
    other than k: Keras rejects the shapes on the first batch."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or has_star(node):
        return []
    if node.func.attr not in DATA_METHODS:
        return []
    model = w.ev(node.func.value)
    if model is None or model.kind != Kind.KERAS_MODEL or model.summary is None or model.summary.nn is None:
        return []
    nn = model.summary.nn
    y_node = node.args[1] if len(node.args) > 1 else kwarg(node, "y")
    y = w.ev(y_node) if y_node is not None else None
    if y is None or y.kind != Kind.NDARRAY or y.shape is None or len(y.shape) != 2 or y.shape[1] is None:
        return []
    width = _output_width(model)
    if nn.loss not in ("categorical_crossentropy", "CategoricalCrossentropy") or width is None:
        return []
    if width == y.shape[1]:
        return []
    return finding_at(
        w,
        "keras.units-classes",
        "ValueError",
        node,
        f"{model.text} outputs {width} values per sample but {y.text} holds one-hot targets of "
        f"{y.shape[1]} classes ({nn.loss})",
        [
            (f"{model.text} output width", str(width)),
            (f"{y.text}.shape", str(tuple(y.shape))),
            (f"{model.text}.loss", str(nn.loss)),
        ],
        [model, y],
    )


@step("keras.units-classes", on=(ast.Call,), words=DATA_METHODS)
def _units(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """Final layer width against an iterator's ``num_classes`` with a one-hot (categorical) loss."""
    for node in w.evaluated_of(stmt, ast.Call):
        found = _array_targets(w, node)
        if found:
            return found
        got = _model_and_iterator(w, node)
        if got is None:
            continue
        call, model, it = got
        info = it.summary.iterator if it.summary else None
        nn = model.summary.nn if model.summary else None
        if info is None or nn is None or info.class_mode != "categorical" or info.num_classes is None:
            continue
        if nn.loss not in ONE_HOT_LOSSES:
            continue
        width = _output_width(model)
        if width is not None and width != info.num_classes:
            return finding_at(
                w,
                "keras.units-classes",
                "ValueError",
                call,
                f"{model.text} outputs {width} values per sample but {it.text} yields "
                f"one-hot labels of {info.num_classes} classes ({nn.loss})",
                [
                    (f"{model.text} output width", str(width)),
                    (f"{it.text}.num_classes", str(info.num_classes)),
                    (f"{model.text}.loss", str(nn.loss)),
                ],
                [model, it],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("keras.input-shape", on=(ast.Call,), words=DATA_METHODS)
def _input_shape(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A model's input shape against the images a data iterator yields."""
    for node in w.evaluated_of(stmt, ast.Call):
        got = _model_and_iterator(w, node)
        if got is None:
            continue
        call, model, it = got
        info = it.summary.iterator if it.summary else None
        nn = model.summary.nn if model.summary else None
        if info is None or nn is None or not nn.input_shape or not info.image_shape:
            continue
        expected, found = list(nn.input_shape[1:]), list(info.image_shape)
        if len(expected) != len(found) or None in expected or None in found:
            continue
        typ = model.summary.type if model.summary else ""
        # A functional model checks its inputs; a Sequential one only warns, and then fails only where a
        # layer depends on the size: Flatten followed by Dense does, convolutions + global pooling do not.
        strict = typ.endswith(".Functional") and expected != found
        flat_dense = (
            typ.endswith(".Sequential")
            and (nn.layers or [])[:2] == ["Flatten", "Dense"]
            and math.prod(e for e in expected if e is not None)
            != math.prod(f for f in found if f is not None)
        )
        if strict or flat_dense:
            return finding_at(
                w,
                "keras.input-shape",
                "ValueError",
                call,
                f"{model.text} expects inputs of shape {tuple(expected)} but {it.text} yields "
                f"images of shape {tuple(found)}",
                [
                    (f"{model.text}.input_shape", str(tuple(nn.input_shape))),
                    (f"{it.text}.image_shape", str(tuple(found))),
                ],
                [model, it],
            )
    return []


# ------------------------------------------------------------------------------------------------


@step("keras.history-key", on=(ast.Subscript,), words=("history",))
def _history(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``history.history['val_accuracy']`` when training never recorded that metric."""
    for node in w.evaluated_of(stmt, ast.Subscript):
        if not (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "history"
        ):
            continue
        owner = w.ev(node.value.value)
        nn = owner.summary.nn if owner is not None and owner.summary is not None else None
        if owner is None or nn is None or nn.history_keys is None or len(nn.history_keys) >= 50:
            continue
        if not (owner.summary and owner.summary.type.endswith(".History")):
            continue
        ok, key = w.const(node.slice)
        if ok and isinstance(key, str) and key not in nn.history_keys:
            return finding_at(
                w,
                "keras.history-key",
                "KeyError",
                node.slice,
                f"{owner.text}.history has no {key!r}; training recorded {nn.history_keys}",
                [(f"{owner.text}.history keys", str(nn.history_keys))],
                [owner],
            )
    return []
