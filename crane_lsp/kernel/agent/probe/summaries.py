"""What kind an object is, and the kind -> summariser table that describes it.

``_classify`` decides the kind from ``type(obj).__mro__`` without running any of the object's code;
``_SUMMARISERS`` maps each kind to the function that fills its ``ObjectWire``; ``_summarise`` runs
it against the per-object deadline, so a failure or a timeout leaves fields unknown with a reason.

A new kind for a library's class (followed once for ``xarray.DataArray``: seven edits in four files,
each caught by a test without a kernel when forgotten):

1. ``wire.py``: the name in ``ObjectKind`` and 2. its ``Kind`` constant (``tests/test_wire.py``);
3. ``safe.py``: where the class lives, in ``_KNOWN_CLASSES`` (``tests/test_probe_kinds.py``);
4. here: a line in ``_LIBRARY_KINDS``, in MRO order (a subclass's kind first), ``own`` when only the
   library's own class may be read (``tests/test_probe_kinds.py``);
5. a ``_sum_*`` function in ``sum_data.py``/``sum_ml.py``/``sum_python.py`` and 6. a line in that
   module's table beside it (``tests/test_probe_install.py``);
7. ``safe.py``: the library in ``_TRUSTED_TEXT`` (its properties and dunders may then run), unless its
   objects are read from their schema only, as ``frames.py`` reads Polars, Dask and Spark
   (``tests/test_probe_kinds.py``).

A kind of an already trusted library skips step 7. New fields are a key in ``wire.ObjectWire`` and a
field of ``snapshot.ObjectSummary`` (``tests/test_wire.py``). The client needs nothing more:
``analysis.kinds.Kind`` extends ``wire.Kind``, and checks compare ``Kind.*`` only (``tests/test_kinds.py``).
"""

import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Deadline,
    )
    from crane_lsp.kernel.agent.probe.frames import (
        _FRM_SUMMARISERS,
        _frm_classify,
    )
    from crane_lsp.kernel.agent.probe.sum_data import (
        _DATA_SUMMARISERS,
        _sum_dataframe,
    )
    from crane_lsp.kernel.agent.probe.sum_ml import (
        _ML_SUMMARISERS,
    )
    from crane_lsp.kernel.agent.probe.sum_python import (
        _PY_SUMMARISERS,
    )
    from crane_lsp.kernel.agent.safe import (
        _KERAS_TOPS,
        _cls_module,
        _cls_name,
        _defining_class,
        _exc_text,
        _has_base_prefix,
        _is_class,
        _kinds_of,
        _mro,
        _mro_names,
        _plain,
        _qualname,
        _static,
        _trunc,
        _trusted,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        Kind,
        ObjectKind,
        ObjectWire,
    )


#: Exact types whose kind needs no MRO walk.
_EXACT_KINDS: dict[type, ObjectKind] = {
    type(None): Kind.NONE,
    bool: Kind.BOOL,
    int: Kind.INT,
    float: Kind.FLOAT,
    complex: Kind.COMPLEX,
    str: Kind.STR,
    bytes: Kind.BYTES,
    _types.FunctionType: Kind.FUNCTION,
    _types.BuiltinFunctionType: Kind.FUNCTION,
    _types.MethodType: Kind.FUNCTION,
    _types.BuiltinMethodType: Kind.FUNCTION,
}
#: ``_KNOWN_CLASSES`` keys -> kind, first match wins. ``own``: only a trusted library's own objects
#: (a user subclass of ``DataFrame`` could override anything); the rest are bases that user classes
#: legitimately extend, read through safe accessors only.
_LIBRARY_KINDS: tuple[tuple[str, ObjectKind, bool], ...] = (
    ("ndarray", Kind.NDARRAY, True),
    ("tensor", Kind.TENSOR, True),
    ("dataframe", Kind.DATAFRAME, True),
    ("series", Kind.SERIES, True),
    ("index", Kind.INDEX, True),
    ("dataloader", Kind.DATALOADER, False),
    ("torch_iterable_dataset", Kind.TORCH_ITERABLE_DATASET, False),
    ("torch_dataset", Kind.TORCH_DATASET, False),
    ("torch_module", Kind.TORCH_MODULE, False),
    ("estimator", Kind.ESTIMATOR, False),
)
#: Builtin bases, by MRO: a subclass is read through the base's own methods.
_BUILTIN_BASES: tuple[tuple[type, ObjectKind], ...] = (
    (dict, Kind.DICT),
    (list, Kind.LIST),
    (tuple, Kind.TUPLE),
    (set, Kind.SET),
    (frozenset, Kind.SET),
    (str, Kind.STR),
)


