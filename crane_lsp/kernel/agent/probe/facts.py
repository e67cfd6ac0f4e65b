"""Facts about the cell's expressions: attribute chains, literal subscripts, importable modules.

Missing attributes (``AttributeFactWire``): a static miss is proof only when no ``__getattr__`` can
answer, and no ``__getattribute__`` beyond ``object``/``type``/``module`` (statsmodels results
wrappers, NumPy ``recarray``/``record`` fields), nor a module class of its own (TensorFlow's lazy
``keras``): those read ``exists=None``. Known library ``__getattr__`` hooks are replayed exactly
(pandas column access, torch ``nn.Module`` parameters/buffers/submodules). A module-level
``__getattr__`` (PEP 562) is never called (it may import, warn or compute, e.g. matplotlib's serves
``__version__`` by asking the installed package's metadata); it is read statically: a findable submodule,
a name in the module's ``__dir__`` (trusted libraries only) or a name the hook mentions (a string
constant of its code, a key of a container it reads from its closure or from the module's globals, e.g.
matplotlib's ``props`` or torch's ``_lazy_modules``) reads ``exists=None``: it may be served. numpy's
top-level hook is replayed exactly (names in ``__former_attrs__``/``__expired_attributes__`` raise, as
does any name the hook does not mention: ``np.float``, ``np.flot`` read ``exists=False``). Any other
name of a trusted library module reads ``exists=False`` with ``hook`` set (a Warning, never certain: the
hook was not run); an untrusted module's hook reads ``exists=None``. ``dynamic`` is True in all those
cases.
"""

import ast as _ast
import contextlib
import importlib.machinery as _machinery
import importlib.util as _imputil
import inspect as _inspect
import sys as _sys
import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.probe.summaries import (
        _classify,
    )
    from crane_lsp.kernel.agent.safe import (
        _MISSING,
        _TRUSTED,
        _cls_name,
        _defining_class,
        _instance_dict,
        _is_class,
        _is_descriptor,
        _is_trusted_cls,
        _isa,
        _known_class,
        _mro,
        _qualname,
        _trusted,
    )
    from crane_lsp.kernel.agent.wire import (
        AttributeFactWire,
    )


def _dynamic(exists: bool | None) -> AttributeFactWire:
    """A fact decided (or left open) around a dynamic attribute provider: a miss there is not proof."""
    return {"exists": exists, "dynamic": True}


def _module_miss(mod, attr) -> AttributeFactWire:
    """AttributeFact for a static miss on a module (see the module docstring for the rule)."""
    d = _instance_dict(mod) or {}
    name = d.get("__name__")
    if _dynamic_class(mod) is not None:  # a lazy loader module (TF's ``keras``, importlib's _LazyModule)
        return _dynamic(None)
    if "__getattr__" not in d:
        return {"exists": False}
    full = f"{name}.{attr}"
    if full in _sys.modules:
        return _dynamic(True)
    if "__path__" in d:
        try:
            if _imputil.find_spec(full) is not None:
                return _dynamic(None)
        except Exception:
            return _dynamic(None)
    if type(name) is str and name.split(".")[0] in _TRUSTED:
        dirfn = d.get("__dir__")
        if callable(dirfn):
            try:
                listed = dirfn()
                if attr in listed:
                    return _dynamic(None)
            except Exception:
                return _dynamic(None)
        hook = _hook_function(d["__getattr__"])
        numpy = hook is not None and name == "numpy" and _cls_module_of(hook) == "numpy"
        if numpy and any(_holds_name(d.get(t), attr) for t in ("__former_attrs__", "__expired_attributes__")):
            return _dynamic(False)  # numpy's hook raises for its removed aliases (np.float, np.int)
        if hook is None or _hook_mentions(hook, d, attr):
            return _dynamic(None)
        if numpy:
            return _dynamic(False)  # numpy's hook raises for every name it does not serve by name
        return {"exists": False, "dynamic": True, "hook": f"{name}.__getattr__"}
    return _dynamic(None)


