"""What kind an object is, and the kind -> summariser table that describes it.

``_classify`` decides the kind from ``type(obj).__mro__`` without running any of the object's code;
``SUMMARISERS`` maps each kind to the function that fills its ``ObjectWire``; ``_summarise`` runs
it against the per-object deadline, so a failure or a timeout leaves fields unknown with a reason.
"""

import types as _types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.frames import (
        _frm_classify,
    )
    from crane_lsp.kernel.agent.guard import (
        _Deadline,
    )
    from crane_lsp.kernel.agent.safe import (
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
    from crane_lsp.kernel.agent.sum_data import (
        _sum_dataframe,
        _sum_index,
        _sum_ndarray,
        _sum_series,
        _sum_tensor,
        _sum_tf_tensor,
    )
    from crane_lsp.kernel.agent.sum_ml import (
        _sum_dataloader,
        _sum_estimator,
        _sum_history,
        _sum_iterable_dataset,
        _sum_keras_iterator,
        _sum_keras_model,
        _sum_tf_dataset,
        _sum_torch_dataset,
        _sum_torch_module,
    )
    from crane_lsp.kernel.agent.sum_python import (
        _sum_callable,
        _sum_class,
        _sum_mapping,
        _sum_module,
        _sum_other,
        _sum_scalar,
        _sum_sequence,
    )


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
