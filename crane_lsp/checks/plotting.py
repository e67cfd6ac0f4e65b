"""matplotlib / seaborn checks: ``imshow`` of an array that is not an image, and plotting calls whose
arguments the function's own signature (read from the kernel) rejects.
"""

from __future__ import annotations

import ast
import inspect

from crane_lsp.analysis.kinds import ARRAY_LIKE, Kind
from crane_lsp.analysis.values import has_star
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.registry import Finding, finding_at, step
from crane_lsp.snapshot import ParamInfo

PLOT_LIBS = ("matplotlib", "seaborn")


def _is_image_shape(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2 or (len(shape) == 3 and shape[-1] in (3, 4))


@step("plot.imshow-shape", on=(ast.Call,), words=("imshow",))
def _imshow(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``imshow`` of an array that is not a 2-D image or an RGB(A) stack with channels last."""
    for node, method in w.method_calls(stmt, "imshow"):
        if not node.args:
            continue
        mod = w.module_of(method.value)
        if mod is None:
            owner = w.ev(method.value)
            axes = (
                owner is not None
                and owner.summary is not None
                and owner.summary.type.startswith("matplotlib.axes.")
            )
            if not axes:
                continue
        elif not mod.startswith("matplotlib"):
            continue
        img = w.ev(node.args[0])
        if img is None or img.kind not in ARRAY_LIKE:
            continue
        if img.kind == Kind.TENSOR and (
            img.summary is None or img.summary.requires_grad or (img.summary.device or "cpu") != "cpu"
        ):
            continue
        shape = img.full_shape()
        if shape is None or _is_image_shape(shape):
            continue
        hint = (
            " (channels first? move the channel axis last)"
            if len(shape) == 3 and shape[0] in (1, 3, 4)
            else ""
        )
        return finding_at(
            w,
            "plot.imshow-shape",
            "TypeError",
            node.args[0],
            f"imshow needs an (M, N), (M, N, 3) or (M, N, 4) array; {img.text} has shape {shape}{hint}",
            [(f"{img.text}.shape", str(shape))],
            [img],
        )
    return []


# ------------------------------------------------------------------------------------------------


def _signature(params: list[ParamInfo]) -> inspect.Signature | None:
    try:
        return inspect.Signature(
            [
                inspect.Parameter(
                    p.name,
                    getattr(inspect.Parameter, p.kind),
                    default=None if p.has_default else inspect.Parameter.empty,
                )
                for p in params
            ]
        )
    except (ValueError, TypeError):
        return None


@step("plot.call-signature", on=(ast.Call,))
def _plot_signature(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """A matplotlib/seaborn call whose positional and keyword arguments its signature rejects."""
    for node in w.evaluated_of(stmt, ast.Call):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or has_star(node):
            continue
        mod = w.module_of(node.func.value)
        if mod is None or not mod.startswith(PLOT_LIBS):
            continue
        chain = ast.unparse(node.func)
        fn = w.snapshot.variables.get(chain)
        if fn is None or fn.kind != Kind.FUNCTION or not fn.params:
            continue
        if fn.module is not None and not fn.module.startswith(PLOT_LIBS):
            continue
        sig = _signature(fn.params)
        if sig is None:
            continue
        try:
            sig.bind(*range(len(node.args)), **{kw.arg: 0 for kw in node.keywords if kw.arg})
        except TypeError as exc:
            reason = str(exc)
            return finding_at(
                w,
                "plot.call-signature",
                "TypeError",
                node,
                f"{chain}(): {reason}",
                [(f"signature of {chain}", fn.signature or "")],
                [],
            )
    return []
