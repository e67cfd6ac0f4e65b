"""The wire contract between the kernel agent and the client: kinds, keys, default budgets. STDLIB ONLY.

Defined once, here, and read from both sides: the agent (joined into the kernel's private module,
so it may use only the standard library, and no ``from __future__``) fills these ``TypedDict``
shapes, which mypy checks key by key; the client's pydantic models (``crane_lsp.snapshot``) carry
exactly these keys, with ``extra="forbid"``, and tests validate real probe output against them, so
a misspelt key fails instead of vanishing. Client code compares kinds against ``Kind.*`` (or the
client's ``crane_lsp.analysis.kinds.Kind``, which extends it with the walk's own kinds) rather than
bare strings, so a renamed kind is a name error, not a silent mismatch; ``tests/test_kinds.py`` fails
on a bare string compared to a kind in ``checks/`` or ``analysis/``. Adding a kind: the recipe in
``summaries.py``.
"""

from typing import Final, Literal, TypedDict

# ------------------------------------------------------------------------------------------------
# Object kinds
# ------------------------------------------------------------------------------------------------

#: The kinds of object the probe tells apart. ``error``: summarising the object raised or ran out of
#: time; ``other``: anything without a dedicated summariser (type + safe repr only).
ObjectKind = Literal[
    "ndarray",
    "tensor",
    "tf_tensor",
    "series",
    "dataframe",
    "index",
    "keras_iterator",
    "tf_dataset",
    "torch_dataset",
    "torch_iterable_dataset",
    "dataloader",
    "torch_module",
    "keras_model",
    "estimator",
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
    "generator",
    "other",
    "error",
]


class Kind:
    """``ObjectKind`` values by name (``summary.kind == Kind.DATAFRAME``); ``tests/test_wire.py`` keeps
    this list and ``ObjectKind`` the same."""

    NDARRAY: Final = "ndarray"
    TENSOR: Final = "tensor"  # torch.Tensor
    TF_TENSOR: Final = "tf_tensor"  # tf.Tensor / tf.Variable
    SERIES: Final = "series"
    DATAFRAME: Final = "dataframe"
    INDEX: Final = "index"
    KERAS_ITERATOR: Final = "keras_iterator"  # DirectoryIterator / DataFrameIterator / NumpyArrayIterator
    TF_DATASET: Final = "tf_dataset"
    TORCH_DATASET: Final = "torch_dataset"
    TORCH_ITERABLE_DATASET: Final = "torch_iterable_dataset"
    DATALOADER: Final = "dataloader"
    TORCH_MODULE: Final = "torch_module"  # nn.Module
    KERAS_MODEL: Final = "keras_model"
    ESTIMATOR: Final = "estimator"  # scikit-learn estimator (incl. pipelines)
    # frames read from their schema only: never computed, collected or counted
    POLARS_DATAFRAME: Final = "polars_dataframe"
    POLARS_LAZYFRAME: Final = "polars_lazyframe"
    DASK_DATAFRAME: Final = "dask_dataframe"
    DASK_SERIES: Final = "dask_series"
    SPARK_DATAFRAME: Final = "spark_dataframe"
    PANDAS_ON_SPARK: Final = "pandas_on_spark"
    DICT: Final = "dict"
    LIST: Final = "list"
    TUPLE: Final = "tuple"
    SET: Final = "set"
    STR: Final = "str"
    BYTES: Final = "bytes"
    INT: Final = "int"
    FLOAT: Final = "float"
    BOOL: Final = "bool"
    COMPLEX: Final = "complex"
    NONE: Final = "none"
    MODULE: Final = "module"
    FUNCTION: Final = "function"
    CLASS: Final = "class"
    GENERATOR: Final = "generator"  # generators and other iterators: never advanced
    OTHER: Final = "other"
    ERROR: Final = "error"


