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
        _cls_name,
        _is_trusted_cls,
        _jsonable_number,
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


def _numpy_full(arr, st: ValueStatsWire):
    """NaN count and range of a plain numpy column over its full length (vectorised, milliseconds)."""
    np = _sys.modules["numpy"]
    kind = arr.dtype.kind
    if kind == "f":
        nan_count = int(np.count_nonzero(np.isnan(arr)))
        st.update({"nan_count": nan_count, "has_nan": nan_count > 0})
        if nan_count < arr.size:
            st["min"] = _jsonable_number(np.fmin.reduce(arr))
            st["max"] = _jsonable_number(np.fmax.reduce(arr))
    elif kind in "iu":
        st.update({"nan_count": 0, "has_nan": False})
        st.update({"min": _jsonable_number(arr.min()), "max": _jsonable_number(arr.max())})
    elif kind == "b":
        st.update({"nan_count": 0, "has_nan": False})
    elif kind in "mM":
        i8 = arr.view("i8")
        nat = i8 == np.iinfo(np.int64).min
        nan_count = int(np.count_nonzero(nat))
        st.update({"nan_count": nan_count, "has_nan": nan_count > 0})
        if nan_count < arr.size:
            # NaT is the smallest int64: the max needs no mask, the min only when NaT is present
            hi = i8.max()
            lo = np.min(i8, where=~nat, initial=np.iinfo(np.int64).max) if nan_count else i8.min()
            unit = np.datetime_data(arr.dtype)[0]
            conv = np.datetime64 if kind == "M" else np.timedelta64
            st["min"] = str(
                _sys.modules["pandas"].Timestamp(conv(int(lo), unit)) if kind == "M" else conv(int(lo), unit)
            )
            st["max"] = str(
                _sys.modules["pandas"].Timestamp(conv(int(hi), unit)) if kind == "M" else conv(int(hi), unit)
            )


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
        _numpy_full(s.to_numpy(copy=False), st)
    elif numeric or is_dt or is_cat or n <= limit:
        _nan_and_range(st, s, n, int(s.isna().sum()), numeric, numeric or is_dt)
    clock.check()
    sample = s
    if n > limit:
        k = limit if numeric or is_dt or is_cat else min(limit, _OBJECT_SAMPLE_ROWS)
        sample = s.iloc[_sample_positions(n, k)]
        st["sampled"] = True
        if "has_nan" not in st:
            nan_count = int(sample.isna().sum())
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
        values = sample.dropna()
        head = values.head(2000).tolist()
        types = {type(v) for v in head}
        # hashing runs __hash__/__eq__: only for values of library types, never user objects
        safe = all(_is_trusted_cls(t) for t in {type(v) for v in values.tolist()})
        uniques = None
        clock.check()
        if safe:
            with contextlib.suppress(Exception):  # unhashable values
                uniques = pd.unique(values.to_numpy())
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
        return _series_stats(pd.Series(arr, copy=False), query, clock)
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
