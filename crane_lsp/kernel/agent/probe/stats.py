"""Value statistics of 1-D arrays and columns (numpy / pandas; reached only when those are imported).

Budgets: distinct counts and examples on at most ``sample_rows`` rows (``sampled``; object-like
columns on ``_OBJECT_SAMPLE_ROWS``); NaN and ranges full-length where vectorised; every sampled
field says so. The sample positions come from a private RNG, so the user's global one never moves.
"""

import contextlib
import sys as _sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
    )
    from crane_lsp.kernel.agent.safe import (
        _CATEGORICAL_MAX,
        _EXAMPLE_MAX,
        _cls_module,
        _cls_name,
        _is_trusted_cls,
        _jsonable_number,
        _lib_attr,
        _mro,
        _safe_repr,
    )
    from crane_lsp.kernel.agent.wire import (
        QueryWire,
        Values,
        ValueStatsWire,
    )


_POSITIONS: dict = {}


#: object-like columns longer than ``sample_rows``: distinct counts, examples, NaN and non-numeric
#: values are taken on this many rows (hashing and ``float()`` on Python objects cost ~10x numpy work)
_OBJECT_SAMPLE_ROWS = 20000


def _sample_positions(n, k):
    """Sorted random row positions (with rare repeats); cached per (n, k), a private RNG."""
    pos = _POSITIONS.get((n, k))
    if pos is None:
        np = _sys.modules["numpy"]
        rng = np.random.default_rng(20240601)  # a private Generator: the global RNG is untouched
        pos = np.sort(rng.integers(0, n, size=k))
        if len(_POSITIONS) >= 4:  # a frame needs two sizes (numeric and object columns)
            _POSITIONS.clear()
        _POSITIONS[(n, k)] = pos
    return pos


def _value_kind_numeric(distinct, is_int, is_bool):
    if distinct == 0:
        return "empty"
    if is_bool or distinct <= 2:
        return "binary"
    if is_int and distinct <= _CATEGORICAL_MAX:
        return "categorical"
    if not is_int and distinct <= 10:
        return "categorical"
    return "continuous"


def _examples(values, privacy, limit=3):
    if privacy:
        return None
    out = []
    for v in values:
        r = _safe_repr(v, _EXAMPLE_MAX)
        if r not in out:
            out.append(r)
        if len(out) >= limit:
            break
    return out


#: elements per step of a full-length pass: a step's slice stays in the CPU cache for all its reductions,
#: so a 5M-row column is read from memory once (min, max and NaN count in one pass, not three)
_CHUNK = 1 << 16


def _float_full(arr, clock):
    """(NaN count, min, max) of a float array; min/max None when every value is NaN.

    ``min`` propagates NaN, so a step without NaN costs two cached reductions; only steps that hold
    a NaN count them and take the NaN-ignoring ``fmin``/``fmax`` (no 5M-byte mask is allocated).
    """
    np = _sys.modules["numpy"]
    nans, lo, hi, buf = 0, None, None, None
    for n_step, start in enumerate(range(0, arr.size, _CHUNK)):
        if n_step % 16 == 15:
            clock.check()
        part = arr[start : start + _CHUNK]
        low, high = part.min(), part.max()
        if low != low:  # a NaN in this step
            if buf is None:
                buf = np.empty(min(arr.size, _CHUNK), dtype=bool)
            here = int(np.count_nonzero(np.isnan(part, out=buf[: part.size])))
            nans += here
            if here == part.size:
                continue
            low, high = np.fmin.reduce(part), np.fmax.reduce(part)
        lo = low if lo is None or low < lo else lo
        hi = high if hi is None or high > hi else hi
    return nans, lo, hi


