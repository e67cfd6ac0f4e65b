"""A shape-level dry run for TensorFlow and Keras (issue 36): no TensorFlow operation runs in the
child, Keras models are traced on symbolic shapes. STANDARD LIBRARY ONLY.

Joined after ``standin.py`` (torch's stand-in) and before ``dryrun.py``; runs only in the jailed child.
A forked copy of a kernel whose TensorFlow uses a GPU cannot use that GPU, and TensorFlow's own thread
pools were not copied either, so the child must run no TensorFlow operation at all. TensorFlow has no
``meta`` device; what it has is shape inference: a Keras 3 model traced in a scratch graph on
``KerasTensor`` inputs raises the same errors, from the same code, as the real ``fit`` raises before
its first step (an input of the wrong width, labels of the wrong rank for the loss, samples that do
not match).

So, in the child:

- every eager operation and every read of an eager tensor's values (``.numpy()``, ``print``, ``if t``)
  stops the run: "no verdict: needs TensorFlow to run `MatMul`";
- ``fit``/``evaluate``/``predict`` (and the ``*_on_batch`` forms) of a Keras model check what the real
  method checks first (``compile()`` called, the samples of x and y match), then trace one training,
  test or prediction step of the model's own code on the data's shapes (the batch dimension ``None``,
  as the real step is traced); calling a model or a layer on a batch traces the call on that batch's
  shape. The result is symbolic: its shape is known, its values are not (reading them stops the run);
- the cell runs in a Keras stateless scope that initialises nothing, so the weights it makes (a model
  built, an optimizer compiled, a model built by the trace on its first batch, as the real ``fit``
  builds it) are deferred, as Keras defers them in a trace: they have shapes and no values (reading one
  stops the run).

Used where TensorFlow initialised a GPU in the kernel, or forced by ``CRANE_DRYRUN_STANDIN=force``
(as for torch): then a CPU kernel's TensorFlow is treated exactly as a GPU's, which is how it is tested
here. TensorFlow and Keras are reached through ``sys.modules`` only.
"""

import sys as _stf_sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from standin.py, joined before this module
    from crane_lsp.kernel.agent.dryrun.standin import _sti_code_names, _sti_line, _sti_state, _StiNoVerdict

#: Keras methods that run the model on data, and the step each traces
_STF_STEPS = {
    "fit": "train", "train_on_batch": "train", "evaluate": "test", "test_on_batch": "test",
    "predict": "predict", "predict_on_batch": "predict",
}  # fmt: skip
#: the generated operation wrappers' ways into the eager runtime (``pywrap_tfe``), and ``execute``'s
_STF_EAGER_ENTRIES = ("TFE_Py_FastPathExecute", "TFE_Py_Execute", "TFE_Py_ExecuteCancelable")
#: an eager tensor's methods that read its values (its shape and dtype are host-side metadata)
_STF_VALUE_READS = {
    "numpy": "`.numpy()`", "_numpy": "`.numpy()`", "__array__": "an array of its values",
    "__bool__": "a Python truth value (`if`, `and`, `bool()`)", "__float__": "a Python number",
    "__int__": "a Python number", "__index__": "a Python number", "__repr__": "printing it",
    "__str__": "printing it", "__format__": "printing it", "tolist": "`.tolist()`",
}  # fmt: skip
#: a symbolic result's methods that would need values (Keras raises its own errors there)
_STF_SYMBOLIC_READS = {
    "numpy": "`.numpy()`", "__array__": "an array of its values", "__bool__": "a Python truth value",
    "__tf_tensor__": "a TensorFlow operation", "__float__": "a Python number", "__int__": "a Python number",
    "__index__": "a Python number", "__iter__": "iterating over it",
}  # fmt: skip
#: the operations on ``fit``'s or ``evaluate``'s result that read its values
_STF_RESULT_READS = (
    "__getitem__", "__iter__", "__len__", "__bool__", "__float__", "__int__", "__index__", "__array__",
    "__format__", "__str__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
    "__truediv__", "__rtruediv__", "__lt__", "__le__", "__gt__", "__ge__", "__round__", "__neg__",
    "__abs__", "__contains__",
)  # fmt: skip
_stf_state: dict[str, Any] = {}  # in the child only: "tracing" while a symbolic trace runs


