"""A shape-level dry run (issue 36): torch tensors stood in by ``meta`` tensors. STANDARD LIBRARY ONLY.

Joined before ``dryrun.py``; runs only in the jailed child, never in the kernel. A forked copy of a
kernel that initialised CUDA cannot use the GPU, but a crash there is almost always about shapes,
dtypes and devices, which need no data. So, before the cell runs, every torch tensor and module the
cell names (its code's names, and items of small dicts, lists and tuples of them) is stood in by
``meta`` tensors of the same shape, dtype and strides, made from metadata only (no CUDA call: reading
``.shape``/``.dtype``/``.stride()`` is host-side); the original device is kept as the virtual device
``_crane_device`` on each stand-in. While the cell runs, ``_StiMode`` (a ``TorchFunctionMode``):

- propagates the virtual device from inputs to outputs, and raises torch's own ``RuntimeError``
  ("Expected all tensors to be on the same device, ...") when an operation mixes two;
- turns ``.to(device)``/``.cuda()``/``.cpu()``, a factory's ``device=`` and ``Module.to`` into stand-ins
  on the new virtual device (a DataLoader's CPU batch ``.to("cuda")`` becomes one); ``x.device`` answers
  the virtual device, so ``torch.zeros(3, device=x.device)`` follows;
- stands in on the fly any real CUDA tensor an operation reaches (an optimizer's state), so no CUDA
  call is ever made;
- stops the run with ``_StiNoVerdict`` where values are needed (``.item()``, ``.tolist()``, ``.numpy()``,
  ``bool(t)``, printing, ``nonzero``/``unique``/masked indexing) or where the meta device cannot
  follow an operation: the verdict is then "no verdict", never a crash.

Used when CUDA is initialised in the kernel, or forced by ``CRANE_DRYRUN_STANDIN=force`` (the kernel's
environment, or the client's, sent as ``payload["standin"]``): then CPU tensors are stood in as well,
which is how it is tested without a GPU. torch is reached through ``sys.modules`` only.
"""

import sys as _sti_sys
from typing import Any

_STI_ENV = "CRANE_DRYRUN_STANDIN"
_STI_ATTR = "_crane_device"
#: operations that need a tensor's values (a Python number, text, an array, a truth value)
_STI_VALUES = frozenset(
    {"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__complex__", "__repr__"}
    | {"__str__", "__format__", "__array__", "__contains__", "equal", "allclose", "data_ptr"}
)
#: operations whose output shape depends on the values
_STI_DATA_SHAPES = frozenset(
    {"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount", "histc"}
)
#: operations that may take tensors on two devices (a copy, an index on the CPU)
_STI_MIXED_OK = frozenset(
    {"copy_", "__getitem__", "__setitem__", "index_put_", "index_put", "to", "cuda", "cpu", "set_"}
)
#: what a value-needing operation is, in the verdict's words
_STI_WHY = {
    "__bool__": "a Python truth value (`if`, `and`, `bool()`)",
    "__repr__": "printing it",
    "__str__": "printing it",
    "__format__": "printing it",
    "__int__": "a Python number",
    "__float__": "a Python number",
    "__index__": "a Python number",
}
#: operations whose operands must share one dtype (meta kernels do not check it, CPU and CUDA do)
_STI_SAME_DTYPE = frozenset(
    {"linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "baddbmm", "mv", "dot"}
    | {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "bilinear"}
)
_STI_DTYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
}  # fmt: skip
_sti_state: dict[str, Any] = {}  # in the child only: "needs" (why there is no verdict), "keep"


class _StiNoVerdict(BaseException):
    """The shape-level run cannot go on (values needed, an operation the meta device cannot follow).
    A BaseException, so a cell's ``except Exception`` cannot swallow it; recorded in ``_sti_state``
    too, so that a bare ``except:`` cannot either."""


def _sti_torch():
    return _sti_sys.modules.get("torch")


def _sti_wanted(payload):
    """Why this dry run stands tensors in (``"forced"``/``"cuda"``), or None."""
    torch = _sti_torch()
    if torch is None:
        return None
    import os

    if "force" in (str(payload.get("standin") or ""), os.environ.get(_STI_ENV, "")):
        return "forced"
    cuda = getattr(torch, "cuda", None)
    if getattr(cuda, "_initialized", False):  # the flag itself: is_initialized() says False in a fork
        return "cuda"
    return None


