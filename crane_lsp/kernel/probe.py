"""Kernel-side probe: STANDARD LIBRARY ONLY, sent to the kernel as source text.

Entry points (called through ``probe_install.call_expression``) take one JSON string and return an
object whose ``_repr_json_`` gives the answer as ``application/json``:

    snapshot(query_json) -> JSON matching ``crane_lsp.runtime.Snapshot``

Rules this module keeps (ARCHITECTURE, "trace-free probing"):

* It imports only modules an IPython kernel has already loaded, and reaches numpy, pandas, torch,
  TensorFlow, Keras and scikit-learn through ``sys.modules`` only: a library the user has not
  imported cannot be behind any of their objects, so it is never needed.
* Objects are hostile. Type tests walk ``type(obj).__mro__`` (no ``isinstance`` on user objects,
  no ``__class__``); attributes are read with ``inspect.getattr_static``; a property or method is
  called only when the class that defines it comes from a trusted library (``_TRUSTED``). User
  code is run only where it is the object's nature (a torch ``Dataset``'s ``__len__`` and
  ``__getitem__``), under a SIGALRM guard on the main thread, with RNG states and the instance
  ``__dict__`` restored afterwards.
* Budgets: distinct counts and examples on at most ``sample_rows`` rows (``sampled``; object-like
  columns on ``_OBJECT_SAMPLE_ROWS``); NaN and ranges full-length where vectorised; a per-object and
  per-request deadline, after which fields read ``None`` with ``error="deadline"``. DataFrame
  columns are worked on subscripted first, then cheap vectorised dtypes, then object-like columns
  (each with a slice of what is left), so a budget that runs out leaves out the costly ones.

Missing attributes (``AttributeFact``): a static miss is proof only when no ``__getattr__`` can
answer, and no ``__getattribute__`` beyond ``object``/``type``/``module`` (statsmodels results
wrappers, NumPy ``recarray``/``record`` fields), nor a module class of its own (TensorFlow's lazy
``keras``): those read ``exists=None``. Known library ``__getattr__`` hooks are replayed exactly
(pandas column access, torch ``nn.Module`` parameters/buffers/submodules). A module-level
``__getattr__`` (PEP 562, e.g. numpy's, which raises for removed aliases such as ``np.float`` and
lazily imports submodules) is decided without calling it: a findable submodule or a name in the
module's ``__dir__`` (trusted libraries only) reads ``exists=None`` (it may be lazily provided); any
other name of a trusted library module reads ``exists=False``; elsewhere ``exists=None``.
``dynamic`` is True in all those cases.
"""

import ast as _ast
import builtins as _builtins
import contextlib
import importlib.machinery as _machinery
import importlib.util as _imputil
import inspect as _inspect
import json as _json
import math as _math
import os as _os
import platform as _platform
import signal as _signal
import sys as _sys
import threading as _threading
import time as _time
import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined after this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.frames import _frm_classify

_MISSING = object()

#: Top-level packages whose classes' dunders and properties may be called: library code.
_TRUSTED_TEXT = (
    "builtins collections datetime decimal fractions pathlib re enum functools itertools types numpy "
    "pandas scipy sklearn torch torchvision tensorflow keras tf_keras matplotlib seaborn statsmodels "
    "PIL xgboost lightgbm"
)
_TRUSTED = frozenset(_TRUSTED_TEXT.split())

_VERSION_TEXT = "numpy pandas sklearn torch tensorflow keras matplotlib seaborn statsmodels scipy"
_VERSION_PACKAGES = tuple(_VERSION_TEXT.split())

#: Packages every kernel loads for itself: left out of ``imported`` to keep the JSON small.
_KERNEL_INFRA_TEXT = (
    "IPython ipykernel jupyter_client jupyter_core zmq tornado traitlets debugpy jedi parso "
    "prompt_toolkit pygments pexpect ptyprocess wcwidth stack_data executing asttokens pure_eval "
    "decorator pickleshare backcall comm platformdirs psutil nest_asyncio matplotlib_inline "
    "cython_runtime colorama orjson typing_extensions packaging six dateutil pytz certifi"
)
_KERNEL_INFRA = frozenset(_KERNEL_INFRA_TEXT.split())

_REPR_MAX = 200
_VALUE_MAX = 200
_EXAMPLE_MAX = 40
_MAX_COLUMN_NAMES = 2000
_CATEGORICAL_MAX = 50


class _JSONResult:
    """Renders as ``application/json``; ``__repr__`` stays cheap (IPython also asks for text/plain)."""

    def __init__(self, data):
        self._data = data

    def _repr_json_(self):
        return self._data

    def __repr__(self):
        return "<crane snapshot>"


class _Deadline(BaseException):
    """Out of time. A BaseException, so user code's ``except Exception`` cannot swallow the alarm."""


class _Untrusted(Exception):
    pass


# ------------------------------------------------------------------------------------------------
# Budgets
# ------------------------------------------------------------------------------------------------


class _Clock:
    def __init__(self, request_s, object_s):
        self.start = _time.monotonic()
        self.request_end = self.start + request_s
        self.object_s = object_s
        self.object_end = self.request_end
        self.hit = False

    def begin_object(self):
        self.object_end = min(_time.monotonic() + self.object_s, self.request_end)

    def left(self):
        return self.object_end - _time.monotonic()

    def check(self):
        if _time.monotonic() >= self.object_end:
            self.hit = True
            raise _Deadline()

    def request_over(self):
        return _time.monotonic() >= self.request_end


_GUARD_ACTIVE = [False]


def _guarded(clock, fn, *args):
    """Run possibly-user code; on the main thread a SIGALRM interrupts it at the object deadline."""
    clock.check()
    if (
        _GUARD_ACTIVE[0]
        or _threading.current_thread() is not _threading.main_thread()
        or _signal.getitimer(_signal.ITIMER_REAL)[0] > 0  # the user's own alarm is pending: leave it be
    ):
        return fn(*args)

    def _on_alarm(signum, frame):
        raise _Deadline()

    old = _signal.signal(_signal.SIGALRM, _on_alarm)
    _GUARD_ACTIVE[0] = True
    try:
        _signal.setitimer(_signal.ITIMER_REAL, max(clock.left(), 0.001))
        try:
            return fn(*args)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    except _Deadline:
        clock.hit = True
        raise
    finally:
        _GUARD_ACTIVE[0] = False
        _signal.signal(_signal.SIGALRM, old)


# ------------------------------------------------------------------------------------------------
# Safe type inspection
# ------------------------------------------------------------------------------------------------


def _mro(obj):
    return type.__dict__["__mro__"].__get__(type(obj))


def _is_class(obj):
    return type in _mro(obj)


def _cls_module(cls):
    try:
        mod = type.__dict__["__module__"].__get__(cls)
        return mod if isinstance(mod, str) else ""
    except Exception:
        return ""


def _cls_name(cls):
    try:
        return type.__dict__["__qualname__"].__get__(cls)
    except Exception:
        return "?"


def _qualname(cls):
    mod = _cls_module(cls)
    name = _cls_name(cls)
    return name if mod in ("builtins", "") else mod + "." + name


def _mro_names(obj):
    return [_qualname(c) for c in _mro(obj)]


def _is_trusted_cls(cls):
    return _cls_module(cls).split(".")[0] in _TRUSTED


def _trusted(obj):
    return _is_trusted_cls(type(obj))


def _has_base_prefix(obj, name, prefixes):
    return any(_cls_name(cls) == name and _cls_module(cls).split(".")[0] in prefixes for cls in _mro(obj))