class _StfEager(BaseException):
    """An eager TensorFlow operation was reached (the child may run none)."""


def _stf_keras():
    """Keras 3 on TensorFlow, as the kernel imported it (``keras`` itself), or None."""
    keras = _stf_sys.modules.get("keras")
    backend = _stf_sys.modules.get("keras.src.backend")
    if keras is None or backend is None or not str(getattr(keras, "__version__", "")).startswith("3."):
        return None
    try:
        return keras if backend.backend() == "tensorflow" else None
    except Exception:
        return None


def _stf_gpu():
    """Whether TensorFlow initialised a GPU in this process (read from its context: no call into it)."""
    tf_context = _stf_sys.modules.get("tensorflow.python.eager.context")
    try:
        ctx = getattr(tf_context, "_context", None)
        if ctx is None or getattr(ctx, "_context_handle", None) is None:
            return False
        devices = getattr(ctx, "_logical_devices", None) or ()
        return any(getattr(d, "device_type", "") == "GPU" for d in devices)
    except Exception:
        return False


def _stf_wanted(payload):
    """Why this dry run keeps TensorFlow from running (``"forced"``/``"gpu"``), or None."""
    if _stf_sys.modules.get("tensorflow.python.eager.execute") is None:
        return None
    import os

    if "force" in (str(payload.get("standin") or ""), os.environ.get("CRANE_DRYRUN_STANDIN", "")):
        return "forced"
    return "gpu" if _stf_gpu() else None


def _stf_begin(namespace, code, payload):
    """Before the cell: TensorFlow's eager runtime closed, Keras' data methods traced symbolically.
    Returns ``{"why", "names", "devices", "how"}``, or None when not wanted."""
    why = _stf_wanted(payload)
    if why is None:
        return None
    _stf_state["why"] = why
    _stf_close_eager(why)
    keras = _stf_keras()
    names = []
    if keras is not None:
        _stf_patch_keras(keras)
        layer = keras.layers.Layer
        names = sorted(
            n for n in _sti_code_names(code) if not n.startswith("_") and isinstance(namespace.get(n), layer)
        )
    device = "GPU:0" if why == "gpu" else "cpu"
    return {"why": why, "names": names, "devices": [device], "how": "keras", "mode": _StfLive()}


class _StfLive:
    """Entered around the cell: the stops are live only while it runs (after it, the verdict's own
    code may read a tensor: it then gets an ordinary error, never a stop). With Keras, the cell runs
    in a stateless scope that initialises nothing: the weights a cell makes (a model built, an
    optimizer compiled) are deferred, as Keras defers them in a trace, instead of being made by
    TensorFlow operations; reading one stops the run."""

    def __init__(self):
        self.scope = None

    def __enter__(self):
        _stf_state["live"] = True
        if _stf_keras() is not None:
            from keras.src.backend.common.stateless_scope import StatelessScope

            self.scope = StatelessScope(initialize_variables=False)
            self.scope.__enter__()
        return self

    def __exit__(self, *exc):
        _stf_state["live"] = False
        if self.scope is not None:
            self.scope.__exit__(*exc)
        return False


def _stf_note(info):
    why = "forced by CRANE_DRYRUN_STANDIN=force" if info["why"] == "forced" else "TensorFlow uses a GPU"
    models = ", ".join(info["names"][:8]) or "none named"
    return (
        f"a shape-level dry run ({why}): no TensorFlow operation runs; Keras models traced on the "
        f"data's shapes ({models})"
    )


def _stf_where(why):
    return "on the GPU" if why == "gpu" else "TensorFlow stood in"