def _sti_norm(device):
    """A device as torch names it in its errors: ``cuda`` is ``cuda:0``."""
    torch = _sti_torch()
    device = torch.device(device) if not isinstance(device, torch.device) else device
    if device.type == "cuda":
        return f"cuda:{device.index or 0}"
    return str(device)


def _sti_vdev(t):
    """The virtual device of a tensor: a stand-in's kept device, else its own."""
    if t.is_meta:
        return getattr(t, _STI_ATTR, "meta")
    return _sti_norm(t.device)


def _sti_meta(t, vdev=None, dtype=None):
    """A ``meta`` tensor of ``t``'s shape, strides and dtype (metadata only: no data is read)."""
    torch = _sti_torch()
    dtype = dtype or t.dtype
    grad = bool(t.requires_grad) and (dtype.is_floating_point or dtype.is_complex)
    with torch._C.DisableTorchFunction():
        out = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=dtype, device="meta")
        if grad:
            out.requires_grad_(True)
        if isinstance(t, torch.nn.Parameter):
            out = torch.nn.Parameter(out, requires_grad=grad)
    setattr(out, _STI_ATTR, vdev or _sti_vdev(t))
    _sti_state.setdefault("keep", []).append(t)  # nothing of the kernel's is freed in the child
    return out


def _sti_standable(value):
    torch = _sti_torch()
    return (
        isinstance(value, torch.Tensor)
        and value.layout == torch.strided
        and not value.is_quantized
        and not (value.is_meta and hasattr(value, _STI_ATTR))
    )


def _sti_module(module, target=None, dtype=None, memo=None):
    """Every parameter and buffer of ``module`` on ``meta`` (in place: the child's copy), on the
    virtual device ``target`` (default: where each one is) and in ``dtype`` (floating ones only)."""
    memo = {} if memo is None else memo
    for sub in module.modules():
        for table in (sub._parameters, sub._buffers):
            for key, value in list(table.items()):
                if value is None:
                    continue
                cast = (
                    dtype if dtype is not None and (value.is_floating_point() or value.is_complex()) else None
                )
                if id(value) in memo:
                    table[key] = memo[id(value)]
                elif value.is_meta and hasattr(value, _STI_ATTR) and cast in (None, value.dtype):
                    if target is not None:
                        setattr(value, _STI_ATTR, target)
                else:
                    table[key] = memo[id(value)] = _sti_meta(value, target or _sti_vdev(value), cast)
    return module


def _sti_code_names(code, depth=0):
    names = set(code.co_names)
    if depth < 4:
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                names |= _sti_code_names(const, depth + 1)
    return names


def _sti_stand_in(namespace, code, only_gpu=False):
    """Stand in the tensors and modules the cell names (in the child's copy of the namespace);
    returns the names stood in and the devices they were on. ``only_gpu`` (a CUDA kernel): a tensor
    or module wholly on the CPU stays real, its values are in the child's memory (forced: all)."""
    torch = _sti_torch()
    memo: dict[int, Any] = {}
    names, devices = [], set()

    def one(value):
        if id(value) in memo:
            return memo[id(value)]
        if _sti_standable(value):
            if only_gpu and not _sti_stood(value):
                return None
            devices.add(_sti_vdev(value))
            memo[id(value)] = _sti_meta(value)
            return memo[id(value)]
        if isinstance(value, torch.nn.Module):
            tensors = [*value.parameters(), *value.buffers()]
            if only_gpu and not any(_sti_stood(t) for t in tensors):
                return None
            devices.update(_sti_vdev(t) for t in tensors)
            memo[id(value)] = _sti_module(value, memo=memo)
            return value
        return None

    for name in sorted(_sti_code_names(code)):
        value = namespace.get(name)
        if value is None or name.startswith("_"):
            continue
        kind = type(value)
        if kind in (list, tuple, dict) and len(value) <= 64:
            items = value.items() if kind is dict else enumerate(value)
            swapped = {k: one(v) for k, v in items}
            swapped = {k: v for k, v in swapped.items() if v is not None}
            if not swapped:
                continue
            if kind is tuple:
                namespace[name] = tuple(swapped.get(i, v) for i, v in enumerate(value))
            else:
                for k, v in swapped.items():
                    value[k] = v  # the child's copy of the container
            names.append(name)
            continue
        stood = one(value)
        if stood is not None:
            namespace[name] = stood
            names.append(name)
    return names, sorted(devices)