def _cls_module_of(fn):
    """The ``__module__`` a plain function stores (an exact ``FunctionType``: no hook can answer)."""
    mod = fn.__module__
    return mod if type(mod) is str else None


def _hook_function(hook):
    """The plain function behind a module ``__getattr__``: itself, or what ``functools`` wrappers
    (``functools.cache``, ``lru_cache``, ``wraps``) keep in ``__wrapped__``, read statically; else None."""
    for _ in range(5):
        if type(hook) is _types.FunctionType:
            return hook
        inner = (_instance_dict(hook) or {}).get("__wrapped__")
        if inner is None:
            return None
        hook = inner
    return None


def _holds_name(value, attr):
    """Whether ``value``, an exact builtin container, holds the name ``attr`` (no user code runs)."""
    t = type(value)
    if t is dict or t is set or t is frozenset:
        try:
            return t.__contains__(value, attr)  # str keys hash and compare as builtins
        except Exception:
            return True
    if t is list or t is tuple:
        return any(type(x) is str and x == attr for x in value[:10_000])
    return False


def _hook_mentions(fn, module_dict, attr):
    """Whether the module ``__getattr__`` ``fn`` may serve ``attr`` by name: a string constant of its code
    (or of code nested in it), or a key/item of a container in its closure or among the module's globals
    its code reads. Such a name may be served or may raise on purpose; either way a miss is no proof."""
    codes = [fn.__code__]
    seen = 0
    while codes and seen < 50:
        code = codes.pop()
        seen += 1
        for const in code.co_consts:
            if type(const) is str and const == attr:
                return True
            if type(const) is _types.CodeType:
                codes.append(const)
            elif type(const) in (tuple, frozenset) and attr in [c for c in const if type(c) is str]:
                return True
        for gname in code.co_names:
            if gname in module_dict and _holds_name(module_dict[gname], attr):
                return True
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _holds_name(value, attr):
            return True
    return False


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


def _instance_miss(owner, attr) -> AttributeFactWire:
    """AttributeFact for a static miss on an instance or class."""
    # dict's own __getattribute__ is the generic one
    if _exact(owner, "bunch"):  # Bunch.__getattr__ is ``self[key]``, AttributeError when the key is absent
        try:
            return _dynamic(bool(dict.__contains__(owner, attr)))
        except Exception:
            return _dynamic(None)
    if _defining_class(owner, "__getattribute__") not in _STATIC_GETATTRIBUTE:
        # statsmodels results wrappers, numpy recarray/record fields: answered by code, not stored
        return _dynamic(None)
    if _exact(owner, "df_groupby") or _exact(owner, "s_groupby"):
        return _dynamic(_groupby_holds(owner, attr))
    if _isa(owner, "ndframe") and _trusted(owner):
        if attr.startswith("_"):
            return _dynamic(False)
        try:
            holds = bool(owner._info_axis._can_hold_identifiers_and_holds_name(attr))
        except Exception:
            return _dynamic(None)
        return _dynamic(holds)
    if _isa(owner, "torch_module"):
        d = _instance_dict(owner) or {}
        for key in ("_parameters", "_buffers", "_modules"):
            sub = d.get(key)
            if type(sub) is dict and attr in sub:
                return _dynamic(True)
        if _defining_class(owner, "__getattr__") is not None and not _is_trusted_cls(
            _defining_class(owner, "__getattr__")
        ):
            return _dynamic(None)
        return _dynamic(False)
    if _is_class(owner):
        # a class's attributes come through its metaclass: a ``__getattr__`` there, or a
        # ``__getattribute__`` past ``type``'s own, may serve the name
        for cls in type.__dict__["__mro__"].__get__(type(owner)):
            if cls is type or cls is object:
                continue
            if "__getattr__" in cls.__dict__ or "__getattribute__" in cls.__dict__:
                return _dynamic(None)
        return {"exists": False}
    if _defining_class(owner, "__getattr__") is not None:
        return _dynamic(None)
    return {"exists": False}