def _numpy_scalar_kind(known) -> ObjectKind:
    if "np_bool" in known:
        return Kind.BOOL
    if "np_integer" in known:
        return Kind.INT
    return Kind.FLOAT if "np_floating" in known else Kind.OTHER


def _tf_tensor_like(mro, names):
    return "EagerTensor" in {_cls_name(c) for c in mro} or any(
        n.endswith((".Tensor", ".Variable", "BaseResourceVariable")) for n in names
    )


def _classify(obj) -> ObjectKind:
    """The kind of ``obj``, from ``type(obj).__mro__``, without running any of obj's code."""
    t = type(obj)
    exact = _EXACT_KINDS.get(t)
    if exact is not None:
        return exact
    mro = _mro(obj)
    if _types.ModuleType in mro:
        return Kind.MODULE
    if _is_class(obj):
        return Kind.CLASS
    names = _mro_names(obj)
    known = _kinds_of(obj)
    frame = _frm_classify(obj)  # Polars, Dask, Spark: schema only (frames.py)
    if frame is not None:
        return frame
    trusted = _trusted(obj)
    if trusted and "np_generic" in known:
        return _numpy_scalar_kind(known)
    for key, kind, own in _LIBRARY_KINDS:
        if key in known and (trusted or not own):
            return kind
    if trusted and _cls_module(t).split(".")[0] == "tensorflow" and _tf_tensor_like(mro, names):
        return Kind.TF_TENSOR
    if trusted and any(n.endswith("data.ops.dataset_ops.DatasetV2") for n in names):
        return Kind.TF_DATASET
    if _has_base_prefix(obj, "Model", _KERAS_TOPS):
        return Kind.KERAS_MODEL
    if _has_base_prefix(obj, "Iterator", _KERAS_TOPS) and _static(obj, "batch_size") is not None:
        return Kind.KERAS_ITERATOR
    for base, kind in _BUILTIN_BASES:
        if base in mro:
            return kind
    if t is _types.GeneratorType or _defining_class(obj, "__next__") is not None:
        return Kind.GENERATOR
    if "functools.partial" in names:
        return Kind.FUNCTION
    return Kind.OTHER


#: kind -> the summariser that fills its ``ObjectWire`` (``none`` and ``error`` have none): each
#: ``sum_*`` module lists its own beside them (``tests/test_probe_install.py`` holds this to every kind).
_SUMMARISERS = {**_DATA_SUMMARISERS, **_ML_SUMMARISERS, **dict(_FRM_SUMMARISERS), **_PY_SUMMARISERS}


def _summarise(obj, query, clock, wanted=()) -> ObjectWire:
    clock.begin_object()
    s: ObjectWire = {"type": _qualname(type(obj)), "kind": Kind.OTHER}
    try:
        kind = _classify(obj)
    except Exception as exc:
        s["kind"], s["error"], s["repr"] = Kind.ERROR, "classify: " + _cls_name(type(exc)), _plain(obj)
        return s
    s["kind"] = kind
    if clock.request_over():
        clock.hit = True
        s["error"] = DEADLINE
        return s
    fn = _SUMMARISERS.get(kind)
    if fn is None:
        return s
    try:
        if kind == Kind.DATAFRAME:
            _sum_dataframe(obj, s, query, clock, wanted)
        else:
            fn(obj, s, query, clock)
    except _Deadline:
        s["error"] = DEADLINE
    except RecursionError:
        s["error"] = "RecursionError"
    except Exception as exc:
        s["error"] = _cls_name(type(exc)) + ": " + _trunc(_exc_text(exc), 160)
    if s.get("error") and kind == Kind.OTHER and "repr" not in s:
        s["repr"] = _plain(obj)
    return s
