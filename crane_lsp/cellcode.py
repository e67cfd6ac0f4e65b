"""Import shim: the cell analysis now lives in ``crane_lsp.analysis`` (parse, scan, facts, positions).

Kept so that ``from crane_lsp.cellcode import analyze, CellFacts, Span`` keeps working until the
callers move to ``crane_lsp.analysis``.
"""

from __future__ import annotations

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
from crane_lsp.analysis.parse import analyze
from crane_lsp.analysis.positions import PosMap as _PosMap
from crane_lsp.analysis.positions import Span
from crane_lsp.analysis.scan import _Analyzer

__all__ = [
    "UNTRUSTED_ALL",
    "UNTRUSTED_FILES",
    "UNTRUSTED_MODULES",
    "Argument",
    "Assignment",
    "AttributeChain",
    "Call",
    "CellFacts",
    "ImportUse",
    "NameUse",
    "Operation",
    "Span",
    "Subscript",
    "TrustEvent",
    "_Analyzer",
    "_PosMap",
    "analyze",
]