#: Library classes whose ``__getattr__`` the facts replay, matched exactly (a subclass may override it).
_EXACT_CLASSES = {
    "bunch": (("sklearn.utils._bunch", "Bunch"), ("sklearn.utils", "Bunch")),
    "df_groupby": (
        ("pandas.core.groupby.generic", "DataFrameGroupBy"),
        ("pandas.api.typing", "DataFrameGroupBy"),
    ),
    "s_groupby": (("pandas.core.groupby.generic", "SeriesGroupBy"), ("pandas.api.typing", "SeriesGroupBy")),
}

#: Labels past which ``attr in obj`` of a groupby is not answered (pandas builds a hash table for it).
_GROUPBY_LABELS_MAX = 100_000


def _exact(obj, key):
    cls = _known_class(key, _EXACT_CLASSES)
    return cls is not None and type(obj) is cls


def _groupby_holds(owner, attr):
    """``GroupBy.__getattr__``: an internal name, else ``attr in self.obj`` (a DataFrame's column, a Series'
    index label) gives ``self[attr]``, else AttributeError. None when that cannot be told cheaply."""
    if attr.startswith("_"):
        return None
    obj = (_instance_dict(owner) or {}).get("obj")
    if obj is None or not _trusted(obj) or not (_isa(obj, "dataframe") or _isa(obj, "series")):
        return None
    try:
        axis = obj._info_axis
        if _cls_name(type(axis)) != "RangeIndex" and len(axis) > _GROUPBY_LABELS_MAX:
            return None
        return bool(axis.__contains__(attr))
    except Exception:
        return None


def _module_chain(parts):
    """``["@sklearn", "ensemble", "RandomForestClassifier"]``: the chain read from the module already loaded
    under that name, whatever kernel name holds it (never imports): [(key, fact, value or _MISSING, plain)]
    for each prefix, as ``_resolve_chain`` walks it."""
    mod = _sys.modules.get(parts[0][1:]) if parts[0].startswith("@") else None
    if mod is None or len(parts) < 2:
        return []
    return [
        (".".join(parts[: n + 1]), fact, value, plain and not drop_self)
        for n, fact, value, plain, drop_self in _resolve_chain(mod, parts[1:])
    ]


def _module_chain_end(parts, steps):
    """The class or plain function of a module an ``@module`` chain (``_module_chain``) ends at, else
    _MISSING: the call checks read its parameters (``from m import C`` then ``C(...)`` in the same cell). A
    method read on a class is summarised only on a scikit-learn estimator class (``@pandas.Series.sum`` is
    asked for its existence only)."""
    if len(parts) < 2 or len(steps) != len(parts) - 1:
        return _MISSING
    _key, fact, value, plain = steps[-1]
    if fact.get("exists") is not True or value is _MISSING or not plain:
        return _MISSING
    owner = steps[-2][2] if len(steps) > 1 else _sys.modules.get(parts[0][1:])
    if owner is not _MISSING and _is_class(owner):
        # a method of a scikit-learn estimator class (``m = C(); m.fit(...)``, ``self`` first), no other
        est = _known_class("estimator")
        mro = type.__dict__["__mro__"].__get__(owner)
        return value if est is not None and est in mro and type(value) is _types.FunctionType else _MISSING
    if owner is _MISSING or _types.ModuleType not in _mro(owner):
        return _MISSING
    return value if _is_class(value) or type(value) is _types.FunctionType else _MISSING


def _member(owner, attr):
    """The value a replayed ``__getattr__`` returns: a torch module's member, a Bunch's key."""
    if _exact(owner, "bunch"):
        try:
            return dict.__getitem__(owner, attr) if dict.__contains__(owner, attr) else _MISSING
        except Exception:
            return _MISSING
    return _torch_member(owner, attr)


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
            owner_kind = _classify(owner)
        fact: AttributeFactWire = {"owner_type": _qualname(type(owner)), "owner_kind": owner_kind}
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
            held = _member(owner, attr) if fact.get("exists") is True and not is_module else _MISSING
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
    if _trusted(obj) and _isa(obj, "dataframe") and type(key) in (str, int, float, bool, tuple):
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
        return pd.Series(values, index=df.index, name=key, dtype=values.dtype, copy=False)  # no str inference
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
