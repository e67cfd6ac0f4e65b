"""Summaries of ML objects: Keras iterators and models, tf.data, torch datasets/loaders/modules, sklearn.

Read from stored attributes; the only user code that runs is a torch ``Dataset``'s ``__len__`` and
``__getitem__`` (guarded, RNG states and the instance ``__dict__`` restored afterwards).
"""

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.guard import (
        _Clock,
        _Deadline,
        _field,
        _guarded,
        _left_as_found,
    )
    from crane_lsp.kernel.agent.probe.sk_protocol import (
        _SK_DELEGATE,
        _SK_INNER_PARAMS,
        _SK_OWN_FIT,
        _SK_STATELESS,
    )
    from crane_lsp.kernel.agent.safe import (
        _MAX_COLUMN_NAMES,
        _cls_name,
        _defining_class,
        _exc_text,
        _fn_name,
        _instance_dict,
        _is_scalar_like,
        _is_trusted_cls,
        _isa,
        _label_text,
        _lib,
        _lib_attr,
        _qualname,
        _safe_repr,
        _static,
        _trunc,
        _trusted,
    )
    from crane_lsp.kernel.agent.wire import (
        DEADLINE,
        EstimatorWire,
        KerasIteratorWire,
        Kind,
        ModuleWire,
        ObjectWire,
        QueryWire,
        TorchDatasetWire,
    )


