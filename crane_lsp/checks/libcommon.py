"""Import shim: the walk and its value domain now live in ``crane_lsp.analysis`` (walk, evaluate,
values, positions) and the step-hook machinery in ``crane_lsp.checks.registry``."""

from __future__ import annotations

from crane_lsp.analysis.positions import span_of
from crane_lsp.analysis.values import (
    LIB_KINDS,
    PURE_LIBS,
    PURE_METHODS,
    Est,
    Val,
    dotted,
    exact_labels,
    first_layer_linear,
    has_star,
    kwarg,
    literal,
    parse_expr,
    root_name,
    val_from_summary,
)
from crane_lsp.analysis.walk import MAX_LOOP_PASSES, MAX_LOOP_STEPS, CellWalk
from crane_lsp.checks.registry import CheckHook, finding_at, run_walk

__all__ = [
    "LIB_KINDS",
    "MAX_LOOP_PASSES",
    "MAX_LOOP_STEPS",
    "PURE_LIBS",
    "PURE_METHODS",
    "CellWalk",
    "CheckHook",
    "Est",
    "Val",
    "dotted",
    "exact_labels",
    "finding_at",
    "first_layer_linear",
    "has_star",
    "kwarg",
    "literal",
    "parse_expr",
    "root_name",
    "run_walk",
    "span_of",
    "val_from_summary",
]
