"""The compact rendering of a ``Snapshot`` for prompts and ``crane-lsp inspect``.

Deterministic and token-lean: stable order, one line per object where possible, ``unknown`` for
what the agent could not read, nothing shown in privacy mode that the user's data would fill.
"""

from __future__ import annotations

from crane_lsp.kernel.agent.wire import MAX_COLUMNS, Kind
from crane_lsp.snapshot import ObjectSummary, Snapshot, ValueStats

_UNKNOWN = "unknown"


def format_shape(shape: list[int | None] | None) -> str:
    """``(3, 224, 224)``; an unknown dimension reads ``unknown``."""
    if shape is None:
        return _UNKNOWN
    return (
        "("
        + ", ".join(_UNKNOWN if d is None else str(d) for d in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


def _known(*pairs: tuple[str, object]) -> list[str]:
    """``"name value"`` for each pair whose value is known (not None)."""
    return [f"{k} {v}" for k, v in pairs if v is not None]


def _fmt_stats(stats: ValueStats | None, privacy: bool) -> str:
    if stats is None:
        return ""
    parts: list[str] = []
    if stats.value_kind:
        parts.append(stats.value_kind)
    if stats.distinct is not None:
        parts.append(f"{stats.distinct} distinct" + ("~" if stats.sampled else ""))
    if stats.min is not None and stats.max is not None and not (privacy and isinstance(stats.min, str)):
        parts.append(f"range [{stats.min}, {stats.max}]")
    if stats.has_nan is not None:
        count = stats.nan_count if stats.nan_count is not None else "yes"
        nan = f"NaN: {count}" if stats.has_nan else "no NaN"
        parts.append(nan + (" in sample" if stats.nan_sampled else ""))
    if stats.non_numeric_examples and not privacy:
        parts.append("non-numeric e.g. " + ", ".join(stats.non_numeric_examples[:3]))
    if stats.examples and not privacy:
        parts.append("e.g. " + ", ".join(stats.examples[:3]))
    if stats.sampled:
        parts.append("sampled")
    return "; ".join(parts)


def render_object(
    name: str, obj: ObjectSummary, *, privacy: bool = False, max_columns: int = MAX_COLUMNS
) -> str:
    """One variable as a few compact lines: ``name: kind type ...``."""
    head = f"{name}: {obj.type}"
    details: list[str] = []
    if obj.error:
        details.append(f"summary incomplete ({obj.error})")
    if obj.shape is not None:
        details.append(f"shape {format_shape(obj.shape)}")
    if obj.dtype:
        details.append(f"dtype {obj.dtype}")
    if obj.device and obj.device != "cpu":
        details.append(f"device {obj.device}")
    if obj.requires_grad:
        details.append("requires_grad")
    if obj.length is not None and obj.shape is None:
        details.append(f"len {obj.length}")
    if obj.keys is not None:
        details.append("keys [" + ", ".join(obj.keys) + "]")
    if obj.element_types:
        details.append("elements " + "/".join(obj.element_types))
    if obj.value is not None and not (privacy and obj.kind in (Kind.STR, Kind.BYTES)):
        details.append(f"= {obj.value}")
    if obj.signature:
        details.append(f"signature {obj.signature}")
    if obj.stats is not None:
        s = _fmt_stats(obj.stats, privacy)
        if s:
            details.append(s)
    if obj.iterator is not None:
        it = obj.iterator
        details.append(
            f"samples {it.samples}, num_classes {it.num_classes}, batch_size {it.batch_size}, "
            f"image_shape {format_shape(it.image_shape)}, class_mode {it.class_mode}"
            + (f", class_indices {it.class_indices}" if it.class_indices and not privacy else "")
        )
    if obj.dataset is not None:
        ds = obj.dataset
        bits = _known(
            ("len", ds.length),
            ("batch_size", ds.batch_size),
            ("dataset", ds.dataset_type),
            ("drop_last", ds.drop_last),
        )
        if ds.samples:
            bits.append("samples " + "; ".join(ds.samples[:3]))
        if ds.collated:
            bits.append(f"batch {ds.collated}")
        details.append(", ".join(bits))
    if obj.element_spec:
        details.append(f"element_spec {obj.element_spec}, cardinality {obj.cardinality}")
    if obj.estimator is not None:
        e = obj.estimator
        bits = [f"fitted {e.fitted}"]
        if e.n_features_in is not None:
            bits.append(f"n_features_in_ {e.n_features_in}")
        if e.feature_names_in is not None:
            bits.append(
                "feature_names_in_ ["
                + ", ".join(e.feature_names_in[:max_columns])
                + ("…" if len(e.feature_names_in) > max_columns else "")
                + "]"
            )
        if e.classes is not None:
            bits.append("classes_ [" + ", ".join(e.classes[:20]) + "]")
        if e.steps:
            bits.append("steps [" + ", ".join(e.steps) + "]")
        details.append(", ".join(bits))
    if obj.nn is not None:
        m = obj.nn
        bits = _known(
            ("in_features", m.in_features),
            ("out_features", m.out_features),
            ("input_shape", m.input_shape and format_shape(m.input_shape)),
            ("output_shape", m.output_shape and format_shape(m.output_shape)),
            ("last_units", m.last_units),
            ("last_activation", m.last_activation),
            ("loss", m.loss),
            ("history_keys", m.history_keys),
        )
        details.append(", ".join(bits))
    if obj.frame is not None:
        details.append(_fmt_frame(obj))
    if obj.index_has and not privacy:
        absent = [label for label, has in obj.index_has.items() if has is False]
        if absent:
            details.append("index lacks " + ", ".join(absent[:10]))
    if obj.repr and obj.kind in (Kind.OTHER, Kind.MODULE, Kind.CLASS) and not privacy:
        details.append(f"repr {obj.repr}")
    lines = [head + (" | " + " | ".join(d for d in details if d) if details else "")]
    if obj.columns is not None and obj.frame is not None and not any(c.stats for c in obj.columns):
        lines.append(_fmt_schema(obj))  # a schema alone: one line, as the library prints it
    elif obj.columns is not None:
        total = obj.n_columns if obj.n_columns is not None else len(obj.columns)
        lines.append(f"  columns ({total}{', truncated' if obj.columns_truncated else ''}):")
        for col in obj.columns:
            stats = _fmt_stats(col.stats, privacy) if col.stats else ""
            lines.append(f"    {col.name!r}: {col.dtype}" + (f" | {stats}" if stats else ""))
    return "\n".join(lines)


def _fmt_frame(obj: ObjectSummary) -> str:
    f = obj.frame
    assert f is not None
    bits = [f.library + (" lazy (nothing runs until collect/compute/an action)" if f.lazy else "")]
    if obj.columns is None:
        bits.append("schema unknown")
    if f.npartitions is not None:
        bits.append(f"npartitions {f.npartitions}")
    if f.known_divisions is not None:
        known = "known" if f.known_divisions else "unknown"
        shown = f" [{', '.join(f.divisions)}{' …' if f.divisions_truncated else ''}]" if f.divisions else ""
        bits.append(f"divisions {known}{shown}")
    return ", ".join(bits)


def _fmt_schema(obj: ObjectSummary) -> str:
    cols = obj.columns or []
    total = obj.n_columns if obj.n_columns is not None else len(cols)
    body = ", ".join(f"{c.name}: {c.dtype}" for c in cols)
    return f"  schema ({total}{', truncated' if obj.columns_truncated else ''}): {body}"


def render_snapshot(snapshot: Snapshot, *, privacy: bool = False, max_columns: int = MAX_COLUMNS) -> str:
    """The runtime information block of a prompt: deterministic, sorted by name."""
    out: list[str] = []
    for name in sorted(snapshot.variables):
        out.append(render_object(name, snapshot.variables[name], privacy=privacy, max_columns=max_columns))
    if snapshot.undefined:
        out.append("not defined in the kernel: " + ", ".join(sorted(snapshot.undefined)))
    missing_attrs = sorted(chain for chain, fact in snapshot.attributes.items() if fact.exists is False)
    if missing_attrs:
        out.append("attributes that do not exist: " + ", ".join(missing_attrs))
    missing_paths = sorted(p for p, ok in snapshot.paths.items() if not ok)
    if missing_paths:
        out.append("files that do not exist: " + ", ".join(missing_paths))
    missing_modules = sorted(m for m, ok in snapshot.modules.items() if not ok)
    if missing_modules:
        out.append("modules not installed: " + ", ".join(missing_modules))
    if snapshot.taken_while_busy:
        out.append("(taken while a cell was running)")
    return "\n".join(out)