def _sum_keras_iterator(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    info: KerasIteratorWire = {}
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
            info[name] = [int(d) if d is not None else None for d in v]  # type: ignore[literal-required]
    s["iterator"] = info
    if "samples" in info:
        s["length"] = info["samples"]


def _sum_tf_dataset(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
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


def _sum_torch_dataset(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    info: TorchDatasetWire = {}
    s["dataset"] = info
    with _left_as_found(obj):  # __len__/__getitem__ are user code: RNGs and __dict__ come back
        n = None
        try:
            n = _guarded(clock, type(obj).__len__, obj) if _defining_class(obj, "__len__") else None
            if type(n) is not int:
                n = None
        except _Deadline:
            s["error"] = DEADLINE
            return
        except Exception as exc:
            s["error"] = "__len__ raised " + _cls_name(type(exc))
        info["length"] = n
        s["length"] = n
        k = query["torch_samples"]
        if not n or k <= 0:
            return
        idx = sorted({(i * n) // k for i in range(min(k, n))})
        samples, texts, shapes = [], [], []
        getitem = type(obj).__getitem__
        for i in idx:
            if clock.left() <= 0:
                clock.hit = True
                s["error"] = DEADLINE
                break
            try:
                item = _guarded(clock, getitem, obj, i)
            except _Deadline:
                s["error"] = DEADLINE
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
                s["error"] = DEADLINE
            except Exception as exc:
                info["collated"] = f"error: {_cls_name(type(exc))}: {_trunc(_exc_text(exc), 160)}"


def _sum_iterable_dataset(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    s["dataset"] = {"dataset_type": _qualname(type(obj))}


def _sum_dataloader(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    info: TorchDatasetWire = {}
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
                s["error"] = DEADLINE
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


def _torch_input_hooked(mods):
    """Whether code of the user's may change the input before the first layer sees it: a forward pre-hook
    (of a module or global: ``Module.__call__`` runs them first) or a ``forward`` set on an instance.
    The input width is then no contract (``torch.linear-input`` stays silent)."""
    glob = _lib("torch.nn.modules.module", "_global_forward_pre_hooks")
    if glob is None or not isinstance(glob, dict) or len(glob):
        return True
    for m in mods:
        d = _instance_dict(m) or {}
        pre = d.get("_forward_pre_hooks")
        if "forward" in d or (pre is not None and (not isinstance(pre, dict) or len(pre))):
            return True
    return False


def _sum_torch_module(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    mods: list = []
    _walk_torch(obj, mods)
    info: ModuleWire = {}
    linear = [m for m in mods if _isa(m, "torch_linear")]
    if linear:
        v = _static(linear[0], "in_features")
        info["in_features"] = v if type(v) is int and not _torch_input_hooked(mods) else None
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


#: Model methods through which Keras' ``fit``/``evaluate`` reach the data: a user class overriding one may
#: reshape inputs or targets on the way (``train_step`` slicing ``y``), so the model's declared shapes and
#: loss are then no contract for what ``fit`` accepts.
_KERAS_DATA_HOOKS = ("train_step", "test_step", "compute_loss", "call", "fit", "evaluate")


def _keras_data_hooked(obj):
    """Whether a user class in ``type(obj).__mro__`` overrides a method ``fit`` runs the data through."""
    return any(
        (owner := _defining_class(obj, name)) is not None and not _is_trusted_cls(owner)
        for name in _KERAS_DATA_HOOKS
    )


def _sum_keras_model(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    info: ModuleWire = {}
    hooked = _keras_data_hooked(obj)
    with contextlib.suppress(Exception):
        if not hooked and (shape := _keras_shape(_lib_attr(obj, "input_shape"))) is not None:
            info["input_shape"] = shape
    with contextlib.suppress(Exception):
        if (shape := _keras_shape(_lib_attr(obj, "output_shape"))) is not None:
            info["output_shape"] = shape
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
    if loss is not None and not hooked:
        info["loss"] = loss if type(loss) is str else _fn_name(loss)
    s["nn"] = info


def _sum_history(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
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


# scikit-learn's fittedness protocol, read statically (``check_is_fitted``): a class's own
# ``__sklearn_is_fitted__`` decides when it defines one; else an instance attribute ending in "_" (not
# "__"). Meta-estimators may delegate to what they wrap. No estimator code runs: a hook of a class whose
# rule is not replayed below (a user class's) leaves the answer open (None: no certain finding).
# The class-name lists live in sk_protocol.py (joined before this module; the client imports them too).


def _sk_own_fitted(obj):
    d = _instance_dict(obj) or {}
    return any(type(k) is str and k.endswith("_") and not k.startswith("__") for k in d)


def _sk_is_estimator(v):
    return v is not None and type(v) is not str and _defining_class(v, "fit") is not None


def _sk_inner(obj):
    """The estimators ``obj`` wraps, read from its stored constructor parameters (steps, lists of
    ``(name, est[, columns])`` tuples or bare estimators); 'drop'/'passthrough' strings left out."""
    d = _instance_dict(obj) or {}
    out = []
    for key in _SK_INNER_PARAMS:
        v = d.get(key)
        if _sk_is_estimator(v):
            out.append(v)
        elif type(v) is list or type(v) is tuple:
            for item in list(v)[:100]:
                if type(item) is tuple and len(item) >= 2:
                    item = item[1]
                if _sk_is_estimator(item):
                    out.append(item)
    return out


def _sk_hook_replay(obj, cls, depth):
    """``cls.__sklearn_is_fitted__(obj)`` for scikit-learn's own hooks, replayed statically; else None."""
    name = _qualname(cls)
    d = _instance_dict(obj) or {}
    if name == "sklearn.preprocessing._function_transformer.FunctionTransformer":
        return True
    if name == "sklearn.frozen._frozen.FrozenEstimator":  # check_is_fitted(self.estimator)
        inner = d.get("estimator")
        return _sk_fitted(inner, depth + 1) if _sk_is_estimator(inner) else None
    if name == "sklearn.pipeline.Pipeline":  # the last step that is not 'passthrough'
        steps = d.get("steps")
        if type(steps) is not list or not all(type(st) is tuple and len(st) == 2 for st in steps):
            return None
        real = [est for _, est in steps if not (type(est) is str and est == "passthrough")]
        if not real:
            return True
        return _sk_fitted(real[-1], depth + 1) if _sk_is_estimator(real[-1]) else None
    if name == "sklearn.pipeline.FeatureUnion":  # every transformer but 'drop' (passthrough is stateless)
        items = d.get("transformer_list")
        if type(items) is not list or not all(type(it) is tuple and len(it) == 2 for it in items):
            return None
        states = [
            _sk_fitted(t, depth + 1) if _sk_is_estimator(t) else None
            for _, t in items
            if not (type(t) is str and t in ("drop", "passthrough"))
        ]
        if False in states:
            return False
        return True if all(s is True for s in states) else None
    return None


def _sk_fitted(obj, depth=0):
    """Whether ``check_is_fitted(obj)`` passes, as scikit-learn decides it, read without running any
    estimator code: True, False, or None when a hook the probe cannot replay could answer."""
    if depth > 8:
        return None
    for hook in ("__getattr__", "__getattribute__", "__sklearn_tags__"):
        # ``hasattr(est, "__sklearn_is_fitted__")`` through a ``__getattr__``; ``requires_fit`` set by code
        owner = _defining_class(obj, hook)
        if owner is not None and owner is not object and not _is_trusted_cls(owner):
            return None
    hook_cls = _defining_class(obj, "__sklearn_is_fitted__")
    if hook_cls is not None:
        return _sk_hook_replay(obj, hook_cls, depth) if _is_trusted_cls(hook_cls) else None
    if _defining_class(obj, "__getattr__") is not None:  # FrozenEstimator's kind: defines its hook too
        return None
    cls = _cls_name(type(obj)) if _is_trusted_cls(type(obj)) else ""
    if cls in _SK_STATELESS:
        return True if depth else _sk_own_fitted(obj)  # the check itself knows the stateless classes
    if _sk_own_fitted(obj):
        return True
    inner = _sk_inner(obj)
    if not inner or cls in _SK_OWN_FIT:
        return False
    if cls in _SK_DELEGATE and all(_sk_fitted(e, depth + 1) is False for e in inner):
        return False  # the inner estimator is not fitted either: NotFittedError
    return None  # a meta-estimator that may delegate to a fitted inner estimator


def _sum_estimator(obj, s: ObjectWire, query: QueryWire, clock: _Clock):
    privacy = query.get("privacy")
    info: EstimatorWire = {}
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
    info["fitted"] = _sk_fitted(obj)
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


#: kind -> the summariser that fills its ``ObjectWire`` (merged into ``summaries._SUMMARISERS``).
_ML_SUMMARISERS = {
    Kind.KERAS_ITERATOR: _sum_keras_iterator,
    Kind.TF_DATASET: _sum_tf_dataset,
    Kind.TORCH_DATASET: _sum_torch_dataset,
    Kind.TORCH_ITERABLE_DATASET: _sum_iterable_dataset,
    Kind.DATALOADER: _sum_dataloader,
    Kind.TORCH_MODULE: _sum_torch_module,
    Kind.KERAS_MODEL: _sum_keras_model,
    Kind.ESTIMATOR: _sum_estimator,
}