def _sti_begin(namespace, code, payload):
    """Before the cell: stand in its tensors and make the mode; ``None`` when not wanted. Returns
    ``{"why", "names", "devices", "mode"}`` (``mode``: entered around the cell by ``_sti_active``)."""
    why = _sti_wanted(payload)
    if why is None:
        return None
    names, devices = _sti_stand_in(namespace, code, only_gpu=why == "cuda")
    _sti_state["lines"] = str(payload.get("source") or "").splitlines()  # to name a temporary's inputs
    _sti_patch_modules()
    if why == "cuda":
        _sti_patch_cuda()
    return {"why": why, "names": names, "devices": devices, "mode": _sti_make_mode()}


def _sti_note(info):
    """The note that says the stand-in path ran, and why."""
    why = (
        "forced by CRANE_DRYRUN_STANDIN=force"
        if info["why"] == "forced"
        else "CUDA is initialised in the kernel"
    )
    devices = ", ".join(info["devices"]) or "no device"
    names = ", ".join(info["names"][:8]) or "none named"
    return f"a shape-level dry run ({why}): tensors on {devices} stood in by their shapes ({names})"


#: properties of a real CUDA tensor read as they are: stored references and metadata (no kernel runs)
_STI_STORED = frozenset(
    {"grad", "data", "grad_fn", "shape", "dtype", "requires_grad", "is_leaf", "ndim", "layout", "names"}
)
#: ``torch.cuda`` calls that change nothing a shape-level run can see: no-ops in the child
_STI_CUDA_NOOPS = (
    "synchronize empty_cache reset_peak_memory_stats reset_max_memory_allocated manual_seed manual_seed_all"
    " set_device ipc_collect"
)
#: ``torch.cuda`` calls that ask the GPU: the run stops there (no verdict)
_STI_CUDA_ASKS = (
    "memory_allocated max_memory_allocated memory_reserved max_memory_reserved memory_summary memory_stats"
    " mem_get_info get_device_name get_device_properties get_device_capability device_count utilization"
    " get_rng_state get_rng_state_all set_rng_state current_stream default_stream Stream Event"
)


def _sti_get_cuda(func, prop, t, args, kwargs):
    """A property of a real CUDA tensor an operation reached: a stored reference (its meta stand-in)
    or the property of its stand-in; nothing runs on the GPU."""
    torch = _sti_torch()
    stored = prop in _STI_STORED
    out = func(*args, **kwargs) if stored else func(_sti_meta(t), *args[1:], **kwargs)

    def swap(v):
        if isinstance(v, torch.Tensor) and not v.is_meta and v.device.type == "cuda":
            return _sti_meta(v)
        return v

    return _sti_tag(torch.utils._pytree.tree_map(swap, out), _sti_vdev(t))


def _sti_patch_cuda():
    """``torch.cuda`` in the child's copy of torch (a kernel that initialised CUDA): the calls that only
    wait or tidy do nothing, the ones that ask the GPU stop the run, ``is_available()`` is True and
    ``current_device()`` the first device. A forked child must make no CUDA call."""
    cuda = _sti_torch().cuda

    def asks(name):
        def stop(*args, **kwargs):
            _sti_stop(f"`torch.cuda.{name}()` asks the GPU", None, "cuda:0")

        return stop

    for name in _STI_CUDA_NOOPS.split():
        if hasattr(cuda, name):
            setattr(cuda, name, lambda *args, **kwargs: None)
    for name in _STI_CUDA_ASKS.split():
        if hasattr(cuda, name):
            setattr(cuda, name, asks(name))
    cuda.is_available = lambda: True
    cuda.current_device = lambda: 0


def _sti_patch_modules():
    """``Module.to``/``cuda``/``cpu`` in the child's copy of torch: they stand the module in on the
    new virtual device instead of moving data (a move would call CUDA)."""
    torch = _sti_torch()
    cls = torch.nn.Module

    def to(self, *args, **kwargs):
        if args and isinstance(args[0], torch.Tensor):
            device, dtype = _sti_vdev(args[0]), args[0].dtype
        else:
            device, dtype, _blocking, _format = torch._C._nn._parse_to(*args, **kwargs)
            device = _sti_norm(device) if device is not None else None
        return _sti_module(self, device, dtype)

    def cuda(self, device=None):
        index = device.index if isinstance(device, torch.device) else device
        return _sti_module(self, f"cuda:{index or 0}")

    cls.to, cls.cuda = to, cuda
    cls.cpu = lambda self: _sti_module(self, "cpu")