def _lib(module, *path):
    """An attribute of an already-imported library module, or None (never imports)."""
    obj = _sys.modules.get(module)
    for p in path:
        if obj is None:
            return None
        obj = getattr(obj, p, None)
    return obj


def _instance_dict(obj):
    try:
        d = object.__getattribute__(obj, "__dict__")
        return d if type(d) is dict else None
    except Exception:
        return None


#: Library classes recognised by identity: ``key -> ((module, attribute), ...)``, the first found wins.
#: Read from modules already in ``sys.modules`` (a class the user has not imported cannot be in an
#: object's MRO), so no import runs and a library's choice of ``__module__`` (pandas 3 reports
#: ``pandas.DataFrame``, pandas 2 ``pandas.core.frame.DataFrame``) does not matter.
_KNOWN_CLASSES = {
    "ndarray": (("numpy", "ndarray"),),
    "np_generic": (("numpy", "generic"),),
    "np_bool": (("numpy", "bool_"), ("numpy", "bool")),
    "np_integer": (("numpy", "integer"),),
    "np_floating": (("numpy", "floating"),),
    "np_generator": (("numpy.random", "Generator"), ("numpy.random._generator", "Generator")),
    "np_random_state": (("numpy.random", "RandomState"), ("numpy.random.mtrand", "RandomState")),
    "tensor": (("torch", "Tensor"),),
    "torch_generator": (("torch", "Generator"), ("torch._C", "Generator")),
    "dataframe": (("pandas", "DataFrame"), ("pandas.core.frame", "DataFrame")),
    "series": (("pandas", "Series"), ("pandas.core.series", "Series")),
    "index": (("pandas", "Index"), ("pandas.core.indexes.base", "Index")),
    "ndframe": (("pandas.core.generic", "NDFrame"),),
    "dataloader": (("torch.utils.data", "DataLoader"), ("torch.utils.data.dataloader", "DataLoader")),
    "torch_dataset": (("torch.utils.data", "Dataset"), ("torch.utils.data.dataset", "Dataset")),
    "torch_iterable_dataset": (
        ("torch.utils.data", "IterableDataset"),
        ("torch.utils.data.dataset", "IterableDataset"),
    ),
    "torch_module": (("torch.nn", "Module"), ("torch.nn.modules.module", "Module")),
    "torch_linear": (("torch.nn", "Linear"), ("torch.nn.modules.linear", "Linear")),
    "estimator": (("sklearn.base", "BaseEstimator"),),
    "pd_string_dtype": (("pandas", "StringDtype"),),
}


def _known_class(key):
    """The library class ``key`` names, from a module already imported, or None; never imports.

    Reads the module's ``__dict__`` directly, so a module-level ``__getattr__`` (lazy submodules)
    never runs.
    """
    for module, name in _KNOWN_CLASSES[key]:
        mod = _sys.modules.get(module)
        if mod is None:
            continue
        d = _instance_dict(mod)
        cls = d.get(name) if d is not None else None
        if cls is not None and type in type.__dict__["__mro__"].__get__(type(cls)):
            return cls
    return None


def _isa(obj, key):
    """Whether ``obj`` is an instance of the library class ``key`` (MRO identity, no ``isinstance``)."""
    cls = _known_class(key)
    return cls is not None and cls in _mro(obj)


def _kinds_of(obj):
    """The ``_KNOWN_CLASSES`` keys whose class is in ``obj``'s MRO."""
    mro = _mro(obj)
    return {key for key in _KNOWN_CLASSES if (cls := _known_class(key)) is not None and cls in mro}


def _static(obj, name, default=None):
    """``obj.name`` when it is a plain stored value (instance dict or plain class attribute), else default."""
    d = _instance_dict(obj)
    if d is not None and name in d:
        return d[name]
    try:
        v = _inspect.getattr_static(obj, name, _MISSING)
    except Exception:
        return default
    if v is _MISSING or _is_descriptor(v):
        return default
    return v


def _is_descriptor(v):
    t = type(v)
    for cls in type.__dict__["__mro__"].__get__(t):
        cd = cls.__dict__
        if "__get__" in cd or "__set__" in cd or "__delete__" in cd:
            return True
    return False


def _defining_class(obj, name):
    for cls in _mro(obj):
        try:
            if name in cls.__dict__:
                return cls
        except Exception:
            return None
    return None


def _lib_attr(obj, name):
    """``getattr(obj, name)`` only when it is a stored value or defined by a trusted library class."""
    d = _instance_dict(obj)
    if d is not None and name in d:
        return d[name]
    cls = _defining_class(obj, name)
    if cls is None:
        raise AttributeError(name)
    if not _is_trusted_cls(cls):
        raise _Untrusted(name)
    return getattr(obj, name)


def _plain(obj):
    return "<" + _cls_name(type(obj)) + " object>"


_PRIMITIVES = (str, int, float, bool, type(None), bytes, complex)


def _safe_repr(obj, limit=_REPR_MAX, depth=0):
    """repr without running user code: primitives and small containers of them, else ``<Name object>``."""
    t = type(obj)
    try:
        if t in _PRIMITIVES:
            r = f"<int with {obj.bit_length()} bits>" if t is int and obj.bit_length() > 256 else repr(obj)
        elif t in (tuple, list) and depth < 2:
            items = [_safe_repr(x, 40, depth + 1) for x in obj[:10]]
            more = ", ..." if len(obj) > 10 else ""
            if t is tuple:
                r = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + more + ")"
            else:
                r = "[" + ", ".join(items) + more + "]"
        elif _trusted(obj) and _cls_module(t).split(".")[0] in ("numpy", "pandas") and _is_scalar_like(obj):
            r = repr(obj)
        else:
            r = _plain(obj)
    except Exception:
        r = _plain(obj)
    return r if len(r) <= limit else r[: limit - 1] + "\u2026"


def _is_scalar_like(obj):
    np = _sys.modules.get("numpy")
    if np is not None and np.generic in _mro(obj):
        return True
    pd = _sys.modules.get("pandas")
    return pd is not None and _cls_name(type(obj)) in (
        "Timestamp",
        "Timedelta",
        "NaTType",
        "Period",
        "Interval",
    )


def _trunc(s, limit):
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def _jsonable_number(v):
    try:
        f = float(v)
    except Exception:
        return None
    if _math.isnan(f) or _math.isinf(f):
        return None
    if f == int(f) and abs(f) < 2**53:
        return int(f)
    return f


# ------------------------------------------------------------------------------------------------
# Value statistics (numpy / pandas; only reached when those libraries are imported)
# ------------------------------------------------------------------------------------------------


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


def _numpy_full(arr, st):
    """NaN count and range of a plain numpy column over its full length (vectorised, milliseconds)."""
    np = _sys.modules["numpy"]
    kind = arr.dtype.kind
    if kind == "f":
        nan_count = int(np.count_nonzero(np.isnan(arr)))
        st.update(nan_count=nan_count, has_nan=nan_count > 0)
        if nan_count < arr.size:
            st["min"] = _jsonable_number(np.fmin.reduce(arr))
            st["max"] = _jsonable_number(np.fmax.reduce(arr))
    elif kind in "iu":
        st.update(
            nan_count=0, has_nan=False, min=_jsonable_number(arr.min()), max=_jsonable_number(arr.max())
        )
    elif kind == "b":
        st.update(nan_count=0, has_nan=False)
    elif kind in "mM":
        i8 = arr.view("i8")
        nat = i8 == np.iinfo(np.int64).min
        nan_count = int(np.count_nonzero(nat))
        st.update(nan_count=nan_count, has_nan=nan_count > 0)
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