def _stf_close_eager(why):
    """Every way into TensorFlow's eager runtime stops the run (the child's copy of the modules)."""
    pywrap = _stf_sys.modules.get("tensorflow.python.pywrap_tfe")
    execute: Any = _stf_sys.modules.get("tensorflow.python.eager.execute")
    where = _stf_where(why)

    def stopper(name_at):
        def stop(*args, **kwargs):
            if _stf_state.get("tracing"):
                raise _StfEager(args[name_at] if len(args) > name_at else "an operation")
            op = args[name_at] if len(args) > name_at else "an operation"
            _stf_stop(f"needs TensorFlow to run `{op}` ({where})")

        return stop

    for entry in _STF_EAGER_ENTRIES:
        if pywrap is not None and hasattr(pywrap, entry):
            setattr(pywrap, entry, stopper(1))
    if execute is not None:
        execute.quick_execute = execute.execute = stopper(0)
    base = getattr(_stf_sys.modules.get("tensorflow.python.framework.ops"), "_EagerTensorBase", None)
    if base is not None:
        for name, words in _STF_VALUE_READS.items():
            if hasattr(base, name):
                setattr(base, name, _stf_value_stop(f"needs the values of {{}} ({where}): {words}"))


def _stf_value_stop(template):
    def stop(self, *args, **kwargs):
        _stf_stop(template.format(_stf_name_of(self)))

    return stop


def _stf_name_of(value):
    """The cell's name bound to ``value`` in backquotes, else 'a tensor'."""
    frame = _sti_line()
    if frame is not None:
        for name, bound in {**frame.f_globals, **frame.f_locals}.items():
            if bound is value and not name.startswith("_"):
                return f"`{name}`"
    return "a tensor"


def _stf_stop(message):
    """Stop the run: no verdict (recorded, so that an ``except`` in the cell cannot swallow it).
    Outside the cell's run, an ordinary error."""
    if not _stf_state.get("live"):
        raise RuntimeError(f"TensorFlow is stood in by shapes in this copy: {message}")
    frame = _sti_line()
    _sti_state.setdefault("needs", (message, frame.f_lineno if frame is not None else None))
    raise _StiNoVerdict(message)


def _stf_patch_keras(keras):
    """The child's Keras: the data methods and a call on a concrete batch traced on shapes; a
    symbolic result's value reads stop the run."""
    model_cls = keras.Model
    for method, step in _STF_STEPS.items():
        original = getattr(model_cls, method, None)
        if original is not None:
            setattr(model_cls, method, _stf_method(method, step, original))
    layer_cls = keras.layers.Layer
    layer_cls.__call__ = _stf_traced_call(layer_cls.__call__, symbolic_too=False)
    # a loss on a batch or on a symbolic result (it would convert its arguments with TensorFlow)
    keras.losses.Loss.__call__ = _stf_traced_call(keras.losses.Loss.__call__, symbolic_too=True)
    tape = getattr(_stf_sys.modules.get("tensorflow.python.eager.backprop"), "GradientTape", None)
    if tape is not None:
        tape.gradient = _stf_gradient_stop
    variable_cls = keras.Variable
    variable_init = variable_cls.__init__

    def make_variable(self, initializer, shape=None, dtype=None, *args, **kwargs):
        if isinstance(initializer, str):  # a name: Keras' own first step, to a callable
            initializer = keras.initializers.get(initializer)
        if _stf_state.get("live") and not callable(initializer):  # deferred like the others
            initializer, shape, dtype = _stf_deferred_value(keras, initializer, shape, dtype)
            if not callable(initializer):  # a stateless scope takes only an initializer to defer
                where = _stf_where(_stf_state.get("why"))
                _stf_stop(f"a variable made from a tensor's values needs TensorFlow ({where})")
        variable_init(self, initializer, shape, dtype, *args, **kwargs)

    variable_cls.__init__ = make_variable
    tensor_cls = keras.KerasTensor
    for name, words in _STF_SYMBOLIC_READS.items():
        template = f"needs the values of {{}} (a shape-level result): {words}"
        setattr(tensor_cls, name, _stf_value_stop(template))
    tensor_cls.__len__ = _stf_symbolic_len


