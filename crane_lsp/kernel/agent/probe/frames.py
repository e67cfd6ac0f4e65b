"""Kernel-side summaries of frames beyond pandas, read from their schema only. STANDARD LIBRARY ONLY.

Polars ``DataFrame`` (shape, schema, sampled statistics within the pandas budgets) and ``LazyFrame``
(``collect_schema()``, never ``collect``), Dask ``DataFrame``/``Series`` (the ``_meta`` frame, and
``npartitions``/divisions only where dask already knows them or can read them without a task),
PySpark ``DataFrame`` (``schema``: no action, no job) and pandas-on-Spark (its internal frame's
labels and dtypes). Classes are found in modules already in ``sys.modules``; only objects whose
class is the library's own are read, so no user override runs.

Anything that may wait on another process (a JVM behind py4j, a lazy scan's file or object store)
runs in a short-lived daemon thread joined for what is left of the object's budget: a stopped Spark
session, a dead gateway or a hung scan leaves the summary ``unknown`` (``error``) and the probe
goes on. Joined into the agent's private module after ``safe.py`` and ``stats.py``, whose helpers
it uses by their names.
"""

import sys as _sys
import threading as _threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
        _Deadline,
    )
    from crane_lsp.kernel.agent.probe.stats import (
        _empty_stats,
        _examples,
        _nan_and_range,
        _value_kind_numeric,
    )
    from crane_lsp.kernel.agent.safe import (
        _MAX_COLUMN_NAMES,
        _cls_module,
        _cls_name,
        _instance_dict,
        _known_class,
        _mro,
        _trunc,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        ColumnWire,
        FrameWire,
        Kind,
        ObjectWire,
        QueryWire,
        ValueStatsWire,
    )


#: kind -> ((module, attribute), ...): the first class found in an imported module wins.
_FRM_CLASSES = {
    Kind.POLARS_DATAFRAME: (("polars", "DataFrame"), ("polars.dataframe.frame", "DataFrame")),
    Kind.POLARS_LAZYFRAME: (("polars", "LazyFrame"), ("polars.lazyframe.frame", "LazyFrame")),
    Kind.DASK_DATAFRAME: (
        ("dask.dataframe", "DataFrame"),
        ("dask.dataframe.dask_expr._collection", "DataFrame"),
    ),
    Kind.DASK_SERIES: (("dask.dataframe", "Series"), ("dask.dataframe.dask_expr._collection", "Series")),
    Kind.PANDAS_ON_SPARK: (("pyspark.pandas", "DataFrame"), ("pyspark.pandas.frame", "DataFrame")),
    Kind.SPARK_DATAFRAME: (
        ("pyspark.sql.dataframe", "DataFrame"),
        ("pyspark.sql", "DataFrame"),
        ("pyspark.sql.connect.dataframe", "DataFrame"),
    ),
}


_FRM_LIBS = ("polars", "dask", "pyspark")


_FRM_INT = frozenset(
    ("Int8", "Int16", "Int32", "Int64", "Int128", "UInt8", "UInt16", "UInt32", "UInt64", "UInt128")
)


_FRM_FLOAT = frozenset(("Float16", "Float32", "Float64"))


_FRM_TEMPORAL = frozenset(("Date", "Datetime", "Time", "Duration"))


_FRM_DIVISIONS_MAX = 20


#: dask expressions whose divisions are known without a task (data in hand), and the blockwise ones
#: that keep their input's; anything else (set_index, repartition, reads) is left unknown unless cached
_FRM_DASK_LEAVES = frozenset(("FromPandas", "FromPandasDivisions", "FromGraph", "FromArray", "FromDict"))


def _frm_class(kind):
    return _known_class(kind, _FRM_CLASSES)


def _frm_classify(obj):
    """The kind of a frame of a library the user imported, else None; runs no user code."""
    t = type(obj)
    if _cls_module(t).split(".")[0] not in _FRM_LIBS:
        return None  # a user subclass could override anything we would call
    if not any(lib in _sys.modules for lib in _FRM_LIBS):
        return None
    mro = _mro(obj)
    for kind, _fn in _FRM_SUMMARISERS:
        cls = _frm_class(kind)
        if cls is not None and cls in mro:
            return kind
    return None


def _frm_bounded(clock, fn):
    """``fn()`` in a daemon thread joined for the object's budget left: a call that waits on another
    process (py4j, a remote scan) cannot hang the probe. A late answer is dropped."""
    clock.check()
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = _threading.Thread(target=run, name="crane-probe-frame", daemon=True)
    worker.start()
    worker.join(max(clock.left(), 0.001))
    if worker.is_alive():
        clock.hit = True
        raise _Deadline()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _frm_columns(s, pairs, total):
    """``s["columns"]`` from (name, dtype text) pairs, capped like the pandas summary."""
    cols = []
    for name, dtype in pairs[:_MAX_COLUMN_NAMES]:
        c: ColumnWire = {"name": name if type(name) is str else str(name), "dtype": dtype}
        if type(name) is not str:
            c["label_repr"] = repr(name) if type(name) in (int, float, bool) else "<label>"
        cols.append(c)
    s["columns"] = cols
    s["n_columns"] = total
    s["columns_truncated"] = total > len(cols)