def _series_stats(s, query, clock):
    """ValueStats of a pandas Series (any dtype), sampled where it must be.

    Full length (vectorised): NaN count and range of numpy numeric/datetime columns, NaN of
    categoricals. On at most ``sample_rows`` rows: distinct counts, examples. Object-like columns
    longer than ``sample_rows`` use a smaller sample (``_OBJECT_SAMPLE_ROWS``) for distinct counts,
    examples, non-numeric values and NaN (``nan_sampled``; a full object scan costs ~0.3 s/5M).
    """
    pd = _sys.modules["pandas"]
    np = _sys.modules["numpy"]
    privacy = query.get("privacy")
    st: dict = {"sampled": False}
    n = len(s)
    dtype = s.dtype
    np_dtype = np.dtype in _mro(dtype)
    kind = dtype.kind if np_dtype else getattr(dtype, "kind", "O")
    is_cat = _cls_name(type(dtype)) == "CategoricalDtype"
    is_dt = kind in "mM" or _cls_name(type(dtype)) == "DatetimeTZDtype"
    numeric = kind in "biuf" and not is_cat
    limit = query.get("sample_rows", 100000)
    if n == 0:
        st.update(value_kind="empty", distinct=0, has_nan=False, nan_count=0)
        return st
    if np_dtype and (numeric or is_dt):
        _numpy_full(s.to_numpy(copy=False), st)
    elif numeric or is_dt or is_cat or n <= limit:
        nan_count = int(s.isna().sum())
        st.update(nan_count=nan_count, has_nan=nan_count > 0)
        if (numeric or is_dt) and nan_count < n:
            lo, hi = s.min(), s.max()
            st["min"] = _jsonable_number(lo) if numeric else str(lo)
            st["max"] = _jsonable_number(hi) if numeric else str(hi)
    clock.check()
    sample = s
    if n > limit:
        k = limit if numeric or is_dt or is_cat else min(limit, _OBJECT_SAMPLE_ROWS)
        sample = s.iloc[_sample_positions(n, k)]
        st["sampled"] = True
        if "has_nan" not in st:
            nan_count = int(sample.isna().sum())
            st.update(nan_count=nan_count, has_nan=nan_count > 0, nan_sampled=True)
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


def _array_stats(arr, query, clock):
    """ValueStats of a numpy array: all fields for 1-D, NaN and range for N-D."""
    np = _sys.modules["numpy"]
    pd = _sys.modules.get("pandas")
    if arr.ndim == 1 and pd is not None and arr.dtype.kind != "V":
        return _series_stats(pd.Series(arr, copy=False), query, clock)
    st: dict = {"sampled": False}
    kind = arr.dtype.kind
    if arr.size == 0:
        st.update(value_kind="empty", has_nan=False, nan_count=0)
        return st
    if kind in "fc":
        nan_count = int(np.isnan(arr).sum())
        st.update(nan_count=nan_count, has_nan=nan_count > 0)
    elif kind in "biu":
        st.update(nan_count=0, has_nan=False)
    if kind in "biuf":
        clock.check()
        with np.errstate(all="ignore"):
            st["min"] = _jsonable_number(np.nanmin(arr) if kind == "f" else arr.min())
            st["max"] = _jsonable_number(np.nanmax(arr) if kind == "f" else arr.max())
    if arr.ndim == 1:
        flat = arr
        limit = query.get("sample_rows", 100000)
        if flat.size > limit:
            flat = flat[_sample_positions(flat.size, limit)]
            st["sampled"] = True
        distinct = len(np.unique(flat[~np.isnan(flat)] if kind == "f" else flat))
        st["distinct"] = distinct
        st["value_kind"] = _value_kind_numeric(distinct, kind in "iu", kind == "b")
    return st


# ------------------------------------------------------------------------------------------------
# Summarisers, one per kind
# ------------------------------------------------------------------------------------------------


def _field(summary, clock, name, fn, *args):
    """Fill ``summary[name]`` from ``fn``; a deadline or an exception leaves it unknown with a reason."""
    try:
        clock.check()
        v = fn(*args)
    except _Deadline:
        summary["error"] = "deadline"
        return
    except RecursionError:
        summary.setdefault("error", name + ": RecursionError")
        return
    except Exception as exc:
        summary.setdefault("error", name + ": " + _cls_name(type(exc)) + ": " + _trunc(_exc_text(exc), 120))
        return
    if v is not None:
        summary[name] = v


def _exc_text(exc):
    try:
        if _is_trusted_cls(type(exc)):
            return str(exc)
    except Exception:
        pass
    return ""


def _shape_list(shape):
    out = []
    for d in shape:
        try:
            out.append(None if d is None else int(d))
        except Exception:
            out.append(None)
    return out


def _sum_ndarray(obj, s, query, clock):
    s["shape"] = [int(d) for d in obj.shape]
    s["dtype"] = str(obj.dtype)
    s["device"] = "cpu"
    if obj.ndim == 0:
        s["value"] = _safe_repr(obj[()])
        return
    _field(s, clock, "stats", _array_stats, obj, query, clock)


def _sum_tensor(obj, s, query, clock):
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


def _sum_tf_tensor(obj, s, query, clock):
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


def _label_text(label):
    """str() of a non-str column label, without running a user-defined ``__str__``."""
    if type(label) in _PRIMITIVES or (_trusted(label) and _is_scalar_like(label)):
        return str(label)
    if type(label) is tuple:
        return "(" + ", ".join(_label_text(x) if type(x) is not str else repr(x) for x in label) + ")"
    return _plain(label)


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


def _sum_series(obj, s, query, clock):
    s["shape"] = [len(obj)]
    s["length"] = len(obj)
    s["dtype"] = str(obj.dtype)
    s.update(_index_info(obj.index))
    if obj.name is not None:
        s["repr"] = "name=" + _safe_repr(obj.name, 60)
    _field(s, clock, "stats", _series_stats, obj, query, clock)


def _sum_index(obj, s, query, clock):
    s["shape"] = [len(obj)]
    s["length"] = len(obj)
    s["dtype"] = str(obj.dtype)
    pd = _sys.modules["pandas"]
    if _cls_name(type(obj)) != "MultiIndex":
        _field(s, clock, "stats", lambda: _series_stats(pd.Series(obj._values, copy=False), query, clock))


def _column_values(df, i):
    pd = _sys.modules["pandas"]
    try:
        values = df._mgr.iget_values(i)
    except Exception:
        return df.iloc[:, i]
    return pd.Series(values, copy=False)


def _sum_dataframe(obj, s, query, clock, wanted=()):
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
        c = {"name": label if type(label) is str else _label_text(label), "dtype": dt}
        if type(label) is not str:
            c["label_repr"] = _safe_repr(label, 80)
        cols.append(c)
    s["columns"] = cols
    s["columns_truncated"] = n_cols > len(labels)
    max_cols = query.get("max_columns", 20)
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
            s["error"] = "deadline"
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


def _sum_keras_iterator(obj, s, query, clock):
    info: dict = {}
    for name in ("samples", "num_classes", "batch_size", "class_mode", "color_mode"):
        v = _static(obj, name)
        if type(v) in (int, str):
            info[name] = v
    ci = _static(obj, "class_indices")
    if type(ci) is dict:
        info["class_indices"] = {str(k): int(v) for k, v in list(ci.items())[:200] if type(v) is int}
    for name in ("image_shape", "target_size"):
        v = _static(obj, name)
        if type(v) in (tuple, list):
            info[name] = [int(d) if d is not None else None for d in v]
    s["iterator"] = info
    if "samples" in info:
        s["length"] = info["samples"]


