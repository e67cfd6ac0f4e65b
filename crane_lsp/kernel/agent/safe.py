"""Reading hostile objects without running their code: MRO type tests, static attributes, safe reprs.

Type tests walk ``type(obj).__mro__`` (no ``isinstance``, no ``__class__``); attributes are read with
``inspect.getattr_static``; a property or method is called only when the class that defines it comes
from a trusted library (``_TRUSTED``). Library classes are found in modules already in
``sys.modules``: a library the user has not imported cannot be behind any of their objects.
"""

import inspect as _inspect
import math as _math
import sys as _sys
import types as _types

_MISSING = object()


class _Untrusted(Exception):
    """A name that is not a trusted library's: reading it could run user code."""


#: Top-level packages whose classes' dunders and properties may be called: library code. The library
#: behind every ``ObjectKind`` is here or read from its schema only (``frames._FRM_LIBS``): a kind of an
#: untrusted library would never be given, and nothing would say so (``tests/test_probe_kinds.py`` does).
_TRUSTED_TEXT = (
    "builtins collections datetime decimal fractions pathlib re enum functools itertools types numpy "
    "pandas scipy sklearn torch torchvision tensorflow keras tf_keras matplotlib seaborn statsmodels "
    "PIL xgboost lightgbm"
)


_TRUSTED = frozenset(_TRUSTED_TEXT.split())
#: Top-level packages whose Keras classes (``Model``, ``History``, ``Iterator``) are recognised by name.
_KERAS_TOPS = ("keras", "tf_keras", "tensorflow")


_REPR_MAX = 200


_VALUE_MAX = 200


_EXAMPLE_MAX = 40


_MAX_COLUMN_NAMES = 2000


_CATEGORICAL_MAX = 50


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


def _known_class(key, table=_KNOWN_CLASSES):
    """The library class ``table[key]`` names, from a module already imported, or None; never imports.

    Reads the module's ``__dict__`` directly, so a module-level ``__getattr__`` (lazy submodules)
    never runs.
    """
    for module, name in table[key]:
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


def _label_text(label):
    """str() of a non-str column label, without running a user-defined ``__str__``."""
    if type(label) in _PRIMITIVES or (_trusted(label) and _is_scalar_like(label)):
        return str(label)
    if type(label) is tuple:
        return "(" + ", ".join(_label_text(x) if type(x) is not str else repr(x) for x in label) + ")"
    return _plain(label)


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