#: Kinds that hold a pandas frame or series (index lookups, column stats).
PANDAS_KINDS: Final = frozenset((Kind.DATAFRAME, Kind.SERIES))
#: Frames of other libraries, read from their schema only (``ObjectWire["frame"]`` says which).
SCHEMA_FRAME_KINDS: Final[frozenset[ObjectKind]] = frozenset(
    (
        Kind.POLARS_DATAFRAME,
        Kind.POLARS_LAZYFRAME,
        Kind.DASK_DATAFRAME,
        Kind.DASK_SERIES,
        Kind.SPARK_DATAFRAME,
        Kind.PANDAS_ON_SPARK,
    )
)

#: How the values of a 1-D array or column behave.
ValueKind = Literal["binary", "categorical", "continuous", "text", "datetime", "empty", "mixed"]


class Values:
    """``ValueKind`` values by name."""

    BINARY: Final = "binary"
    CATEGORICAL: Final = "categorical"
    CONTINUOUS: Final = "continuous"
    TEXT: Final = "text"
    DATETIME: Final = "datetime"
    EMPTY: Final = "empty"
    MIXED: Final = "mixed"


ParamKind = Literal[
    "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD"
]

# ------------------------------------------------------------------------------------------------
# Default budgets (the client's Settings and ProbeQuery, and the agent when a key is absent)
# ------------------------------------------------------------------------------------------------

MAX_COLUMNS: Final = 20  # columns with statistics (queried columns come on top)
MAX_LIST_ITEMS: Final = 50  # items read from a container
SAMPLE_ROWS: Final = 100_000  # rows behind distinct counts and examples
OBJECT_BUDGET_S: Final = 0.5  # per object summary
REQUEST_BUDGET_S: Final = 2.0  # per snapshot
TORCH_SAMPLES: Final = 10  # items read from a torch Dataset
PREPARE_WINDOW_S: Final = 5.0  # how long a prepared dry-run child may serve a dry run (from its fork)


class Budgets(TypedDict):
    max_columns: int
    max_list_items: int
    sample_rows: int
    object_budget_s: float
    request_budget_s: float
    torch_samples: int


DEFAULT_BUDGETS: Final[Budgets] = {
    "max_columns": MAX_COLUMNS,
    "max_list_items": MAX_LIST_ITEMS,
    "sample_rows": SAMPLE_ROWS,
    "object_budget_s": OBJECT_BUDGET_S,
    "request_budget_s": REQUEST_BUDGET_S,
    "torch_samples": TORCH_SAMPLES,
}

# ------------------------------------------------------------------------------------------------
# The query (client -> agent) and the snapshot (agent -> client)
# ------------------------------------------------------------------------------------------------


class QueryWire(Budgets, total=False):
    names: list[str]
    chains: list[str]
    subscripts: list[str]
    paths: list[str]
    modules: list[str]
    index_labels: dict[str, list[str | int | float]]
    known: list[str]  # what the client holds for this state already: never summarised again here
    privacy: bool


class ValueStatsWire(TypedDict, total=False):
    value_kind: ValueKind
    distinct: int | None
    min: float | str | None
    max: float | str | None
    nan_count: int
    has_nan: bool
    examples: list[str] | None
    non_numeric_examples: list[str]
    sampled: bool
    nan_sampled: bool


class ColumnWire(TypedDict, total=False):
    name: str
    label_repr: str
    dtype: str
    stats: ValueStatsWire


class KerasIteratorWire(TypedDict, total=False):
    samples: int
    num_classes: int
    class_indices: dict[str, int]
    batch_size: int
    image_shape: list[int | None]
    target_size: list[int | None]
    class_mode: str
    color_mode: str


class TorchDatasetWire(TypedDict, total=False):
    length: int | None
    samples: list[str]
    sample_shapes: list[list[list[int] | None]]
    collated: str
    batch_size: int
    dataset_type: str
    drop_last: bool


class EstimatorWire(TypedDict, total=False):
    fitted: bool | None
    n_features_in: int
    feature_names_in: list[str]
    classes: list[str] | None
    n_outputs: int
    params: dict[str, str]
    steps: list[str]
    final_step: str


class ModuleWire(TypedDict, total=False):
    in_features: int | None
    out_features: int | None
    input_shape: list[int | None]
    output_shape: list[int | None]
    last_units: int | None
    last_activation: str
    loss: str
    device: str
    layers: list[str]
    history_keys: list[str]