def _sti_tensors(tree):
    torch = _sti_torch()
    flat = torch.utils._pytree.tree_flatten(tree)[0]
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _sti_stood(t):
    return (t.is_meta and hasattr(t, _STI_ATTR)) or t.device.type == "cuda"


def _sti_common(tensors, name):
    """The one virtual device of an operation's tensors, or torch's own error when there are two
    (a CPU scalar may meet any device, as in torch)."""
    found = None
    for t in tensors:
        vdev = _sti_vdev(t)
        if vdev == "meta" or (vdev == "cpu" and t.dim() == 0):
            continue
        if found is None:
            found = vdev
        elif vdev != found and name not in _STI_MIXED_OK:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{found} and {vdev}!"
            )
    if found is None:  # only scalars: theirs
        known = [_sti_vdev(t) for t in tensors if _sti_vdev(t) != "meta"]
        found = known[0] if known else None
    return found


def _sti_tag(out, vdev):
    torch = _sti_torch()
    for t in torch.utils._pytree.tree_flatten(out)[0]:
        if isinstance(t, torch.Tensor) and t.is_meta and not hasattr(t, _STI_ATTR) and vdev:
            setattr(t, _STI_ATTR, vdev)
    return out


def _sti_line():
    """The line of the cell that is running, and the frame."""
    frame: Any = _sti_sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != "<crane-dryrun>":
        frame = frame.f_back
    return frame


def _sti_stop(why, tensor=None, vdev=None):
    """Stop the run: no verdict, with the name of the tensor where it can be found."""
    frame = _sti_line()
    name = None
    if frame is not None:
        scope = {**frame.f_globals, **frame.f_locals}
        code = frame.f_code
        names = [*code.co_varnames, *code.co_names]
        for n in names:
            if tensor is not None and scope.get(n) is tensor:
                name = n
                break
        if name is None:  # a temporary (``if loss > 0.5:``): the stood-in names on its line
            import re

            lines = _sti_state.get("lines") or []
            text = lines[frame.f_lineno - 1] if 0 < frame.f_lineno <= len(lines) else ""
            for n in re.findall(r"[A-Za-z_]\w*", text):
                value = scope.get(n)
                if hasattr(value, _STI_ATTR) or getattr(value, "is_meta", False) is True:
                    name = n
                    break
    where = "on the GPU" if str(vdev or "").startswith("cuda") else "stood in by its shape"
    what = f"`{name}`" if name else "a tensor"
    message = (
        f"needs the values of {what} ({where}): {why}" if why else f"needs the values of {what} ({where})"
    )
    _sti_state.setdefault("needs", (message, frame.f_lineno if frame is not None else None))
    raise _StiNoVerdict(message)


def _sti_move(func, name, args, kwargs):
    """``.to(...)``, ``.cuda()``, ``.cpu()`` of a tensor: a stand-in on the new virtual device."""
    torch = _sti_torch()
    t = args[0]
    rest = args[1:]
    target: Any = None
    if name == "cuda":
        device = rest[0] if rest else kwargs.get("device")
        index = device.index if isinstance(device, torch.device) else device
        target, dtype = f"cuda:{index or 0}", None
    elif name == "cpu":
        target, dtype = "cpu", None
    elif rest and isinstance(rest[0], torch.Tensor):
        target, dtype = _sti_vdev(rest[0]), rest[0].dtype
    else:
        device, dtype, _blocking, _format = torch._C._nn._parse_to(*rest, **kwargs)
        target = _sti_norm(device) if device is not None and device.type != "meta" else None
    now = _sti_vdev(t)
    target = target or now
    if not t.is_meta and target == now and now == "cpu":
        return func(*args, **kwargs)  # a CPU tensor staying on the CPU: the real thing (its values exist)
    if t.is_meta:
        out = t.to(dtype=dtype or t.dtype, copy=True)  # keeps the graph; a new object
        setattr(out, _STI_ATTR, target)
        return out
    return _sti_meta(t, target, dtype)