def _sum_tf_dataset(obj, s, query, clock):
    _field(s, clock, "element_spec", lambda: _trunc(repr(obj.element_spec), 400))
    _field(s, clock, "cardinality", lambda: int(obj.cardinality().numpy()))


def _describe_item(item, depth=0):
    """(text, shape) of one dataset sample element: "Tensor[3,32,32] float32", "int"..."""
    t = type(item)
    if t in (tuple, list) and depth == 0:
        parts = [_describe_item(x, 1) for x in item[:10]]
        return ("(" if t is tuple else "[") + ", ".join(p[0] for p in parts) + (")" if t is tuple else "]"), [
            p[1] for p in parts
        ]
    if t is dict and depth == 0:
        parts = [(str(k), _describe_item(v, 1)) for k, v in list(item.items())[:10]]
        return "{" + ", ".join(k + ": " + p[0] for k, p in parts) + "}", [p[1] for _, p in parts]
    if _isa(item, "tensor"):
        shape = [int(d) for d in item.shape]
        return "Tensor[" + ",".join(map(str, shape)) + "] " + str(item.dtype).replace("torch.", ""), shape
    if _isa(item, "ndarray"):
        shape = [int(d) for d in item.shape]
        return "ndarray[" + ",".join(map(str, shape)) + "] " + str(item.dtype), shape
    if t in (int, float, bool, str):
        return t.__name__, None
    return _cls_name(t), None


def _own_generator_state(v, states):
    """Save the state of an RNG object a dataset holds (random.Random, NumPy Generator/RandomState, torch)."""
    names = _mro_names(v)
    if "random.Random" in names:
        st = v.getstate()
        states.append(lambda: v.setstate(st))
    elif _isa(v, "np_generator"):
        bit = v.bit_generator
        bst = bit.state
        states.append(lambda: setattr(bit, "state", bst))
    elif _isa(v, "np_random_state"):
        rst = v.get_state(legacy=False)
        states.append(lambda: v.set_state(rst))
    elif _isa(v, "torch_generator"):
        gst = v.get_state()
        states.append(lambda: v.set_state(gst))


def _restore_rng(held=()):
    """Capture Python, NumPy and torch RNG states (global and ``held`` objects); returns the restorer."""
    states: list = []
    for v in held:
        with contextlib.suppress(Exception):
            _own_generator_state(v, states)
    rnd = _sys.modules.get("random")
    if rnd is not None:
        st = rnd.getstate()
        states.append(lambda: rnd.setstate(st))
    np = _sys.modules.get("numpy")
    if np is not None:
        nst = np.random.get_state(legacy=False)
        states.append(lambda: np.random.set_state(nst))
    torch = _sys.modules.get("torch")
    if torch is not None:
        tst = torch.get_rng_state()
        states.append(lambda: torch.set_rng_state(tst))
        cuda = _sys.modules.get("torch.cuda")
        if cuda is not None and cuda.is_initialized():
            cst = cuda.get_rng_state_all()
            states.append(lambda: cuda.set_rng_state_all(cst))

    def restore():
        for fn in states:
            fn()

    return restore