def _stf_symbolic_len(self):
    """``len()`` of a symbolic result: its first dimension where the shape says it (``predict``'s
    has the real number of samples), else the run stops."""
    if self.shape and isinstance(self.shape[0], int):
        return self.shape[0]
    _stf_stop(f"needs the values of {_stf_name_of(self)} (a shape-level result): its length")
    return 0


def _stf_deferred_value(keras, value, shape, dtype):
    """A variable's initial value (a number, a NumPy array) as the initializer Keras defers in a
    stateless scope, with the shape and dtype Keras would give it; anything else as it is."""
    np = _stf_sys.modules.get("numpy")
    numbers = (int, float, np.ndarray, np.generic) if np is not None else ()
    if np is None or not isinstance(value, numbers):
        return value, shape, dtype
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        return value, shape, dtype
    if dtype is None:  # as TensorFlow converts it: Python floats to floatx, ints to int32
        python = {float: keras.config.floatx(), int: "int32", bool: "bool"}
        dtype = python.get(type(value), array.dtype.name)
    shape = tuple(array.shape) if shape is None else shape
    return (lambda shape, dtype=None, array=array: array), shape, dtype


def _stf_gradient_stop(self, *args, **kwargs):
    _stf_stop(f"needs TensorFlow to compute the gradients ({_stf_where(_stf_state.get('why'))})")


def _stf_traced_call(original, symbolic_too):
    """``original(self, ...)`` (a layer's or a loss's ``__call__``) traced on the shapes of the data
    it gets (a batch; with ``symbolic_too``, a symbolic result as well); as it was otherwise."""

    def call(self, *args, **kwargs):
        tree = (args, kwargs)
        if _stf_state.get("tracing") or not (_stf_concrete(tree) or (symbolic_too and _stf_symbolic(tree))):
            return original(self, *args, **kwargs)
        specs = _stf_specs(tree, batch_none=False)
        return _stf_trace(lambda a, k: original(self, *a, **k), *specs)

    return call


def _stf_symbolic(tree):
    keras = _stf_keras()
    return keras is not None and any(isinstance(leaf, keras.KerasTensor) for leaf in _stf_leaves(tree))


def _stf_method(method, step, original):
    import inspect

    signature = inspect.signature(original)

    def run(self, *args, **kwargs):
        given = signature.bind(self, *args, **kwargs).arguments  # its TypeError is the real one
        return _stf_step(self, method, step, given)

    run.__name__ = method
    return run


def _stf_step(model, method, step, given):
    """What ``model.<method>(...)`` checks before its first step, then that step traced on shapes
    (``given``: the arguments bound by the method's own signature)."""
    if step != "predict":
        model._assert_compile_called(method)  # the real method's first check ("You must call compile()")
    adapted = method in ("fit", "evaluate", "predict")  # through Keras' data adapters (*_on_batch not)
    data = (given.get("x"), given.get("y"), given.get("sample_weight"))
    x, y, sample_weight = _stf_adapted(*data) if adapted else data
    xs, ys, ws = _stf_specs((x, y, sample_weight), batch_none=adapted)
    out = _stf_trace(lambda a, k: _stf_one_step(model, step, *a), (xs, ys, ws), {})
    validation = given.get("validation_data") if method == "fit" else None
    if validation is not None:  # run after the first epoch: a crash there is the cell's too
        from keras.src.trainers.data_adapters import data_adapter_utils

        vspecs = _stf_specs(_stf_adapted(*data_adapter_utils.unpack_x_y_sample_weight(validation)), True)
        _stf_trace(lambda a, k: _stf_one_step(model, "test", *a), vspecs, {})
    if step == "predict":
        return _stf_with_batch(out, _stf_samples(x))
    return _StfResult(f"the result of `{method}()`", method == "fit")