class FrameWire(TypedDict, total=False):
    library: str
    lazy: bool
    npartitions: int
    known_divisions: bool
    divisions: list[str]
    divisions_truncated: bool
    divisions_note: str


class ParamWire(TypedDict):
    name: str
    kind: ParamKind
    has_default: bool


class ObjectWire(TypedDict, total=False):
    kind: ObjectKind
    type: str
    repr: str
    error: str
    shape: list[int | None] | None
    dtype: str
    device: str | None
    requires_grad: bool
    stats: ValueStatsWire
    columns: list[ColumnWire]
    n_columns: int
    columns_truncated: bool
    index_names: list[str | None]
    index_dtype: str
    index_range: list[int]
    index_has: dict[str, bool | None]
    length: int | None
    keys: list[str]
    element_types: list[str]
    values: list[str | int | float]
    value: str
    signature: str
    params: list[ParamWire]
    callable: bool
    module: str | None
    source: str
    source_line: int
    source_note: str
    free_globals: list[str]
    iterator: KerasIteratorWire
    dataset: TorchDatasetWire
    element_spec: str
    cardinality: int
    estimator: EstimatorWire
    nn: ModuleWire
    frame: FrameWire
    sampled: bool


class AttributeFactWire(TypedDict, total=False):
    exists: bool | None
    owner_type: str
    owner_kind: ObjectKind | None
    dynamic: bool
    hook: str


class VersionsWire(TypedDict):
    python: str
    packages: dict[str, str]


class SnapshotWire(TypedDict, total=False):
    ok: bool
    generation: int | None
    taken_while_busy: bool  # set by the client (probed on a subshell), never by the agent
    elapsed_ms: float
    deadline_hit: bool
    cwd: str | None
    variables: dict[str, ObjectWire]
    attributes: dict[str, AttributeFactWire]
    paths: dict[str, bool]
    undefined: list[str]
    modules: dict[str, bool]
    imported: list[str]
    versions: VersionsWire
    errors: list[str]


#: Error text of a field or summary cut short by its budget.
DEADLINE: Final = "deadline"


# ------------------------------------------------------------------------------------------------
# The facts at a dry run's failing line (agent/dryrun/failfacts.py -> the verdict's ``facts``)
# ------------------------------------------------------------------------------------------------


class FailValueWire(TypedDict, total=False):
    name: str  # what the line reads: ``w``, ``self.w``, ``labels[i]``
    scope: Literal["line", "frame"]  # the cell's failing line, or the innermost user function's
    summary: ObjectWire
    assigned: int  # 1-based line of the same source that last bound it before the failing statement
    again: int  # a line of the enclosing loop, at or after the failing one, that rebinds it
    loop: int  # it is the variable of the loop on this line


class FailFrameWire(TypedDict, total=False):
    function: str
    line: int  # 1-based line in the cell that defines the function
    first_line: int  # the function's first line there
    execution_count: int  # IPython's In[n] of that cell
    text: str  # the failing line, stripped


class FailLoopWire(TypedDict, total=False):
    scope: Literal["line", "frame"]
    line: int  # the ``for`` statement's line
    target: str
    iterable: str
    iteration: int  # 1-based, where the iterable tells it cheaply
    total: int
    positions: list[int]  # the loop value sits at several places of the iterable


class _FailKeywordRequired(TypedDict):
    call: str  # the callee as the failing line names it: ``gen.flow_from_directory``
    keyword: str  # the keyword its parameters lack
    near: str  # the closest of its named parameters (or of ``via``'s setter properties)


class FailKeywordWire(_FailKeywordRequired, total=False):
    via: str  # the class that rejected a keyword the callee handed on (``Line2D``)


class FailFactsWire(TypedDict, total=False):
    line: int  # the cell's failing line (1-based)
    values: list[FailValueWire]
    frame: FailFrameWire
    loops: list[FailLoopWire]
    keywords: list[FailKeywordWire]  # failkeywords.py: keywords on the line the callee does not take
    elapsed_ms: float
    deadline_hit: bool
    truncated: bool
    privacy: bool  # collected in privacy mode: the client shows no value either
    error: str