def _int_full(arr, clock, nat=None):
    """(count of ``nat``, min, max) of an integer array (``nat``: int64 NaT of a datetime's i8 view)."""
    np = _sys.modules["numpy"]
    nats, lo, hi = 0, None, None
    for n_step, start in enumerate(range(0, arr.size, _CHUNK)):
        if n_step % 16 == 15:
            clock.check()
        part = arr[start : start + _CHUNK]
        low, high = part.min(), part.max()
        if nat is not None and low == nat:  # NaT is the smallest int64: only min needs the mask
            mask = part != nat
            here = part.size - int(np.count_nonzero(mask))
            nats += here
            if here == part.size:
                continue
            low = np.min(part, where=mask, initial=high)
        lo = low if lo is None or low < lo else lo
        hi = high if hi is None or high > hi else hi
    return nats, lo, hi


def _numpy_full(arr, st: ValueStatsWire, clock):
    """NaN count and range of a plain numpy column over its full length (one cached pass, milliseconds)."""
    np = _sys.modules["numpy"]
    kind = arr.dtype.kind
    if kind == "f":
        nan_count, lo, hi = _float_full(arr, clock)
        st.update({"nan_count": nan_count, "has_nan": nan_count > 0})
        if lo is not None:
            st["min"], st["max"] = _jsonable_number(lo), _jsonable_number(hi)
    elif kind in "iu":
        _nats, lo, hi = _int_full(arr, clock)
        st.update({"nan_count": 0, "has_nan": False})
        st.update({"min": _jsonable_number(lo), "max": _jsonable_number(hi)})
    elif kind == "b":
        st.update({"nan_count": 0, "has_nan": False})
    elif kind in "mM":
        nan_count, lo, hi = _int_full(arr.view("i8"), clock, np.iinfo(np.int64).min)
        st.update({"nan_count": nan_count, "has_nan": nan_count > 0})
        if lo is not None:
            unit = np.datetime_data(arr.dtype)[0]
            if kind == "M":
                ts = _sys.modules["pandas"].Timestamp
                st["min"] = str(ts(np.datetime64(int(lo), unit)))
                st["max"] = str(ts(np.datetime64(int(hi), unit)))
            else:
                st["min"] = str(np.timedelta64(int(lo), unit))
                st["max"] = str(np.timedelta64(int(hi), unit))


def _numpy_distinct(values):
    """Distinct non-missing values of a 1-D numpy numeric/datetime array, by sorting a copy (a 100k
    sample sorts in ~1 ms; pandas' hash table took 7 ms on 100k random floats)."""
    np = _sys.modules["numpy"]
    kind = values.dtype.kind
    if kind == "b":
        return int(bool(values.any())) + int(not values.all()) if values.size else 0
    if kind == "f":
        values = values[~np.isnan(values)]
    elif kind in "mM":
        values = values.view("i8")
        values = values[values != np.iinfo(np.int64).min]
    else:
        values = values.copy()
    values.sort()
    return int(values.size and 1 + np.count_nonzero(values[1:] != values[:-1]))


def _non_numeric(values, limit):
    """Up to five reprs of values that ``float()`` rejects (what makes ``astype(float/int)`` fail)."""
    np = _sys.modules["numpy"]
    bad = []
    for i, v in enumerate(values):
        if i >= limit:
            break
        t = type(v)
        if t in (str, bytes):
            try:
                float(v)
                continue
            except ValueError:
                pass
        elif t in (int, float, bool) or np.generic in _mro(v):
            continue
        r = _safe_repr(v, _EXAMPLE_MAX)
        if r not in bad:
            bad.append(r)
            if len(bad) >= 5:
                break
    return bad


def _empty_stats() -> ValueStatsWire:
    return {"sampled": False, "value_kind": Values.EMPTY, "distinct": 0, "has_nan": False, "nan_count": 0}


def _nan_and_range(st: ValueStatsWire, col, n, nulls, numeric, ranged):
    """NaN count and, where ``ranged``, min/max of a whole column (vectorised in the library)."""
    st["nan_count"], st["has_nan"] = nulls, nulls > 0
    if ranged and nulls < n:
        lo, hi = col.min(), col.max()
        st["min"] = _jsonable_number(lo) if numeric else str(lo)
        st["max"] = _jsonable_number(hi) if numeric else str(hi)