def _stf_adapted(x, y, sample_weight):
    """The data as Keras' adapters see it before any TensorFlow operation. Arrays, frames and the
    like (Keras' own ``can_convert_arrays``) take the array adapter's host-side path: its check that
    they hold as many samples, and its conversion (floats to ``floatx``, a frame cast whole, an
    array of Python objects refused), so the run meets the same errors and dtypes. Anything else (a
    dataset, a ``PyDataset``, a generator) gives its first batch (``_stf_unpack``)."""
    from keras.src.trainers.data_adapters import array_data_adapter, array_slicing, data_adapter_utils

    if not array_data_adapter.can_convert_arrays((x, y, sample_weight)):
        return _stf_unpack(x, y, sample_weight)
    packed = data_adapter_utils.pack_x_y_sample_weight(x, y, sample_weight)
    data_adapter_utils.check_data_cardinality(packed)
    converted = array_slicing.convert_to_sliceable(packed)

    def arrays(node):
        if isinstance(node, dict):
            return {k: arrays(v) for k, v in node.items()}
        if type(node) in (list, tuple):
            return type(node)(arrays(v) for v in node)
        return node.array if hasattr(node, "array") else node

    return (*data_adapter_utils.unpack_x_y_sample_weight(arrays(converted)), None, None)[:3]


def _stf_one_step(model, step, x, y, sample_weight):
    """The model's own step on symbolic data: its forward pass and, to train or test, its loss."""
    out = model(x, training=step == "train")
    if step == "predict":
        return out
    return model.compute_loss(x=x, y=y, y_pred=out, sample_weight=sample_weight, training=step == "train")


def _stf_trace(fn, args, kwargs):
    """``fn`` on symbolic inputs in Keras' scratch graph; an eager operation reached inside stops.
    Inside an outer stateless scope that initialises nothing: a model built by the trace (its first
    batch) keeps its new weights uninitialised, as Keras defers them in a trace, instead of having
    them made by TensorFlow operations when the trace ends; reading one later stops the run."""
    from keras.src.backend import compute_output_spec
    from keras.src.backend.common.stateless_scope import StatelessScope

    _stf_state["tracing"] = True
    try:
        with StatelessScope(initialize_variables=False):
            return compute_output_spec(fn, args, kwargs)
    except _StfEager as eager:
        _stf_stop(f"no shape-level trace: the step needs TensorFlow to run `{eager.args[0]}`")
    finally:
        _stf_state["tracing"] = False


def _stf_unpack(x, y, sample_weight):
    """A dataset's, a ``PyDataset``'s or a generator's first element as (x, y, weights); arrays as
    they are."""
    tf_data = _stf_sys.modules.get("tensorflow.python.data.ops.dataset_ops")
    if tf_data is not None and isinstance(x, tf_data.DatasetV2):
        spec = x.element_spec  # the batch's shapes, read from the dataset's graph (nothing runs)
        parts = tuple(spec) if isinstance(spec, tuple) else (spec,)
        return (*parts, None, None)[:3]
    keras = _stf_keras()
    py_dataset = getattr(getattr(keras, "utils", None), "PyDataset", None)
    first = None
    if py_dataset is not None and isinstance(x, py_dataset):
        first = x[0]  # the user's own code on the CPU, in the child's copy
    elif hasattr(x, "__next__") and not hasattr(x, "shape"):
        first = next(x)  # the child's copy of the generator
    if first is not None:
        parts = tuple(first) if isinstance(first, (tuple, list)) else (first,)
        return (*parts, None, None)[:3]
    return x, y, sample_weight


