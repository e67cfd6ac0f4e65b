"""Moved: the models to ``crane_lsp.snapshot``, the rendering to ``crane_lsp.render``.

Kept so that ``from crane_lsp.runtime import Snapshot, render_snapshot`` goes on working until the
lead removes this shim.
"""

from crane_lsp.render import format_shape, render_object, render_snapshot
from crane_lsp.snapshot import (
    AttributeFact,
    ColumnSummary,
    EstimatorInfo,
    FrameInfo,
    KerasIteratorInfo,
    Kind,
    ModuleInfo,
    ObjectKind,
    ObjectSummary,
    ParamInfo,
    ProbeQuery,
    Snapshot,
    TorchDatasetInfo,
    ValueKind,
    ValueStats,
    Versions,
)

__all__ = [
    "AttributeFact",
    "ColumnSummary",
    "EstimatorInfo",
    "FrameInfo",
    "KerasIteratorInfo",
    "Kind",
    "ModuleInfo",
    "ObjectKind",
    "ObjectSummary",
    "ParamInfo",
    "ProbeQuery",
    "Snapshot",
    "TorchDatasetInfo",
    "ValueKind",
    "ValueStats",
    "Versions",
    "format_shape",
    "render_object",
    "render_snapshot",
]