def _text_dtype(dtype):
    """pandas' string dtypes (pandas 3's default ``str`` too) and Arrow string types: every value that
    is not missing is a ``str``, so no value needs its type read."""
    if _cls_module(type(dtype)).split(".")[0] != "pandas":
        return False
    name = _cls_name(type(dtype))
    if name == "StringDtype":
        return True
    arrow_type = _lib_attr(dtype, "pyarrow_dtype") if name == "ArrowDtype" else None
    return _cls_name(type(arrow_type)) == "DataType" and str(arrow_type) in ("string", "large_string")


def _numpy_stats(s, arr, query: QueryWire, clock: _Clock) -> ValueStatsWire:
    """A numpy-backed numeric or datetime column, in numpy: NaN count and range full-length in one
    pass, distinct values and examples on the sample (no pandas take, index or hash table)."""
    np = _sys.modules["numpy"]
    st: ValueStatsWire = {"sampled": False}
    kind = arr.dtype.kind
    _numpy_full(arr, st, clock)
    clock.check()
    pos, sample = None, arr
    if arr.size > query["sample_rows"]:
        pos = _sample_positions(arr.size, query["sample_rows"])
        sample = arr[pos]
        st["sampled"] = True
    clock.check()
    distinct = _numpy_distinct(sample)
    st["distinct"] = distinct
    privacy = query.get("privacy")
    if kind in "mM":  # Timestamp/Timedelta texts, as pandas prints them
        st["value_kind"] = "datetime"
        head = s.iloc[pos[:20]] if pos is not None else s.head(20)
        texts = [str(v) for v in head.dropna().tolist()]
        st["examples"] = None if privacy else list(dict.fromkeys(texts))[:3]
    else:
        st["value_kind"] = _value_kind_numeric(distinct, kind in "iu", kind == "b")
        head = sample[:50]
        st["examples"] = _examples((head[~np.isnan(head)] if kind == "f" else head).tolist(), privacy)
    return st