def _frm_polars_stats(col, query: QueryWire, clock: _Clock):
    """ValueStats of a polars Series: nulls, range full length (vectorised); distinct, examples sampled."""
    privacy = query.get("privacy")
    limit = query["sample_rows"]
    n = col.len()
    dtype_name = _cls_name(type(col.dtype))
    st: ValueStatsWire = {"sampled": False}
    if n == 0:
        return _empty_stats()
    if dtype_name in ("Object", "List", "Array", "Struct", "Binary", "Null", "Unknown"):
        return None  # Object holds user values (their __repr__ is theirs); nested types: no flat stats
    nulls = int(col.null_count())
    if dtype_name in _FRM_FLOAT:
        nulls += int(col.is_nan().sum())
    numeric = dtype_name in _FRM_INT or dtype_name in _FRM_FLOAT
    clock.check()
    _nan_and_range(st, col, n, nulls, numeric, numeric or dtype_name in _FRM_TEMPORAL)
    clock.check()
    sample = col
    if n > limit:
        sample = col.gather_every(max(1, n // limit)).head(limit)  # a stride: numpy may not be imported
        st["sampled"] = True
    clock.check()
    head = sample.head(50).drop_nulls().to_list()
    if dtype_name in ("Categorical", "Enum"):
        st["distinct"] = int(sample.n_unique())
        st["value_kind"] = "binary" if st["distinct"] == 2 else "categorical"
        st["examples"] = _examples(head, privacy)
    elif numeric or dtype_name == "Boolean":
        distinct = int(sample.drop_nulls().n_unique())
        st["distinct"] = distinct
        st["value_kind"] = _value_kind_numeric(distinct, dtype_name in _FRM_INT, dtype_name == "Boolean")
        st["examples"] = _examples(head, privacy)
    elif dtype_name in _FRM_TEMPORAL:
        st["distinct"] = int(sample.drop_nulls().n_unique())
        st["value_kind"] = "datetime"
        st["examples"] = None if privacy else list(dict.fromkeys(str(v) for v in head))[:3]
    elif dtype_name in ("String", "Utf8"):
        distinct = int(sample.drop_nulls().n_unique())
        st["distinct"] = distinct
        kept = n - nulls if not st["sampled"] else sample.len() - int(sample.null_count())
        if distinct <= 2:
            st["value_kind"] = "binary"
        elif distinct <= 50 or distinct <= 0.05 * max(kept, 1):
            st["value_kind"] = "categorical"
        else:
            st["value_kind"] = "text"
        st["examples"] = _examples(head, privacy)
    return st


def _frm_sum_polars(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    n_rows, n_cols = obj.shape
    s["shape"] = [int(n_rows), int(n_cols)]
    s["length"] = int(n_rows)
    schema = obj.schema
    pairs = [(name, str(dtype)) for name, dtype in list(schema.items())[:_MAX_COLUMN_NAMES]]
    _frm_columns(s, pairs, int(n_cols))
    s["frame"] = {"library": "polars", "lazy": False}
    for i in range(min(query["max_columns"], len(pairs))):
        if clock.request_over() or clock.left() <= 0:
            clock.hit = True
            s["error"] = DEADLINE
            return
        try:
            stats = _frm_polars_stats(obj.to_series(i), query, clock)
        except _Deadline:
            s["error"] = DEADLINE
            return
        if stats is not None:
            s["columns"][i]["stats"] = stats


def _frm_sum_polars_lazy(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    """The resolved schema; a plan that fails to resolve says why (the error ``collect`` would raise)."""
    s["frame"] = {"library": "polars", "lazy": True}
    read = lambda: [(name, str(dtype)) for name, dtype in obj.collect_schema().items()]  # noqa: E731
    _frm_lazy_schema(s, clock, read, detail=True)


def _frm_lazy_schema(s: ObjectWire, clock, read, late=DEADLINE, detail=False):
    """The columns of a lazy frame from ``read()`` (name, dtype text) pairs, bounded; rows unknown."""
    try:
        pairs = _frm_bounded(clock, read)
    except _Deadline:
        s["error"] = late
        return
    except Exception as exc:
        why = ": " + _trunc(str(exc).split("\n")[0], 160) if detail else ""
        s["error"] = "schema: " + _cls_name(type(exc)) + why
        return
    s["shape"] = [None, len(pairs)]
    _frm_columns(s, pairs, len(pairs))


def _frm_dask_cheap(expr, depth=0):
    """Whether ``expr``'s divisions come without a task: cached, data in hand, or blockwise on such."""
    d = _instance_dict(expr)
    if d is None or depth > 60:
        return False
    if "divisions" in d or "_divisions_and_locations" in d:
        return True
    names = {_cls_name(c) for c in _mro(expr)}
    if _cls_name(type(expr)) in _FRM_DASK_LEAVES:
        return True
    if "Blockwise" not in names:
        return False
    operands = d.get("operands")
    if type(operands) is not list:
        return False
    exprs = [op for op in operands if "Expr" in {_cls_name(c) for c in _mro(op)}]
    return bool(exprs) and all(_frm_dask_cheap(op, depth + 1) for op in exprs)


def _frm_sum_dask(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    """Columns and dtypes from ``_meta`` (an empty pandas frame dask keeps); partitions where known."""
    # local emulation on empty data: no graph is run, no scheduler is asked
    meta = _frm_bounded(clock, lambda: obj._meta)
    frame: FrameWire = {"library": "dask", "lazy": True}
    s["frame"] = frame
    if _cls_name(type(meta)) == "DataFrame":
        pairs = list(zip(meta.columns.tolist(), [str(d) for d in meta.dtypes.tolist()], strict=False))
        s["shape"] = [None, len(pairs)]
        _frm_columns(s, pairs, len(pairs))
    else:
        s["shape"] = [None]
        s["dtype"] = str(meta.dtype)
        if meta.name is not None:
            s["repr"] = "name=" + _trunc(str(meta.name), 60)
    expr = _instance_dict(obj).get("_expr") if _instance_dict(obj) is not None else None
    if expr is None or not _frm_dask_cheap(expr):
        frame["divisions_note"] = "not computed (dask would have to run tasks)"
        return
    frame["npartitions"] = int(obj.npartitions)
    known = bool(obj.known_divisions)
    frame["known_divisions"] = known
    if known:
        div = obj.divisions
        shown = div if len(div) <= _FRM_DIVISIONS_MAX else (div[0], div[-1])
        frame["divisions"] = [_trunc(str(v), 40) for v in shown]
        frame["divisions_truncated"] = len(div) > _FRM_DIVISIONS_MAX


def _frm_spark_type(dt):
    try:
        return _trunc(dt.simpleString(), 80)
    except Exception:
        return _cls_name(type(dt))


def _frm_spark_pairs(schema):
    return [(f.name, _frm_spark_type(f.dataType)) for f in schema.fields]


def _frm_sum_spark(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    """``schema`` (a metadata round trip to the JVM or Connect server, no job), bounded."""
    d = _instance_dict(obj) or {}
    # classic DataFrames hold a JVM Dataset (analysed eagerly); Spark Connect ones a plan for a server
    s["frame"] = {"library": "pyspark" if "_jdf" in d else "pyspark.connect", "lazy": True}
    schema = d.get("schema") or d.get("_schema")  # already fetched: no round trip at all
    if schema is None and _frm_spark_stopped(obj):
        s["error"] = "spark session stopped"
        return
    read = lambda: _frm_spark_pairs(schema if schema is not None else obj.schema)  # noqa: E731
    _frm_lazy_schema(s, clock, read, "deadline (Spark did not answer)")


def _frm_spark_stopped(obj):
    """A classic DataFrame whose SparkContext is stopped: its JVM calls would fail or wait."""
    d = _instance_dict(obj) or {}
    if "_jdf" not in d:
        return False  # Spark Connect: the bounded call decides
    sc = d.get("_sc")
    sd = _instance_dict(sc) if sc is not None else None
    return sd is None or sd.get("_jsc") is None


def _frm_sum_pandas_on_spark(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    """Labels and dtypes from the internal frame (python side); the row count would be a job."""
    s["frame"] = {"library": "pyspark.pandas", "lazy": True}

    def read():
        internal = obj._internal
        labels = [
            lab[0] if type(lab) is tuple and len(lab) == 1 else str(lab) for lab in internal.column_labels
        ]
        return list(zip(labels, [str(f.dtype) for f in internal.data_fields], strict=False))

    _frm_lazy_schema(s, clock, read)


_FRM_SUMMARISERS = (
    (Kind.POLARS_DATAFRAME, _frm_sum_polars),
    (Kind.POLARS_LAZYFRAME, _frm_sum_polars_lazy),
    (Kind.DASK_DATAFRAME, _frm_sum_dask),
    (Kind.DASK_SERIES, _frm_sum_dask),
    (Kind.PANDAS_ON_SPARK, _frm_sum_pandas_on_spark),
    (Kind.SPARK_DATAFRAME, _frm_sum_spark),
)