def _sum_torch_dataset(obj, s, query, clock):
    info: dict = {}
    s["dataset"] = info
    saved = _instance_dict(obj)
    saved = dict(saved) if saved is not None else None
    restore = _restore_rng(list(saved.values()) if saved else ())
    try:
        n = None
        try:
            n = _guarded(clock, type(obj).__len__, obj) if _defining_class(obj, "__len__") else None
            if type(n) is not int:
                n = None
        except _Deadline:
            s["error"] = "deadline"
            return
        except Exception as exc:
            s["error"] = "__len__ raised " + _cls_name(type(exc))
        info["length"] = n
        s["length"] = n
        k = query.get("torch_samples", 10)
        if not n or k <= 0:
            return
        idx = sorted({(i * n) // k for i in range(min(k, n))})
        samples, texts, shapes = [], [], []
        getitem = type(obj).__getitem__
        for i in idx:
            if clock.left() <= 0:
                clock.hit = True
                s["error"] = "deadline"
                break
            try:
                item = _guarded(clock, getitem, obj, i)
            except _Deadline:
                s["error"] = "deadline"
                break
            except Exception as exc:
                why = f"{_cls_name(type(exc))}: {_trunc(_exc_text(exc), 120)}"
                s["error"] = f"__getitem__({i}) raised {why}"
                break
            text, shape = _describe_item(item)
            samples.append(item)
            texts.append(text)
            shapes.append(
                shape if type(shape) is list and (not shape or type(shape[0]) is not int) else [shape]
            )
        info["samples"] = texts
        info["sample_shapes"] = shapes
        collate = _lib("torch.utils.data._utils.collate", "default_collate")
        if samples and collate is not None:
            try:
                info["collated"] = _describe_item(_guarded(clock, collate, samples))[0]
            except _Deadline:
                s["error"] = "deadline"
            except Exception as exc:
                info["collated"] = f"error: {_cls_name(type(exc))}: {_trunc(_exc_text(exc), 160)}"
    finally:
        restore()
        if saved is not None:
            d = _instance_dict(obj)
            changed = d is not None and (
                len(d) != len(saved) or any(d.get(k, _MISSING) is not v for k, v in saved.items())
            )
            if changed:  # identity, not ==: comparing tensors or user objects would run their code
                d.clear()
                d.update(saved)


def _sum_iterable_dataset(obj, s, query, clock):
    s["dataset"] = {"dataset_type": _qualname(type(obj))}


def _sum_dataloader(obj, s, query, clock):
    info: dict = {}
    bs = _static(obj, "batch_size")
    if type(bs) is int:
        info["batch_size"] = bs
    dl = _static(obj, "drop_last")
    if type(dl) is bool:
        info["drop_last"] = dl
    ds = _static(obj, "dataset")
    if ds is not None:
        info["dataset_type"] = _qualname(type(ds))
        if not _isa(ds, "torch_iterable_dataset"):
            try:
                n = _guarded(clock, type(obj).__len__, obj)
                if type(n) is int:
                    info["length"] = n
                    s["length"] = n
            except _Deadline:
                s["error"] = "deadline"
            except Exception as exc:
                s["error"] = "__len__ raised " + _cls_name(type(exc))
    s["dataset"] = info


def _walk_torch(mod, out, depth=0):
    out.append(mod)
    if depth > 50 or len(out) > 5000:
        return
    d = _instance_dict(mod)
    children = d.get("_modules") if d else None
    if type(children) is dict:
        for child in children.values():
            if child is not None:
                _walk_torch(child, out, depth + 1)


def _sum_torch_module(obj, s, query, clock):
    mods: list = []
    _walk_torch(obj, mods)
    info: dict = {}
    linear = [m for m in mods if _isa(m, "torch_linear")]
    if linear:
        v = _static(linear[0], "in_features")
        info["in_features"] = v if type(v) is int else None
        v = _static(linear[-1], "out_features")
        info["out_features"] = v if type(v) is int else None
    layers = []
    for m in mods[1:21] if len(mods) > 1 else mods:
        name = _cls_name(type(m))
        if m in linear:
            name += "({}->{})".format(_static(m, "in_features"), _static(m, "out_features"))
        layers.append(name)
    info["layers"] = layers
    for m in mods:
        params = (_instance_dict(m) or {}).get("_parameters")
        if type(params) is dict:
            for p in params.values():
                if p is not None:
                    info["device"] = str(p.device)
                    break
        if "device" in info:
            break
    s["nn"] = info


def _keras_shape(v):
    if type(v) is tuple and all(d is None or type(d) is int for d in v):
        return list(v)
    if type(v) is list and v and type(v[0]) is tuple:
        return _keras_shape(v[0])
    return None


def _sum_keras_model(obj, s, query, clock):
    info: dict = {}
    for name, key in (("input_shape", "input_shape"), ("output_shape", "output_shape")):
        try:
            v = _keras_shape(_lib_attr(obj, name))
            if v is not None:
                info[key] = v
        except Exception:
            pass
    layers = None
    with contextlib.suppress(Exception):
        layers = list(_lib_attr(obj, "layers"))
    if layers:
        info["layers"] = [_cls_name(type(layer)) for layer in layers[:20]]
        dense = [layer for layer in layers if _cls_name(type(layer)) == "Dense"]
        if dense:
            units = _static(dense[-1], "units")
            info["last_units"] = units if type(units) is int else None
            act = _static(dense[-1], "activation")
            if act is not None:
                info["last_activation"] = _fn_name(act)
    loss = _static(obj, "loss")
    if loss is None:
        loss = _static(obj, "_loss")
    if loss is not None:
        info["loss"] = loss if type(loss) is str else _fn_name(loss)
    s["nn"] = info


def _fn_name(f):
    if type(f) is str:
        return f
    if type(f) in (_types.FunctionType, _types.BuiltinFunctionType, _types.MethodType):
        return f.__name__
    d = _instance_dict(f)
    for src in (d or {}, getattr(type(f), "__dict__", {})):
        if "__name__" in src and type(src["__name__"]) is str:
            return src["__name__"]
    try:
        name = _inspect.getattr_static(f, "__name__", None)
        if type(name) is str:
            return name
    except Exception:
        pass
    return _cls_name(type(f))


def _sum_history(obj, s, query, clock):
    h = _static(obj, "history")
    if type(h) is dict:
        s["nn"] = {"history_keys": [str(k) for k in list(h)[:50]]}


def _short_list(v, privacy):
    if v is None or not _trusted(v):  # iterating a user object would run its __iter__
        return None
    try:
        items = v.tolist() if hasattr(type(v), "tolist") else list(v)
    except Exception:
        return None
    return [_safe_repr(x, 60) if not privacy or type(x) is not str else "<str>" for x in items[:200]]


def _estimator_fitted(obj):
    d = _instance_dict(obj) or {}
    fitted = [k for k in d if k.endswith("_") and not k.startswith("__")]
    return bool(fitted)


def _sum_estimator(obj, s, query, clock):
    privacy = query.get("privacy")
    info: dict = {}
    steps = _static(obj, "steps")
    target = obj
    first = obj
    if type(steps) is list and steps and all(type(st) is tuple and len(st) == 2 for st in steps):
        info["steps"] = [str(name) + ": " + _cls_name(type(est)) for name, est in steps[:30]]
        real = [est for _, est in steps if est is not None and est != "passthrough"]
        if real:
            target = real[-1]
            first = real[0]
        info["final_step"] = _cls_name(type(target))
        info["fitted"] = _estimator_fitted(target) if target is not obj else None
    else:
        info["fitted"] = _estimator_fitted(obj)
    v = _static(first, "n_features_in_")
    if type(v) is int or (v is not None and _trusted(v) and _is_scalar_like(v)):
        info["n_features_in"] = int(v)
    names = _static(first, "feature_names_in_")
    if names is not None and _trusted(names):
        items = names.tolist() if hasattr(type(names), "tolist") else list(names)
        info["feature_names_in"] = [
            x if type(x) is str else _label_text(x) for x in items[:_MAX_COLUMN_NAMES]
        ]
    v = _static(target, "classes_")
    if v is not None:
        info["classes"] = _short_list(v, privacy)
    v = _static(target, "n_outputs_")
    if type(v) is int:
        info["n_outputs"] = v
    if _trusted(obj):
        try:
            params = obj.get_params(deep=False)
            info["params"] = {str(k): _safe_repr(val, 60) for k, val in list(params.items())[:40]}
        except Exception:
            pass
    s["estimator"] = info


def _sum_mapping(obj, s, query, clock):
    n = dict.__len__(obj)
    s["length"] = n
    cap = query.get("max_list_items", 50)
    keys = []
    vtypes: list = []
    for i, (k, v) in enumerate(dict.items(obj)):
        if i >= cap:
            break
        keys.append(_safe_repr(k, 60) if not (query.get("privacy") and type(k) is not str) else "<key>")
        tn = _cls_name(type(v))
        if tn not in vtypes and len(vtypes) < 10:
            vtypes.append(tn)
    s["keys"] = keys
    s["element_types"] = vtypes


def _sum_sequence(obj, s, query, clock, base):
    n = base.__len__(obj)
    s["length"] = n
    cap = query.get("max_list_items", 50)
    types: list = []
    if base in (list, tuple):
        items = base.__getitem__(obj, slice(0, cap))
    else:
        items = []
        for i, v in enumerate(base.__iter__(obj)):
            if i >= cap:
                break
            items.append(v)
    for v in items:
        tn = _cls_name(type(v))
        if tn not in types and len(types) < 10:
            types.append(tn)
    s["element_types"] = types
    if base in (list, tuple) and not query.get("privacy") and n <= cap:
        vals = _exact_values(items)
        if vals is not None:
            s["values"] = vals
        r = _safe_repr(base(items))
        if "object>" not in r:
            s["repr"] = r


def _exact_values(items):
    """The items themselves when every one is a plain str (<= 200 chars), int (< 2**62) or finite float."""
    out = []
    for v in items:
        t = type(v)
        ok = (
            (t is str and str.__len__(v) <= 200)
            or (t is int and -(2**62) < v < 2**62)
            or (t is float and float.__abs__(v) < float("inf"))  # False for NaN
        )
        if not ok:
            return None
        out.append(v)
    return out


def _sum_scalar(obj, s, query, clock):
    t = type(obj)
    if t is str or str in _mro(obj):
        s["length"] = str.__len__(obj)
        if not query.get("privacy"):
            s["value"] = _trunc(str.__str__(obj), _VALUE_MAX)
    elif t is bytes:
        s["length"] = bytes.__len__(obj)
    else:
        s["value"] = _safe_repr(obj, _VALUE_MAX)


def _params(sig):
    out = []
    for p in sig.parameters.values():
        out.append({"name": p.name, "kind": p.kind.name, "has_default": p.default is not p.empty})
    return out


def _sig_text(sig):
    parts = []
    seen_kwonly = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            parts.append("*" + p.name)
            seen_kwonly = True
            continue
        if p.kind == p.VAR_KEYWORD:
            parts.append("**" + p.name)
            continue
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        text = p.name
        if p.default is not p.empty:
            text += "=" + _safe_repr(p.default, 40)
        parts.append(text)
        if p.kind == p.POSITIONAL_ONLY:
            nxt = list(sig.parameters.values())
            if nxt.index(p) == len(nxt) - 1 or nxt[nxt.index(p) + 1].kind != p.POSITIONAL_ONLY:
                parts.append("/")
    return "(" + ", ".join(parts) + ")"


def _function_module(obj):
    """``__module__`` of a plain Python or builtin function (a slot, so ``getattr_static`` misses it)."""
    if type(obj) in (_types.FunctionType, _types.BuiltinFunctionType):
        mod = obj.__module__  # a C-level slot of a real function: runs no user code
        return mod if type(mod) is str else None
    return None


def _sum_callable(obj, s, query, clock, drop_self=False):
    s["callable"] = True
    mod = _static(obj, "__module__")
    if type(mod) is not str:
        mod = _function_module(obj)
    if type(mod) is str:
        s["module"] = mod
    try:
        sig = _inspect.signature(obj, follow_wrapped=True)
    except Exception:
        return
    if drop_self:
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    s["signature"] = _trunc(_sig_text(sig), 300)
    s["params"] = _params(sig)


def _sum_class(obj, s, query, clock):
    s["module"] = _cls_module(obj)
    s["repr"] = "<class " + _qualname(obj) + ">"
    s["callable"] = True
    try:  # reads __signature__/__init__/__new__ statically; calls none of them
        sig = _inspect.signature(obj)
    except Exception:
        return
    s["signature"] = _trunc(_sig_text(sig), 300)
    s["params"] = _params(sig)


def _sum_module(obj, s, query, clock):
    d = _instance_dict(obj) or {}
    name = d.get("__name__")
    s["module"] = name if type(name) is str else None
    s["repr"] = "<module " + repr(name) + ">"


def _sum_other(obj, s, query, clock):
    off_main = _threading.current_thread() is not _threading.main_thread()
    if not _trusted(obj) or (off_main and _defining_class(obj, "__iter__") is not None):
        s["repr"] = _plain(obj)  # a container's repr runs its items' __repr__; no alarm guards a subshell
        return
    try:
        r = _guarded(clock, repr, obj)
        s["repr"] = _trunc(r, _REPR_MAX) if type(r) is str else _plain(obj)
    except _Deadline:
        s["repr"] = _plain(obj)
        s["error"] = "deadline"
    except Exception as exc:
        s["repr"] = _plain(obj)
        s["error"] = "__repr__ raised " + _cls_name(type(exc))


def _classify(obj):
    """(kind, summariser) from type(obj).__mro__, without running any of obj's code."""
    t = type(obj)
    trusted = _trusted(obj)
    if obj is None:
        return "none", None
    if t is bool:
        return "bool", _sum_scalar
    if t is int:
        return "int", _sum_scalar
    if t is float:
        return "float", _sum_scalar
    if t is complex:
        return "complex", _sum_scalar
    if t is str:
        return "str", _sum_scalar
    if t is bytes:
        return "bytes", _sum_scalar
    if t is _types.ModuleType or _types.ModuleType in _mro(obj):
        return "module", _sum_module
    if _is_class(obj):
        return "class", _sum_class
    if t in (_types.FunctionType, _types.BuiltinFunctionType, _types.MethodType, _types.BuiltinMethodType):
        return "function", _sum_callable
    names = _mro_names(obj)
    nameset = set(names)
    known = _kinds_of(obj)
    frame = _frm_classify(obj)  # Polars, Dask, Spark: schema only (frames.py)
    if frame is not None:
        return frame
    if trusted:
        if "ndarray" in known:
            return "ndarray", _sum_ndarray
        if "np_generic" in known:
            np_kind = "bool" if "np_bool" in known else None
            if np_kind is None:
                np_kind = (
                    "int"
                    if "np_integer" in known
                    else "float"
                    if "np_floating" in known
                    else "other"
                )
            return np_kind, _sum_scalar if np_kind != "other" else _sum_other
        if "tensor" in known:
            return "tensor", _sum_tensor
        if "dataframe" in known:
            return "dataframe", _sum_dataframe
        if "series" in known:
            return "series", _sum_series
        if "index" in known:
            return "index", _sum_index
        top = _cls_module(t).split(".")[0]
        if top == "tensorflow" and (
            "EagerTensor" in {_cls_name(c) for c in _mro(obj)}
            or any(n.endswith((".Tensor", ".Variable", "BaseResourceVariable")) for n in names)
        ):
            return "tf_tensor", _sum_tf_tensor
        if any(n.endswith("data.ops.dataset_ops.DatasetV2") for n in names):
            return "tf_dataset", _sum_tf_dataset
    # Library bases that user classes legitimately extend: read through safe accessors only.
    if "dataloader" in known:
        return "dataloader", _sum_dataloader
    if "torch_iterable_dataset" in known:
        return "torch_iterable_dataset", _sum_iterable_dataset
    if "torch_dataset" in known:
        return "torch_dataset", _sum_torch_dataset
    if "torch_module" in known:
        return "torch_module", _sum_torch_module
    if "estimator" in known:
        return "estimator", _sum_estimator
    if _has_base_prefix(obj, "Model", ("keras", "tf_keras", "tensorflow")):
        return "keras_model", _sum_keras_model
    if _has_base_prefix(obj, "History", ("keras", "tf_keras", "tensorflow")):
        return "other", _sum_history
    if _has_base_prefix(obj, "Iterator", ("keras", "tf_keras", "tensorflow")) and (
        _static(obj, "batch_size") is not None
    ):
        return "keras_iterator", _sum_keras_iterator
    if dict in _mro(obj):
        return "dict", _sum_mapping
    if list in _mro(obj):
        return "list", lambda o, s, q, c: _sum_sequence(o, s, q, c, list)
    if tuple in _mro(obj):
        return "tuple", lambda o, s, q, c: _sum_sequence(o, s, q, c, tuple)
    if set in _mro(obj) or frozenset in _mro(obj):
        base = set if set in _mro(obj) else frozenset
        return "set", lambda o, s, q, c: _sum_sequence(o, s, q, c, base)
    if str in _mro(obj):
        return "str", _sum_scalar
    if t is _types.GeneratorType or _defining_class(obj, "__next__") is not None:
        return "generator", None
    if "functools.partial" in nameset:
        return "function", _sum_callable
    return "other", _sum_other


def _summarise(obj, query, clock, wanted=()):
    clock.begin_object()
    t = type(obj)
    s = {"type": _qualname(t), "kind": "other"}
    try:
        kind, fn = _classify(obj)
    except Exception as exc:
        s.update(kind="error", error="classify: " + _cls_name(type(exc)), repr=_plain(obj))
        return s
    s["kind"] = kind
    if clock.request_over():
        clock.hit = True
        s["error"] = "deadline"
        return s
    if fn is None:
        if kind == "generator":
            s["repr"] = _plain(obj)
        return s
    try:
        if fn is _sum_dataframe:
            fn(obj, s, query, clock, wanted)
        else:
            fn(obj, s, query, clock)
    except _Deadline:
        s["error"] = "deadline"
    except RecursionError:
        s["error"] = "RecursionError"
    except Exception as exc:
        s["error"] = _cls_name(type(exc)) + ": " + _trunc(_exc_text(exc), 160)
    if s.get("error") and s["kind"] in ("other",) and "repr" not in s:
        s["repr"] = _plain(obj)
    return s


# ------------------------------------------------------------------------------------------------
# Facts: attribute chains, subscripts, paths, modules
# ------------------------------------------------------------------------------------------------


def _module_miss(mod, attr):
    """AttributeFact for a static miss on a module (see the module docstring for the rule)."""
    d = _instance_dict(mod) or {}
    name = d.get("__name__")
    if _dynamic_class(mod) is not None:  # a lazy loader module (TF's ``keras``, importlib's _LazyModule)
        return {"exists": None, "dynamic": True}
    if "__getattr__" not in d:
        return {"exists": False}
    full = f"{name}.{attr}"
    if full in _sys.modules:
        return {"exists": True, "dynamic": True}
    if "__path__" in d:
        try:
            if _imputil.find_spec(full) is not None:
                return {"exists": None, "dynamic": True}
        except Exception:
            return {"exists": None, "dynamic": True}
    if type(name) is str and name.split(".")[0] in _TRUSTED:
        dirfn = d.get("__dir__")
        if callable(dirfn):
            try:
                listed = dirfn()
                if attr in listed:
                    return {"exists": None, "dynamic": True}
            except Exception:
                return {"exists": None, "dynamic": True}
        return {"exists": False, "dynamic": True}
    return {"exists": None, "dynamic": True}


#: Classes whose ``__getattribute__`` only reads what ``getattr_static`` sees (plus ``None``: none at all).
_STATIC_GETATTRIBUTE = (object, None, type, _types.ModuleType)


def _dynamic_class(obj):
    """The first class of ``type(obj)`` past the static ones defining ``__getattr__``/``__getattribute__``."""
    for cls in _mro(obj):
        if cls in _STATIC_GETATTRIBUTE:
            continue
        try:
            cd = cls.__dict__
        except Exception:
            return cls
        if "__getattr__" in cd or "__getattribute__" in cd:
            return cls
    return None


def _instance_miss(owner, attr):
    """AttributeFact for a static miss on an instance or class."""
    if _defining_class(owner, "__getattribute__") not in _STATIC_GETATTRIBUTE:
        # statsmodels results wrappers, numpy recarray/record fields: answered by code, not stored
        return {"exists": None, "dynamic": True}
    if _isa(owner, "ndframe") and _trusted(owner):
        if attr.startswith("_"):
            return {"exists": False, "dynamic": True}
        try:
            holds = bool(owner._info_axis._can_hold_identifiers_and_holds_name(attr))
        except Exception:
            return {"exists": None, "dynamic": True}
        return {"exists": holds, "dynamic": True}
    if _isa(owner, "torch_module"):
        d = _instance_dict(owner) or {}
        for key in ("_parameters", "_buffers", "_modules"):
            sub = d.get(key)
            if type(sub) is dict and attr in sub:
                return {"exists": True, "dynamic": True}
        if _defining_class(owner, "__getattr__") is not None and not _is_trusted_cls(
            _defining_class(owner, "__getattr__")
        ):
            return {"exists": None, "dynamic": True}
        return {"exists": False, "dynamic": True}
    if _is_class(owner):
        meta_getattr = None
        for cls in type.__dict__["__mro__"].__get__(type(owner)):
            if "__getattr__" in cls.__dict__:
                meta_getattr = cls
        if meta_getattr is not None:
            return {"exists": None, "dynamic": True}
        return {"exists": False}
    if _defining_class(owner, "__getattr__") is not None:
        return {"exists": None, "dynamic": True}
    return {"exists": False}


def _torch_member(owner, attr):
    """A torch ``nn.Module`` parameter, buffer or submodule: the plain entries its ``__getattr__`` returns."""
    if not _isa(owner, "torch_module"):
        return _MISSING
    d = _instance_dict(owner) or {}
    for key in ("_parameters", "_buffers", "_modules"):
        sub = d.get(key)
        if type(sub) is dict and attr in sub:
            return sub[attr]
    return _MISSING


def _resolve_chain(base_obj, attrs):
    """Walk ``attrs`` statically; yields (prefix_len, fact, value_or_MISSING, summarisable, drop_self)."""
    owner = base_obj
    out = []
    for i, attr in enumerate(attrs):
        owner_kind = None
        with contextlib.suppress(Exception):
            owner_kind = _classify(owner)[0]
        fact = {"owner_type": _qualname(type(owner)), "owner_kind": owner_kind}
        inst = _instance_dict(owner)
        is_module = _types.ModuleType in _mro(owner)
        try:
            if inst is not None and attr in inst and not _is_class(owner):
                value, plain, drop_self = inst[attr], True, False
            else:
                value = _inspect.getattr_static(owner, attr, _MISSING)
                drop_self = False
                if value is _MISSING:
                    plain = False
                elif is_module or _is_class(owner):
                    plain = not _is_descriptor(value) or type(value) is _types.FunctionType
                else:
                    if type(value) is _types.FunctionType:
                        plain, drop_self = True, True
                    else:
                        plain = not _is_descriptor(value)
        except Exception:
            fact["exists"] = None
            out.append((i + 1, fact, _MISSING, False, False))
            return out
        if value is _MISSING:
            fact.update(_module_miss(owner, attr) if is_module else _instance_miss(owner, attr))
            held = _torch_member(owner, attr) if fact.get("exists") is True and not is_module else _MISSING
            if held is not _MISSING:
                out.append((i + 1, fact, held, True, False))
                owner = held
                continue
            if fact.get("exists") is True and is_module:
                sub = _sys.modules.get("{}.{}".format((inst or {}).get("__name__"), attr))
                if sub is not None:
                    out.append((i + 1, fact, sub, True, False))
                    owner = sub
                    continue
            out.append((i + 1, fact, _MISSING, False, False))
            return out
        fact["exists"] = True
        out.append((i + 1, fact, value, plain, drop_self))
        if not plain or drop_self:
            # a property, descriptor or bound method: what follows cannot be read without running it
            for j in range(i + 1, len(attrs)):
                out.append((j + 1, {"exists": None}, _MISSING, False, False))
            return out
        owner = value
    return out


def _parse_subscript(text):
    """``"df['a']"`` -> (["df"], accessor, key) with a literal key, or None."""
    try:
        node = _ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if type(node) is not _ast.Subscript:
        return None
    try:
        key = _ast.literal_eval(node.slice)
    except Exception:
        return None
    target = node.value
    parts = []
    while type(target) is _ast.Attribute:
        parts.append(target.attr)
        target = target.value
    if type(target) is not _ast.Name:
        return None
    parts.append(target.id)
    parts = parts[::-1]
    accessor = None
    if len(parts) > 1 and parts[-1] in ("loc", "iloc", "at", "iat"):
        accessor = parts.pop()
    return parts, accessor, key


def _lookup_static(ns, parts):
    """Object at ``parts`` via plain stored values only, or _MISSING."""
    if parts[0] not in ns:
        return _MISSING
    obj = ns[parts[0]]
    if len(parts) == 1:
        return obj
    steps = _resolve_chain(obj, parts[1:])
    if len(steps) != len(parts) - 1:
        return _MISSING
    _, _fact, value, plain, drop_self = steps[-1]
    return value if plain and not drop_self else _MISSING


def _subscript_value(obj, accessor, key):
    """The value of ``obj[key]`` where that is pure library code, else _MISSING."""
    if accessor is not None:
        return _MISSING
    mro = _mro(obj)
    if dict in mro:
        if type(key) in (str, int, float, bool, tuple, type(None)) and dict.__contains__(obj, key):
            return dict.__getitem__(obj, key)
        return _MISSING
    if list in mro or tuple in mro:
        base = list if list in mro else tuple
        if type(key) is int and -base.__len__(obj) <= key < base.__len__(obj):
            return base.__getitem__(obj, key)
        return _MISSING
    if (
        _trusted(obj)
        and _isa(obj, "dataframe")
        and type(key) in (str, int, float, bool, tuple)
    ):
        cols = obj.columns
        if key in cols:
            loc = cols.get_loc(key)
            if type(loc) is int:
                return _column_values_named(obj, loc, key)
    return _MISSING


def _column_values_named(df, loc, key):
    pd = _sys.modules["pandas"]
    try:
        values = df._mgr.iget_values(loc)
        return pd.Series(values, index=df.index, name=key, copy=False)
    except Exception:
        return df.iloc[:, loc]


def _find_spec_static(name):
    """Whether module ``name`` is importable, without importing anything; None when undecidable."""
    if name in _sys.modules:
        return True
    parts = name.split(".")
    if len(parts) == 1:
        try:
            return _imputil.find_spec(name) is not None
        except Exception:
            return None
    parent = ".".join(parts[:-1])
    if parent in _sys.modules:
        try:
            return _imputil.find_spec(name) is not None
        except Exception:
            return None
    # walk the package directories with the path finder: finds, never imports
    try:
        spec = _imputil.find_spec(parts[0])
    except Exception:
        return None
    if spec is None:
        return False
    for i in range(1, len(parts)):
        locations = spec.submodule_search_locations
        if locations is None:
            return False
        spec = _machinery.PathFinder.find_spec(".".join(parts[: i + 1]), list(locations))
        if spec is None:
            # packages may extend __path__ when imported, so a miss is proof only for trusted libraries
            # that do not (TensorFlow builds virtual subpackages such as tensorflow.keras)
            return False if parts[0] in _TRUSTED and parts[0] != "tensorflow" else None
    return True


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------


def _shell():
    ipy = _sys.modules.get("IPython")
    get = getattr(ipy, "get_ipython", None) if ipy is not None else None
    return get() if get is not None else None


def _versions():
    pkgs = {}
    for name in _VERSION_PACKAGES:
        mod = _sys.modules.get(name)
        if mod is None:
            continue
        v = (_instance_dict(mod) or {}).get("__version__")
        if type(v) is str:
            pkgs[name] = v
    return {"python": _platform.python_version(), "packages": pkgs}


def _imported():
    std: frozenset = getattr(_sys, "stdlib_module_names", frozenset())
    tops = set()
    for name in list(_sys.modules):
        top = name.split(".")[0]
        if top.startswith(("_", "pydev")) or top in std or top in _KERNEL_INFRA:
            continue
        tops.add(top)
    return sorted(tops)


def snapshot(query_json):
    """Summaries and facts for one target cell's query (a ``runtime.ProbeQuery`` as JSON)."""
    try:
        query = _json.loads(query_json)
    except Exception as exc:
        return _JSONResult({"ok": False, "errors": [f"bad query: {exc}"]})
    try:
        return _JSONResult(_snapshot(query))
    except BaseException as exc:  # never let a probe failure surface as a kernel error
        if type(exc) in (KeyboardInterrupt, SystemExit):
            raise
        return _JSONResult(
            {"ok": False, "errors": [f"probe failed: {_cls_name(type(exc))}: {_exc_text(exc)}"]}
        )


def _generation(shell):
    """The shell's execution count; beside a running cell (a subshell thread), that cell's own count.

    IPython 9 counts a cell before running it, IPython 8 after, so a probe beside cell N reads N+1
    under 9: report N under both, as the cell's ``execute_input`` said.
    """
    count = getattr(shell, "execution_count", None) if shell is not None else None
    if type(count) is not int or _threading.current_thread() is _threading.main_thread():
        return count
    version = getattr(_sys.modules.get("IPython"), "version_info", None)
    if type(version) is tuple and version and type(version[0]) is int and version[0] >= 9:
        return count - 1
    return count


def _snapshot(query):
    clock = _Clock(float(query.get("request_budget_s", 2.0)), float(query.get("object_budget_s", 0.5)))
    shell = _shell()
    ns = shell.user_ns if shell is not None else _sys.modules["__main__"].__dict__
    out: dict = {
        "ok": True,
        "generation": _generation(shell),
        "variables": {},
        "attributes": {},
        "paths": {},
        "undefined": [],
        "modules": {},
        "errors": [],
    }
    try:
        out["cwd"] = _os.getcwd()
    except Exception:
        out["cwd"] = None
    variables: dict = out["variables"]

    # which DataFrame columns the cell subscripts: their stats are computed even past max_columns
    wanted: dict = {}
    subs = []
    for text in query.get("subscripts", []):
        parsed = _parse_subscript(text)
        subs.append((text, parsed))
        if parsed is not None:
            keys = parsed[2] if type(parsed[2]) is list else [parsed[2]]
            wanted.setdefault(".".join(parsed[0]), []).extend(keys)

    for name in query.get("names", []):
        if name in ns:
            variables[name] = _summarise(ns[name], query, clock, wanted.get(name, ()))
        elif not hasattr(_builtins, name):
            out["undefined"].append(name)

    for chain in query.get("chains", []):
        parts = chain.split(".")
        if len(parts) < 2 or parts[0] not in ns:
            if (
                parts
                and parts[0] not in ns
                and not hasattr(_builtins, parts[0])
                and parts[0] not in out["undefined"]
            ):
                out["undefined"].append(parts[0])
            continue
        base = ns[parts[0]]
        if parts[0] not in variables:
            variables[parts[0]] = _summarise(base, query, clock, wanted.get(parts[0], ()))
        try:
            steps = _resolve_chain(base, parts[1:])
        except Exception as exc:
            out["errors"].append(f"chain {chain}: {_cls_name(type(exc))}")
            continue
        for n_attrs, fact, value, plain, drop_self in steps:
            key = ".".join(parts[: n_attrs + 1])
            out["attributes"][key] = {k: v for k, v in fact.items() if v is not None or k == "exists"}
            if value is not _MISSING and plain and key not in variables:
                if drop_self:
                    s = {"type": _qualname(type(value)), "kind": "function"}
                    clock.begin_object()
                    _sum_callable(value, s, query, clock, drop_self=True)
                    variables[key] = s
                else:
                    variables[key] = _summarise(value, query, clock, wanted.get(key, ()))

    for text, parsed in subs:
        if parsed is None or text in variables:
            continue
        parts, accessor, key = parsed
        try:
            target = _lookup_static(ns, parts)
            if target is _MISSING:
                continue
            value = _subscript_value(target, accessor, key)
        except Exception as exc:
            out["errors"].append(f"subscript {text}: {_cls_name(type(exc))}")
            continue
        if value is not _MISSING:
            variables[text] = _summarise(value, query, clock)

    index_labels = query.get("index_labels") or {}
    for text, labels in index_labels.items() if type(index_labels) is dict else ():
        summ = variables.get(text)
        if type(text) is not str or summ is None or summ.get("kind") not in ("dataframe", "series"):
            continue
        clock.begin_object()
        try:
            target = _lookup_static(ns, text.split("."))
            if target is not _MISSING:
                summ["index_has"] = _index_has(target, labels, clock)
        except _Deadline:
            summ.setdefault("error", "deadline")
        except Exception as exc:
            out["errors"].append(f"index labels of {text}: {_cls_name(type(exc))}")

    for p in query.get("paths", []):
        try:
            out["paths"][p] = _os.path.exists(_os.path.expanduser(p))
        except Exception:
            out["paths"][p] = False
    for m in query.get("modules", []):
        found = _find_spec_static(m)
        if found is not None:
            out["modules"][m] = found
    out["imported"] = _imported()
    out["versions"] = _versions()
    out["deadline_hit"] = clock.hit
    out["elapsed_ms"] = round((_time.monotonic() - clock.start) * 1000, 2)
    return out