def _series_stats(s, query: QueryWire, clock: _Clock):
    """ValueStats of a pandas Series (any dtype), sampled where it must be.

    Full length (vectorised): NaN count and range of numpy numeric/datetime columns, NaN of
    categoricals. On at most ``sample_rows`` rows: distinct counts, examples. Object-like columns
    longer than ``sample_rows`` use a smaller sample (``_OBJECT_SAMPLE_ROWS``) for distinct counts,
    examples, non-numeric values and NaN (``nan_sampled``; a full object scan costs ~0.3 s/5M).
    """
    pd = _sys.modules["pandas"]
    np = _sys.modules["numpy"]
    privacy = query.get("privacy")
    st: ValueStatsWire = {"sampled": False}
    n = len(s)
    dtype = s.dtype
    np_dtype = np.dtype in _mro(dtype)
    kind = dtype.kind if np_dtype else getattr(dtype, "kind", "O")
    is_cat = _cls_name(type(dtype)) == "CategoricalDtype"
    is_dt = kind in "mM" or _cls_name(type(dtype)) == "DatetimeTZDtype"
    numeric = kind in "biuf" and not is_cat
    limit = query["sample_rows"]
    if n == 0:
        return _empty_stats()
    if np_dtype and (numeric or is_dt):
        return _numpy_stats(s, s.to_numpy(copy=False), query, clock)
    if numeric or is_dt or is_cat or n <= limit:
        _nan_and_range(st, s, n, int(s.isna().sum()), numeric, numeric or is_dt)
    clock.check()
    sample, missing = s, None
    if n > limit:
        k = limit if numeric or is_dt or is_cat else min(limit, _OBJECT_SAMPLE_ROWS)
        sample = s.iloc[_sample_positions(n, k)]
        st["sampled"] = True
        if "has_nan" not in st:
            missing = sample.isna()  # kept: the values below are the sample less these
            nan_count = int(missing.sum())
            st.update({"nan_count": nan_count, "has_nan": nan_count > 0, "nan_sampled": True})
    clock.check()
    if numeric:
        distinct = int(sample.nunique(dropna=True))
        st["distinct"] = distinct
        st["value_kind"] = _value_kind_numeric(distinct, kind in "iu", kind == "b")
        st["examples"] = _examples(sample.head(50).dropna().tolist(), privacy)
    elif is_dt:
        st["distinct"] = int(sample.nunique(dropna=True))
        st["value_kind"] = "datetime"
        texts = [str(v) for v in sample.head(20).dropna().tolist()]
        st["examples"] = None if privacy else list(dict.fromkeys(texts))[:3]
    elif is_cat:
        cats = dtype.categories
        st["distinct"] = len(cats)
        st["value_kind"] = "binary" if len(cats) == 2 else "categorical"
        st["examples"] = _examples(cats[:20].tolist(), privacy)
    else:
        values = sample.dropna() if missing is None else sample[~missing]
        # the values as Python objects in one conversion: an Arrow-backed array's own ``tolist()``
        # builds them one by one (50 ms per 20,000 strings); an object column is returned as it is
        objects = values.to_numpy(dtype=object)
        head = objects[:2000].tolist()
        types = {type(v) for v in head}
        # hashing runs __hash__/__eq__: only for values of library types, never user objects
        safe = _text_dtype(dtype) or all(_is_trusted_cls(t) for t in set(map(type, objects.tolist())))
        uniques = None
        clock.check()
        if safe:
            with contextlib.suppress(Exception):  # unhashable values
                uniques = pd.unique(objects)
            clock.check()
        n_unique = None if uniques is None else len(uniques)
        st["distinct"] = n_unique
        if not head:
            st["value_kind"] = "empty"
        elif len(types) > 1:
            st["value_kind"] = "mixed"
        elif n_unique is not None and n_unique <= 2:
            st["value_kind"] = "binary"
        elif n_unique is not None and (n_unique <= _CATEGORICAL_MAX or n_unique <= 0.05 * len(values)):
            st["value_kind"] = "categorical"
        else:
            st["value_kind"] = "text" if types <= {str} else "mixed"
        st["examples"] = _examples(head[:50], privacy)
        clock.check()
        bad = _non_numeric(uniques if uniques is not None else head, 20000)
        st["non_numeric_examples"] = [f"<{len(bad)} non-numeric values>"] if privacy and bad else bad
    return st


def _array_stats(arr, query: QueryWire, clock: _Clock):
    """ValueStats of a numpy array: all fields for 1-D, NaN and range for N-D."""
    np = _sys.modules["numpy"]
    pd = _sys.modules.get("pandas")
    if arr.ndim == 1 and pd is not None and arr.dtype.kind != "V":
        return _series_stats(pd.Series(arr, dtype=arr.dtype, copy=False), query, clock)
    st: ValueStatsWire = {"sampled": False}
    kind = arr.dtype.kind
    if arr.size == 0:
        st.update({"value_kind": Values.EMPTY, "has_nan": False, "nan_count": 0})
        return st
    if kind in "fc":
        nan_count = int(np.isnan(arr).sum())
        st.update({"nan_count": nan_count, "has_nan": nan_count > 0})
    elif kind in "biu":
        st.update({"nan_count": 0, "has_nan": False})
    if kind in "biuf":
        clock.check()
        with np.errstate(all="ignore"):
            st["min"] = _jsonable_number(np.nanmin(arr) if kind == "f" else arr.min())
            st["max"] = _jsonable_number(np.nanmax(arr) if kind == "f" else arr.max())
    if arr.ndim == 1:
        flat = arr
        limit = query["sample_rows"]
        if flat.size > limit:
            flat = flat[_sample_positions(flat.size, limit)]
            st["sampled"] = True
        distinct = len(np.unique(flat[~np.isnan(flat)] if kind == "f" else flat))
        st["distinct"] = distinct
        st["value_kind"] = _value_kind_numeric(distinct, kind in "iu", kind == "b")
    return st
