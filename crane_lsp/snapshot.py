"""What the kernel agent returns, validated on arrival: the client side of ``kernel/agent/wire.py``.

The agent runs inside the user's kernel and answers with plain JSON shaped as ``wire.SnapshotWire``;
these pydantic models are the boundary where that JSON becomes typed data. They carry exactly the
wire's keys (``tests/test_wire.py`` holds each model to its ``TypedDict``) and forbid any other, so
a misspelt key fails validation instead of vanishing. Every field a summariser could not afford or
could not read is ``None`` (rendered as ``unknown``), never guessed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.kernel.agent import wire

# Kind, ObjectKind and ValueKind are re-exported: client code reads the wire's names from here too
from crane_lsp.kernel.agent.wire import Kind as Kind
from crane_lsp.kernel.agent.wire import ObjectKind as ObjectKind
from crane_lsp.kernel.agent.wire import ParamKind
from crane_lsp.kernel.agent.wire import ValueKind as ValueKind


class _Model(BaseModel):
    # The agent is installed by this very client (``probe_install.PROBE_VERSION``), so an unknown key
    # is a misspelling on one side of the wire, never a newer agent: it fails, it is not dropped.
    model_config = ConfigDict(extra="forbid", frozen=False)


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
    kind: ParamKind
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
    # a plain function defined in a notebook cell (``analysis.userfuncs`` follows calls into it):
    source: str | None = None  # its text, from linecache only, at most 200 lines / 20 kB
    source_line: int | None = None  # the 1-based line of its ``def`` in that cell
    source_note: str | None = None  # why ``source`` is left out (a closure, too long, not in linecache)
    free_globals: list[str] | None = None  # names its code reads; the probe summarises those it holds
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
    # exists False read past a hook the probe did not run (a trusted module's PEP 562 ``__getattr__``
    # that does not mention the name): "module.__getattr__"; the check gives a Warning, never certain
    hook: str | None = None


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
    """What the target cell needs to know about the kernel; built from the scan's ``CellFacts``."""

    names: list[str] = Field(default_factory=list)  # variables to summarise
    chains: list[str] = Field(default_factory=list)  # attribute chains to test and summarise
    subscripts: list[str] = Field(default_factory=list)  # e.g. "df['price']" with literal keys only
    paths: list[str] = Field(default_factory=list)
    modules: list[str] = Field(default_factory=list)
    # row labels the cell looks up on a frame/series (``.loc``/``.at`` reads, ``drop`` of rows), by the
    # object's expression ("df", "data.train"); answered in ``ObjectSummary.index_has``
    index_labels: dict[str, list[str | int | float]] = Field(default_factory=dict)
    # summaries the client holds for this very kernel state (``kernel/snapshot_reuse.py``): a chain's base
    # or a function's global among them is not summarised again
    known: list[str] = Field(default_factory=list)
    max_columns: int = wire.MAX_COLUMNS
    max_list_items: int = wire.MAX_LIST_ITEMS
    sample_rows: int = wire.SAMPLE_ROWS
    object_budget_s: float = wire.OBJECT_BUDGET_S
    request_budget_s: float = wire.REQUEST_BUDGET_S
    privacy: bool = False  # omit example values and string contents
    torch_samples: int = wire.TORCH_SAMPLES
