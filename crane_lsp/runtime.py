"""What the kernel probe returns, validated on arrival, and its compact rendering for prompts.

The probe (``kernel/probe.py``) runs inside the user's kernel and answers with plain JSON; these
pydantic models are the boundary where that JSON becomes typed data. Every field a summariser could
not afford or could not read is ``None`` (rendered as ``unknown``), never guessed. The rendering
half of this module (``render_snapshot``) produces the deterministic, token-lean text that an LLM
prompt carries.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The kinds of object the probe tells apart. ``error`` means summarising the object raised or ran
#: out of time; ``other`` is anything without a dedicated summariser (type + safe repr only).
ObjectKind = Literal[
    "ndarray",
    "tensor",  # torch.Tensor
    "tf_tensor",  # tf.Tensor / tf.Variable
    "series",
    "dataframe",
    "index",
    "keras_iterator",  # DirectoryIterator / DataFrameIterator / NumpyArrayIterator
    "tf_dataset",
    "torch_dataset",
    "torch_iterable_dataset",
    "dataloader",
    "torch_module",  # nn.Module
    "keras_model",
    "estimator",  # scikit-learn estimator (incl. pipelines; see ``estimator.steps``)
    # frames read from their schema only (see ``frame``): never computed, collected or counted
    "polars_dataframe",
    "polars_lazyframe",
    "dask_dataframe",
    "dask_series",
    "spark_dataframe",
    "pandas_on_spark",
    "dict",
    "list",
    "tuple",
    "set",
    "str",
    "bytes",
    "int",
    "float",
    "bool",
    "complex",
    "none",
    "module",
    "function",
    "class",
    "generator",  # generators and other iterators: never advanced
    "other",
    "error",
]

#: How the values of a 1-D array or column behave, as the paper's summaries describe them.
ValueKind = Literal["binary", "categorical", "continuous", "text", "datetime", "empty", "mixed"]


class _Model(BaseModel):
    # Extra keys from a newer probe are tolerated (and dropped), never a reason to fail a snapshot.
    model_config = ConfigDict(extra="ignore", frozen=False)


class ValueStats(_Model):
    """Statistics of one 1-D array, Series or DataFrame column."""

    value_kind: ValueKind | None = None
    distinct: int | None = None  # on the sample when ``sampled``
    min: float | str | None = None
    max: float | str | None = None
    nan_count: int | None = None  # full length unless ``nan_sampled``
    has_nan: bool | None = None
    examples: list[str] | None = None  # repr of a few values; omitted in privacy mode
    non_numeric_examples: list[str] | None = None  # object columns: values float() rejects
    sampled: bool = False  # True: distinct/examples were computed on a sample of rows
    # True: nan_count/has_nan were counted on the sample only (large object columns), so has_nan=False
    # is not proof of absence; numeric, datetime and categorical columns are always checked full-length
    nan_sampled: bool = False


class ColumnSummary(_Model):
    name: str  # str() of the label; ``label_repr`` keeps the exact label when it is not a str
    label_repr: str | None = None
    dtype: str
    stats: ValueStats | None = None  # only for the first ``max_columns`` columns and queried ones


class KerasIteratorInfo(_Model):
    samples: int | None = None
    num_classes: int | None = None
    class_indices: dict[str, int] | None = None
    batch_size: int | None = None
    image_shape: list[int | None] | None = None
    target_size: list[int] | None = None
    class_mode: str | None = None
    color_mode: str | None = None


class TorchDatasetInfo(_Model):
    length: int | None = None
    samples: list[str] | None = (
        None  # each probed sample, rendered compactly ("(Tensor[3,32,32] float32, int)")
    )
    sample_shapes: list[list[list[int] | None]] | None = None  # per sample, per element: shape or None
    collated: str | None = None  # shape/dtype of a collated batch of the probed samples
    batch_size: int | None = None  # DataLoader
    dataset_type: str | None = None  # DataLoader: type of its dataset
    drop_last: bool | None = None


class EstimatorInfo(_Model):
    fitted: bool | None = None
    n_features_in: int | None = None
    feature_names_in: list[str] | None = None
    classes: list[str] | None = None  # repr of each class label
    n_outputs: int | None = None
    params: dict[str, str] | None = None  # get_params(deep=False), values as short reprs
    steps: list[str] | None = None  # Pipeline: "name: ClassName"
    final_step: str | None = None


class ModuleInfo(_Model):
    """A torch ``nn.Module`` or Keras model: the layers that decide what input it accepts."""

    in_features: int | None = None  # first Linear layer / nn.Linear itself
    out_features: int | None = None  # last Linear layer / nn.Linear itself
    input_shape: list[int | None] | None = None  # Keras
    output_shape: list[int | None] | None = None  # Keras
    last_units: int | None = None  # Keras: units of the final Dense layer
    last_activation: str | None = None
    loss: str | None = None  # Keras: compiled loss
    device: str | None = None
    layers: list[str] | None = None  # short descriptions, capped
    history_keys: list[str] | None = None  # keras History.history keys


class FrameInfo(_Model):
    """A Polars, Dask or Spark frame: what its schema says without computing (rows are unknown when lazy)."""

    library: str  # "polars", "dask", "pyspark", "pyspark.pandas"
    lazy: bool = True  # a plan: nothing raises until it runs (Polars ``collect``, Dask ``compute``)
    npartitions: int | None = None  # Dask, where known without running a task
    known_divisions: bool | None = None
    divisions: list[str] | None = None  # str() of each division (first and last only when truncated)
    divisions_truncated: bool = False
    divisions_note: str | None = None


class ParamInfo(_Model):
    name: str
    kind: Literal["POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD"]
    has_default: bool


class ObjectSummary(_Model):
    """One variable, attribute chain or literal subscript as the kernel holds it."""

    kind: ObjectKind
    type: str  # qualified type name, e.g. "pandas.core.frame.DataFrame"
    repr: str | None = None  # safe, truncated; None in privacy mode for values
    error: str | None = None  # why the summary is incomplete ("__len__ raised ValueError", "deadline")
    # arrays, tensors, frames, series
    shape: list[int | None] | None = None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    stats: ValueStats | None = None  # 1-D values
    columns: list[ColumnSummary] | None = None  # DataFrame (capped; see ``n_columns``)
    n_columns: int | None = None
    columns_truncated: bool = False
    index_names: list[str | None] | None = None  # index level names (groupby/sort_values/merge accept them)
    index_dtype: str | None = None
    index_range: list[Any] | None = None  # [first, last] of a DataFrame/Series index when cheap
    # queried row labels (``ProbeQuery.index_labels``), keyed by repr(label): ``label in index`` as pandas
    # answers it, or None where that could differ from what ``.loc``/``drop`` do (non-unique, MultiIndex,
    # datetime-like or extension-dtype index)
    index_has: dict[str, bool | None] | None = None
    # containers and scalars
    length: int | None = None
    keys: list[str] | None = None  # dict keys as reprs (capped)
    element_types: list[str] | None = None  # list/tuple/set: distinct element type names (capped)
    # list/tuple of at most ``max_list_items`` plain str/int/finite float items: the items, exactly (what a
    # ``for`` loop over it binds); omitted in privacy mode, so loops over kernel lists are not walked there
    values: list[str | int | float] | None = None
    value: str | None = None  # str/int/float/bool value (str truncated; None in privacy mode)
    # callables and classes
    signature: str | None = None
    params: list[ParamInfo] | None = None
    callable: bool | None = None
    module: str | None = None  # defining module of a function/class, or the module's own name
    # ML objects
    iterator: KerasIteratorInfo | None = None
    dataset: TorchDatasetInfo | None = None
    element_spec: str | None = None  # tf.data
    cardinality: int | None = None  # tf.data: -1 infinite, -2 unknown
    estimator: EstimatorInfo | None = None
    nn: ModuleInfo | None = None
    frame: FrameInfo | None = None  # Polars / Dask / Spark frames
    sampled: bool = False


class AttributeFact(_Model):
    """Whether ``chain`` (e.g. ``"np.float"``, ``"df.append"``) resolves, read without running properties."""

    exists: bool | None  # None: could not tell (an unknown object or a dynamic __getattr__)
    owner_type: str | None = None  # type of the object the last attribute was looked up on
    owner_kind: ObjectKind | None = None
    dynamic: bool = False  # the owner defines __getattr__, so a miss is not proof


class Versions(_Model):
    python: str
    packages: dict[str, str] = Field(default_factory=dict)  # only libraries already imported


class Snapshot(_Model):
    """Everything the probe learned about the kernel for one target cell."""

    ok: bool = True
    generation: int | None = None  # the kernel's execution count when probed: the state's version
    taken_while_busy: bool = False  # probed on a subshell while a cell was running
    elapsed_ms: float | None = None
    deadline_hit: bool = False
    cwd: str | None = None
    variables: dict[str, ObjectSummary] = Field(default_factory=dict)  # names, chains, subscripts
    attributes: dict[str, AttributeFact] = Field(default_factory=dict)
    paths: dict[str, bool] = Field(default_factory=dict)  # literal path -> exists (relative to cwd)
    undefined: list[str] = Field(default_factory=list)  # queried names absent from user_ns and builtins
    modules: dict[str, bool] = Field(default_factory=dict)  # module -> importable in the kernel
    imported: list[str] = Field(default_factory=list)  # top-level packages already in sys.modules
    versions: Versions | None = None
    errors: list[str] = Field(default_factory=list)  # probe-level problems, for logs and hovers

    def summary(self, name: str) -> ObjectSummary | None:
        return self.variables.get(name)


class ProbeQuery(_Model):
    """What the target cell needs to know about the kernel; built from ``cellcode`` facts."""

    names: list[str] = Field(default_factory=list)  # variables to summarise
    chains: list[str] = Field(default_factory=list)  # attribute chains to test and summarise
    subscripts: list[str] = Field(default_factory=list)  # e.g. "df['price']" with literal keys only
    paths: list[str] = Field(default_factory=list)
    modules: list[str] = Field(default_factory=list)
    # row labels the cell looks up on a frame/series (``.loc``/``.at`` reads, ``drop`` of rows), by the
    # object's expression ("df", "data.train"); answered in ``ObjectSummary.index_has``
    index_labels: dict[str, list[str | int | float]] = Field(default_factory=dict)
    max_columns: int = 20
    max_list_items: int = 50
    sample_rows: int = 100_000
    object_budget_s: float = 0.5
    request_budget_s: float = 2.0
    privacy: bool = False  # omit example values and string contents
    torch_samples: int = 10


# --------------------------------------------------------------------------------------------
# Rendering for prompts: stable order, one line per object where possible, no noise.
# --------------------------------------------------------------------------------------------

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


def render_object(name: str, obj: ObjectSummary, *, privacy: bool = False, max_columns: int = 20) -> str:
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
    if obj.value is not None and not (privacy and obj.kind in ("str", "bytes")):
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
        bits = [
            f"{k} {v}"
            for k, v in (
                ("len", ds.length),
                ("batch_size", ds.batch_size),
                ("dataset", ds.dataset_type),
                ("drop_last", ds.drop_last),
            )
            if v is not None
        ]
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
        bits = [
            f"{k} {v}"
            for k, v in (
                ("in_features", m.in_features),
                ("out_features", m.out_features),
                ("input_shape", m.input_shape and format_shape(m.input_shape)),
                ("output_shape", m.output_shape and format_shape(m.output_shape)),
                ("last_units", m.last_units),
                ("last_activation", m.last_activation),
                ("loss", m.loss),
                ("history_keys", m.history_keys),
            )
            if v is not None
        ]
        details.append(", ".join(bits))
    if obj.frame is not None:
        details.append(_fmt_frame(obj))
    if obj.index_has and not privacy:
        absent = [label for label, has in obj.index_has.items() if has is False]
        if absent:
            details.append("index lacks " + ", ".join(absent[:10]))
    if obj.repr and obj.kind in ("other", "module", "class") and not privacy:
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


def render_snapshot(snapshot: Snapshot, *, privacy: bool = False, max_columns: int = 20) -> str:
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