def _stf_leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _stf_leaves(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _stf_leaves(value)
    elif tree is not None:
        yield tree


def _stf_concrete(tree):
    """Whether a call gets data (anything with a shape: an array, a frame, an eager tensor) rather
    than symbolic tensors alone. Inside a trace nothing is concrete (``_stf_traced_call`` asks only
    outside one)."""
    keras = _stf_keras()
    leaves = list(_stf_leaves(tree))
    if keras is not None and any(isinstance(leaf, keras.KerasTensor) for leaf in leaves):
        return False
    return any(hasattr(leaf, "shape") for leaf in leaves)


def _stf_samples(value):
    for leaf in _stf_leaves(value):
        shape = getattr(leaf, "shape", None)
        try:
            dims = tuple(shape) if shape is not None else ()
        except TypeError:
            return None
        return int(dims[0]) if dims and dims[0] is not None else None
    return None


def _stf_specs(tree, batch_none):
    """The data as ``KerasTensor``s of the same shapes and dtypes (the batch dimension ``None`` where
    Keras batches it); a datum whose shape or dtype cannot be read stops the run."""
    keras = _stf_keras()

    def one(value):
        if value is None or isinstance(value, keras.KerasTensor) or not hasattr(value, "shape"):
            return value  # not data: ``training=True``, a mask of None, a name
        shape, dtype = _stf_shape_dtype(value)
        if batch_none and shape:
            shape = (None, *shape[1:])
        return keras.KerasTensor(shape, dtype)

    def walk(tree):
        if isinstance(tree, dict):
            return {k: walk(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(walk(v) for v in tree) if type(tree) in (list, tuple) else tree
        return one(tree)

    return walk(tree)


def _stf_shape_dtype(value):
    """A datum's shape and dtype name. Data that is not numbers (text, Python objects) stops the run:
    TensorFlow converts it itself (it parses text labels), which the copy cannot; what Keras' data
    adapter refuses on the host was refused before this (``_stf_adapted``)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None and hasattr(value, "dtypes") and hasattr(value, "iloc"):  # a frame: one for all
        dtype = value.iloc[:1].to_numpy().dtype
    kind = getattr(dtype, "kind", None)  # NumPy's; a TensorSpec's dtype (a tf.DType) has none
    if kind is not None and kind not in "biufc":
        _stf_stop(f"no shape-level trace: TensorFlow would convert data of dtype {dtype}")
    try:
        shape = tuple(None if d is None else int(d) for d in value.shape)
    except TypeError:
        _stf_stop(f"no shape-level trace: cannot read the shape of a {type(value).__name__}")
    return shape, getattr(dtype, "name", None) or str(dtype)


def _stf_with_batch(out, samples):
    """``predict``'s result: the traced output with the real number of samples."""
    keras = _stf_keras()

    def fix(t):
        if isinstance(t, keras.KerasTensor) and t.shape and samples is not None:
            return keras.KerasTensor((samples, *t.shape[1:]), t.dtype)
        return t

    if isinstance(out, dict):
        return {k: fix(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return type(out)(fix(v) for v in out)
    return fix(out)


class _StfResult:
    """What ``fit``/``evaluate`` return in a shape-level run: its values are unknown, so reading one
    stops the run; the ``History`` of ``fit`` can still be shown (its text names no value)."""

    def __init__(self, what, shown):
        object.__setattr__(self, "_stf_what", what)
        object.__setattr__(self, "_stf_shown", shown)

    def __getattr__(self, name):
        if name.startswith(("_repr_", "_ipython_")):
            raise AttributeError(name)
        _stf_stop(f"needs the values of {self._stf_what} (a shape-level run)")

    def __repr__(self):
        if self._stf_shown:
            return "<keras.callbacks.History (a shape-level run)>"
        _stf_stop(f"needs the values of {self._stf_what} (a shape-level run): printing it")
        return ""


def _stf_result_reads():
    def stop(self, *args, **kwargs):
        _stf_stop(f"needs the values of {self._stf_what} (a shape-level run)")

    for name in _STF_RESULT_READS:
        setattr(_StfResult, name, stop)


_stf_result_reads()
