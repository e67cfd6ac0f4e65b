"""Summaries of arrays, tensors and pandas objects: shape, dtype, index, per-column statistics.

DataFrame columns are worked on subscripted first, then cheap vectorised dtypes, then object-like
columns (each with a slice of what is left), so a budget that runs out leaves out the costly ones.
"""

import math as _math
import sys as _sys
import time as _time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
        _field,
    )
    from crane_lsp.kernel.agent.probe.stats import (
        _array_stats,
        _series_stats,
    )
    from crane_lsp.kernel.agent.safe import (
        _MAX_COLUMN_NAMES,
        _cls_module,
        _cls_name,
        _isa,
        _label_text,
        _lib_attr,
        _mro,
        _safe_repr,
        _shape_list,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        ColumnWire,
        Kind,
        ObjectWire,
        QueryWire,
    )


def _sum_ndarray(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["shape"] = [int(d) for d in obj.shape]
    s["dtype"] = str(obj.dtype)
    s["device"] = "cpu"
    if obj.ndim == 0:
        s["value"] = _safe_repr(obj[()])
        return
    _field(s, clock, "stats", _array_stats, obj, query, clock)


def _sum_tensor(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["shape"] = [int(d) for d in obj.shape]
    s["dtype"] = str(obj.dtype).replace("torch.", "")
    s["device"] = str(obj.device)
    s["requires_grad"] = bool(obj.requires_grad)

    def stats():
        t = obj.detach()
        if t.device.type != "cpu" or t.is_sparse or t.dim() == 0:
            return None
        try:
            arr = t.numpy()
        except Exception:
            arr = t.float().numpy()
        return _array_stats(arr, query, clock)

    if obj.dim() == 0 and obj.device.type == "cpu":
        _field(s, clock, "value", lambda: _safe_repr(obj.item()))
        return
    _field(s, clock, "stats", stats)


def _sum_tf_tensor(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    shape = obj.shape
    s["shape"] = None if shape.rank is None else _shape_list(shape.as_list())
    s["dtype"] = obj.dtype.name
    _field(s, clock, "device", lambda: str(obj.device) or None)

    def stats():
        np = _sys.modules.get("numpy")
        if np is None or not hasattr(obj, "numpy") or _cls_name(type(obj)) == "KerasTensor":
            return None
        arr = obj.numpy()
        if getattr(arr, "ndim", 0) == 0:
            return None
        return _array_stats(arr, query, clock)

    _field(s, clock, "stats", stats)


def _index_names(index):
    """Names of the index levels (``groupby``/``sort_values`` accept them like columns)."""
    names = list(index.names)
    return {"index_names": [n if type(n) is str else None if n is None else _label_text(n) for n in names]}


def _index_info(index):
    out: dict = {"index_dtype": str(index.dtype)}
    out.update(_index_names(index))
    if len(index) and _cls_name(type(index)) == "RangeIndex":
        out["index_range"] = [int(index.start), int(index[-1])]
    return out


_INDEX_LABELS_MAX = 100


#: Largest index whose hash table the probe builds (about 0.1 s on these machines; 5M strings took 3 s,
#: in C code no alarm interrupts); a RangeIndex answers by arithmetic at any length.
_INDEX_OBJECT_MAX = 500_000


_INDEX_NUMERIC_MAX = 2_000_000


#: What ``infer_dtype`` may say of an object-dtype index for its elements to be plain str/int/float
#: (whose ``__hash__``/``__eq__`` are builtin code, so a lookup runs nothing of the user's).
_PLAIN_INFERRED = frozenset({"string", "integer", "floating", "mixed-integer-float"})


def _index_has(obj, labels, clock):
    """``label in obj.index`` for each queried row label, keyed by ``repr(label)``.

    pandas' own ``Index.__contains__`` decides (``5 in Index([5.0])`` is True, ``'5' in Index([5])`` is
    False), which is the hash lookup ``.loc`` and ``drop`` use. The answer is None unless the index is a
    plain ``Index``/``RangeIndex`` of numpy int/uint/float dtype or of plain str/int/float objects, and
    unique: a MultiIndex, datetime-like (partial string keys), categorical or extension index, or a
    duplicated label, may look labels up otherwise. The cost is pandas' own: a ``RangeIndex`` answers
    by arithmetic, other indexes build (and keep) their hash table once, up to a size cap.
    """
    keep = []
    for label in labels[:_INDEX_LABELS_MAX] if type(labels) is list else ():
        if type(label) in (str, int) or (type(label) is float and _math.isfinite(label)):
            keep.append(label)
    answers: dict = {repr(label): None for label in keep}
    if not keep:
        return answers
    index = obj.index
    t = type(index)
    if _cls_module(t).split(".")[0] != "pandas" or _cls_name(t) not in ("Index", "RangeIndex"):
        return answers
    if _cls_name(t) == "Index":
        dtype = index.dtype
        # pandas 3 holds text labels in its str dtype (a StringDtype): a plain hash lookup too
        text = _isa(dtype, "pd_string_dtype")
        if not text and (_cls_module(type(dtype)).split(".")[0] != "numpy" or dtype.kind not in "iufO"):
            return answers
        if len(index) > (_INDEX_OBJECT_MAX if text or dtype.kind == "O" else _INDEX_NUMERIC_MAX):
            return answers
        clock.check()
        if (text or dtype.kind == "O") and index.inferred_type not in _PLAIN_INFERRED:
            return answers
        clock.check()
        if not index.is_unique:
            return answers
    for label in keep:
        clock.check()
        answers[repr(label)] = bool(label in index)
    return answers


def _sum_series(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["shape"] = [len(obj)]
    s["length"] = len(obj)
    s["dtype"] = str(obj.dtype)
    s.update(_index_info(obj.index))
    if obj.name is not None:
        s["repr"] = "name=" + _safe_repr(obj.name, 60)
    _field(s, clock, "stats", _series_stats, obj, query, clock)


def _sum_index(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["shape"] = [len(obj)]
    s["length"] = len(obj)
    s["dtype"] = str(obj.dtype)
    pd = _sys.modules["pandas"]
    if _cls_name(type(obj)) != "MultiIndex":

        def stats():  # its own dtype: left to infer, pandas 3 makes object strings its ``str`` dtype
            return _series_stats(pd.Series(obj._values, dtype=obj.dtype, copy=False), query, clock)

        _field(s, clock, "stats", stats)


def _column_values(df, i):
    """Column ``i`` as a Series over the frame's own values (no copy, no index, its own dtype: left to
    infer, pandas 3 turns an object column of strings into its ``str`` dtype, 0.6 s per 5M rows)."""
    pd = _sys.modules["pandas"]
    try:
        values = df._mgr.iget_values(i)
    except Exception:
        return df.iloc[:, i]
    return pd.Series(values, dtype=values.dtype, copy=False)


def _sum_dataframe(obj, s: ObjectWire, query: QueryWire, clock: _Clock, wanted=()):
    n_rows, n_cols = obj.shape
    s["shape"] = [int(n_rows), int(n_cols)]
    s["n_columns"] = int(n_cols)
    s["length"] = int(n_rows)
    s.update(_index_info(obj.index))
    labels = obj.columns[:_MAX_COLUMN_NAMES].tolist()
    dtypes = obj.dtypes
    dtype_list = [str(d) for d in dtypes.iloc[: len(labels)].tolist()]
    cols = []
    for label, dt in zip(labels, dtype_list, strict=False):
        c: ColumnWire = {"name": label if type(label) is str else _label_text(label), "dtype": dt}
        if type(label) is not str:
            c["label_repr"] = _safe_repr(label, 80)
        cols.append(c)
    s["columns"] = cols
    s["columns_truncated"] = n_cols > len(labels)
    max_cols = query["max_columns"]
    first = []  # the columns the cell subscripts: the checks need them most
    if wanted:
        try:
            col_index = obj.columns
            for key in wanted:
                if type(key) in (str, int, float, bool, tuple) and key in col_index:
                    loc = col_index.get_loc(key)
                    if type(loc) is int and loc < len(cols) and loc not in first:
                        first.append(loc)
        except Exception:
            pass
    # Work order (the output keeps the frame's order): subscripted columns, then cheap vectorised
    # dtypes, then object-like columns, each of those with its own slice of the budget left, so one
    # costly column cannot starve the others; a column cut short reads ``stats=None``.
    rest = [i for i in range(min(max_cols, len(cols))) if i not in first]
    cheap = [i for i in rest if _cheap_dtype(dtypes.iloc[i])]
    costly = [i for i in rest if i not in cheap]
    end = clock.object_end
    plan = [(i, False) for i in first + cheap] + [(i, True) for i in costly]
    for n_done, (i, sliced) in enumerate(plan):
        now = _time.monotonic()
        if clock.request_over() or now >= end:
            clock.hit = True
            s["error"] = DEADLINE
            break
        if sliced:  # twice a fair share of what is left: a typical column is not cut for nothing
            clock.object_end = min(end, now + 2 * (end - now) / (len(plan) - n_done))
        sub: dict = {}
        try:
            _field(sub, clock, "stats", lambda i=i: _series_stats(_column_values(obj, i), query, clock))
        finally:
            clock.object_end = end
        if "stats" in sub:
            cols[i]["stats"] = sub["stats"]
        elif sub.get("error"):
            s["error"] = sub["error"]


def _cheap_dtype(dtype):
    """True for dtypes whose stats are numpy-vectorised (numeric, bool, datetime, categorical)."""
    try:
        name = _cls_name(type(dtype))
        if name in ("CategoricalDtype", "DatetimeTZDtype"):
            return True
        kind = dtype.kind if _sys.modules["numpy"].dtype in _mro(dtype) else _lib_attr(dtype, "kind")
        return type(kind) is str and len(kind) == 1 and kind in "biufmM"
    except Exception:
        return False


#: kind -> the summariser that fills its ``ObjectWire`` (merged into ``summaries._SUMMARISERS``).
_DATA_SUMMARISERS = {
    Kind.NDARRAY: _sum_ndarray,
    Kind.TENSOR: _sum_tensor,
    Kind.TF_TENSOR: _sum_tf_tensor,
    Kind.SERIES: _sum_series,
    Kind.DATAFRAME: _sum_dataframe,
    Kind.INDEX: _sum_index,
}