def _sti_handle(func, args, kwargs):
    """One torch operation while the cell runs (the mode is off inside: no recursion)."""
    torch = _sti_torch()
    name = getattr(func, "__name__", "")
    if name == "__get__":  # a property: ``x.device`` answers the virtual device
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        t = args[0] if args else None
        if isinstance(t, torch.Tensor) and _sti_stood(t) and prop in ("device", "is_cuda"):
            vdev = _sti_vdev(t)
            return torch.device(vdev) if prop == "device" else vdev.startswith("cuda")
        if isinstance(t, torch.Tensor) and not t.is_meta and t.device.type == "cuda":
            return _sti_get_cuda(func, prop, t, args, kwargs)
        return _sti_tag(func(*args, **kwargs), _sti_vdev(t) if isinstance(t, torch.Tensor) else None)
    tensors = _sti_tensors((args, kwargs))
    stood = [t for t in tensors if _sti_stood(t)]
    if name in ("to", "cuda", "cpu") and args and isinstance(args[0], torch.Tensor):
        if _sti_stood(args[0]) or name == "cuda" or _sti_to_cuda(args, kwargs):
            return _sti_move(func, name, args, kwargs)
        return func(*args, **kwargs)
    target = None
    device = kwargs.get("device")
    if device is not None:
        target = _sti_norm(device) if not (isinstance(device, str) and device == "meta") else None
        if target is not None and (target.startswith("cuda") or stood):
            kwargs = {**kwargs, "device": "meta"}
        else:
            target = None
    if not stood and target is None:
        try:
            return func(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as exc:  # a meta tensor of the user's, or a tag lost
            if any(t.is_meta for t in tensors) and "meta" in str(exc).lower():
                _sti_stop(f"the meta device cannot follow `{name}`", None, None)
            raise
    if stood:
        vdev = _sti_vdev(stood[0])
        if name in _STI_VALUES:
            _sti_stop(_STI_WHY.get(name, f"`.{name}()`"), args[0] if args else None, vdev)
        if name in _STI_DATA_SHAPES or (name == "where" and len(args) == 1 and not kwargs):
            _sti_stop(f"the shape of `{name}` depends on them", args[0] if args else None, vdev)
        if name == "__getitem__" and any(t.dtype == torch.bool for t in _sti_tensors(args[1:])):
            _sti_stop("a boolean mask's result has a shape set by the values", args[0], vdev)
    common = _sti_common(tensors, name)
    if name in _STI_SAME_DTYPE and not _sti_autocast():
        _sti_same_dtype(tensors)
    swap = torch.utils._pytree.tree_map
    args, kwargs = swap(
        lambda v: _sti_meta(v) if isinstance(v, torch.Tensor) and not v.is_meta else v, (args, kwargs)
    )
    try:
        out = func(*args, **kwargs)
    except (NotImplementedError, RuntimeError, TypeError, ValueError) as exc:
        text = str(exc)
        if "meta" in text.lower() or isinstance(exc, NotImplementedError):
            _sti_stop(f"the meta device cannot follow `{name}`", None, common)
        raise
    return _sti_tag(out, target or common)


def _sti_autocast():
    """Whether an autocast region is on (it casts a product's operands: mixed dtypes are fine)."""
    torch = _sti_torch()
    for args in (("cuda",), ("cpu",), ()):
        try:
            if torch.is_autocast_enabled(*args):
                return True
        except (TypeError, RuntimeError):
            continue
    return False


def _sti_same_dtype(tensors):
    """torch's error for a matrix product or a convolution of two dtypes (a meta kernel runs it)."""
    kinds = []
    for t in tensors:
        if t.dtype not in kinds:
            kinds.append(t.dtype)
    if len(kinds) > 1:
        a, b = (_STI_DTYPE_NAMES.get(str(k).replace("torch.", ""), str(k)) for k in kinds[:2])
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a} != {b}")


def _sti_to_cuda(args, kwargs):
    torch = _sti_torch()
    rest = args[1:]
    if rest and isinstance(rest[0], torch.Tensor):
        return _sti_stood(rest[0])
    try:
        device = torch._C._nn._parse_to(*rest, **kwargs)[0]
    except Exception:
        return False
    return device is not None and device.type == "cuda"


def _sti_make_mode():
    base: Any = _sti_torch().overrides.TorchFunctionMode

    class _StiMode(base):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return _sti_handle(func, args, kwargs or {})

    return _StiMode()


def _sti_needed():
    """``(message, line)`` when the run met a value it could not have (even if the cell swallowed it)."""
    return _sti_state.get("needs")
