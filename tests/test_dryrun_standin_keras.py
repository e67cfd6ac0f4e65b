"""The shape-level dry run for TensorFlow and Keras (issue 36), forced on a CPU kernel
(``kernel/agent/dryrun/standin_tf.py``), exactly as in a kernel whose TensorFlow uses a GPU: no
TensorFlow operation runs in the copy, Keras models are traced on the data's shapes.

Each crash class is a crash and its near miss; the truth is the same cell run for real on the CPU
afterwards (same exception class). A cell that needs a tensor's values gets "no verdict", the client
words it as a shape-level run, and the kernel's state is unchanged by the dry runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
from jail_util import JailKernel, forced_dry_run, set_up_kernels, verdict

from crane_lsp.dryrun import DryRunOutcome, outcome_to_prediction

if importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("keras") is None:
    pytest.skip("tensorflow/keras is not installed", allow_module_level=True)

SETUP = """
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import pandas as pd
import tensorflow as tf
import keras
keras.utils.set_random_seed(0)
L = keras.layers
model = keras.Sequential([keras.Input((10,)), L.Dense(16, activation="relu"), L.Dense(3)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
onehot_model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(3, activation="softmax")])
onehot_model.compile(optimizer="adam", loss="categorical_crossentropy")
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
lazy = keras.Sequential([L.Dense(8, activation="relu"), L.Dense(3)])  # built by its first batch
lazy.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
bare = keras.Sequential([keras.Input((10,)), keras.layers.Dense(3)])
cnn = keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(4, 3), L.Flatten(), L.Dense(2)])
X = np.random.rand(40, 10).astype("float32")
X_wide = np.random.rand(40, 12).astype("float32")
y = np.random.randint(0, 3, 40)
y_short = y[:30]
Y_onehot = np.eye(3)[y]
frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(10)])
frame_text = frame.assign(f9=["a", "b"] * 20)  # a text column among the features
X_objects = X.astype(object)
images = np.random.rand(8, 1, 28, 28).astype("float32")  # channels first
images_last = images.transpose(0, 2, 3, 1)
ds = tf.data.Dataset.from_tensor_slices((X_wide, y)).batch(8)
ds_ok = tf.data.Dataset.from_tensor_slices((X, y)).batch(8)
t = tf.constant([1.0, 2.0])
"""
STATE = (
    "(lazy.built, round(float(np.sum(model.layers[0].get_weights()[0])), 6),"
    " model.optimizer.iterations.numpy().item(),"
    " sorted(k for k in globals() if not k.startswith('_')), get_ipython().execution_count)"
)


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    yield from set_up_kernels(SETUP)


def _run(jk: JailKernel, cell: str) -> dict[str, Any]:
    result = forced_dry_run(jk, cell, 30.0)
    assert "keras" in result["standin"]["how"], result["standin"]
    return result


def _real(jk: JailKernel, cell: str) -> tuple[str, str | None]:
    """The cell run for real on fresh models (after a failed ``fit`` Keras' cached train function is
    broken: "Creating variables on a non-first call")."""
    jk.run(SETUP)
    reply = jk.run(cell, allow_error=True)
    return reply["status"], reply.get("ename")


ONE = ", epochs=1, verbose=0)"
TAPE = "with tf.GradientTape() as tape:\n    "
BUILD = (
    "m2 = keras.Sequential([keras.Input((10,)), L.Dense(4), L.Dense(3)])\n"
    "m2.compile('adam', 'sparse_categorical_crossentropy')\n"
)
INPUTS = "a = keras.Input((4,))\n"
CONCAT = "\nc = L.Concatenate()([a, b])"
LOGITS = "logits = model(X[:8], training=True)\n    "
LOSS = "loss = loss_fn(y[:8], logits)"
CASES = [  # (crash, near miss, exception, line)
    # an input of the wrong width: fit, predict, evaluate, a call on a batch, a frame
    ("n = 1\nmodel.fit(X_wide, y" + ONE, "n = 1\nmodel.fit(X, y" + ONE, "ValueError", 2),
    ("p = model.predict(X_wide, verbose=0)", "p = model.predict(X, verbose=0)", "ValueError", 1),
    ("r = model.evaluate(X_wide, y, verbose=0)", "r = model.evaluate(X, y, verbose=0)", "ValueError", 1),
    ("out = model(X_wide[:4])", "out = model(X[:4])", "ValueError", 1),
    ("model.fit(frame.iloc[:, :8], y" + ONE, "model.fit(frame, y" + ONE, "ValueError", 1),
    # data Keras cannot convert: a text column, an array of Python objects
    ("model.fit(frame_text, y" + ONE, "model.fit(frame, y" + ONE, "ValueError", 1),
    ("model.fit(X_objects, y" + ONE, "model.fit(X_objects.astype('float32'), y" + ONE, "ValueError", 1),
    # labels of the wrong rank for the loss
    ("model.fit(X, Y_onehot" + ONE, "model.fit(X, y" + ONE, "ValueError", 1),
    ("onehot_model.fit(X, y" + ONE, "onehot_model.fit(X, Y_onehot" + ONE, "ValueError", 1),
    # samples that do not match, a model never compiled, channels first for a channels-last model
    ("model.fit(X, y_short" + ONE, "model.fit(X[:30], y_short" + ONE, "ValueError", 1),
    ("bare.fit(X, y" + ONE, "bare.predict(X, verbose=0)", "ValueError", 1),
    ("cnn.predict(images, verbose=0)", "cnn.predict(images_last, verbose=0)", "ValueError", 1),
    # a model built by its first batch (the labels of the wrong rank for its loss)
    ("lazy.fit(X, Y_onehot" + ONE, "lazy.fit(X, y" + ONE, "ValueError", 1),
    # a model made, compiled and fitted in one cell (its weights, its optimizer's: deferred in the copy)
    (BUILD + "m2.fit(X_wide, y" + ONE, BUILD + "m2.fit(X, y" + ONE, "ValueError", 3),
    # a functional model whose layers do not fit together (raised where it is made)
    (INPUTS + "b = keras.Input((3, 2))" + CONCAT, INPUTS + "b = keras.Input((3,))" + CONCAT, "ValueError", 3),
    # a training loop of its own: the call and the loss on a batch
    (
        TAPE + "logits = model(X_wide[:8], training=True)",
        TAPE + "logits = model(X[:8], training=True)",
        "ValueError",
        2,
    ),
    (
        TAPE + LOGITS + "loss = loss_fn(Y_onehot[:8], logits)",
        TAPE + LOGITS + "loss = loss_fn(y[:8], logits)",
        "ValueError",
        3,
    ),
    # arguments bound by the method's own signature: a keyword it does not take
    ("model.fit(X, y, epochz=1, verbose=0)", "model.fit(X, y" + ONE, "TypeError", 1),
    # a dataset's element shapes, and validation data after the first epoch
    ("model.fit(ds" + ONE, "model.fit(ds_ok" + ONE, "ValueError", 1),
    (
        "h = model.fit(X, y, validation_data=(X_wide, y)" + ONE,
        "h = model.fit(X, y, validation_data=(X, y)" + ONE,
        "ValueError",
        1,
    ),
]
IDS = ["fit-width", "predict", "evaluate", "call", "frame", "text-column", "objects", "sparse-labels",
       "onehot-labels", "samples", "compile", "channels", "unbuilt", "built-here", "concatenate", "tape-call",
       "tape-loss", "keyword", "dataset", "validation"]  # fmt: skip


@pytest.mark.parametrize(("crash", "near", "exception", "line"), CASES, ids=IDS)
def test_crash_and_near_miss_as_on_the_cpu(
    jk: JailKernel, crash: str, near: str, exception: str, line: int
) -> None:
    seen = _run(jk, crash)
    assert verdict(seen)[:3] == ("raised", exception, line), verdict(seen)
    assert any("Keras models traced" in n for n in seen["notes"]), seen["notes"]
    clean = _run(jk, near)
    assert clean["outcome"] == "completed", verdict(clean)
    # the truth, on the CPU for real
    assert _real(jk, crash) == ("error", exception)
    assert _real(jk, near) == ("ok", None)


@pytest.mark.parametrize(
    ("cell", "words", "line"),
    [
        ("p = model.predict(X, verbose=0)\nbest = np.argmax(p, axis=1)", "`p`", 2),
        ("z = t * 2", "needs TensorFlow to run", 1),
        ("if t[0] > 0:\n    pass", "needs TensorFlow to run", 1),
        ("print(t)", "`t`", 1),
        ("h = model.fit(X, y, epochs=1, verbose=0)\nloss = h.history['loss'][-1]", "fit()", 2),
        ("try:\n    v = t.numpy()\nexcept Exception:\n    v = None", "`t`", 2),
        (
            TAPE + LOGITS + "loss = loss_fn(y[:8], logits)\ng = tape.gradient(loss, model.trainable_weights)",
            "gradients",
            4,
        ),
        # the weights of a model made in the cell: deferred in the copy, their values unknown
        (BUILD + "w = m2.get_weights()", "needs TensorFlow to run", 3),
        # a variable made from a tensor's values: the copy's scope defers only initializers
        ("v = keras.Variable(t)", "a variable made from a tensor's values", 1),
        # labels as text: TensorFlow itself parses them (for real this runs), the copy cannot
        (TAPE + LOGITS + "loss = loss_fn(y[:8].astype(str), logits)", "TensorFlow would convert", 3),
    ],
    ids=[
        "predict-values",
        "eager-op",
        "truth",
        "print",
        "history",
        "swallowed",
        "gradients",
        "weights",
        "variable-from-tensor",
        "text",
    ],
)
def test_a_cell_needing_values_gets_no_verdict(jk: JailKernel, cell: str, words: str, line: int) -> None:
    seen = _run(jk, cell)
    assert seen["outcome"] == "no_verdict", verdict(seen)
    assert words in seen["message"] and seen["line"] == line, (seen["message"], seen["line"])


def test_variables_the_cell_makes_are_deferred(jk: JailKernel) -> None:
    """From an array, a number or an initializer's name: deferred with their shapes, as for real."""
    cell = (
        "v = keras.Variable(np.zeros(3))\nw = keras.Variable(0.5)\n"
        "u = keras.Variable(initializer='zeros', shape=(2,))\nassert v.shape == (3,) and u.shape == (2,)"
    )
    assert _run(jk, cell)["outcome"] == "completed"
    assert _real(jk, cell) == ("ok", None)


def test_shapes_of_a_symbolic_result_can_be_read(jk: JailKernel) -> None:
    """``predict``'s stand-in has the real number of samples and the model's output width (its batch
    size given by position, as its signature takes it)."""
    cell = "p = model.predict(X, 8, verbose=0)\nassert p.shape == (40, 3), p.shape\nassert len(p) == len(X)"
    seen = _run(jk, cell)
    assert seen["outcome"] == "completed", verdict(seen)
    wrong = _run(jk, "p = model.predict(X, verbose=0)\nassert p.shape == (40, 4)")
    assert verdict(wrong)[:3] == ("raised", "AssertionError", 2), verdict(wrong)


def test_client_words_it_as_a_shape_level_run(jk: JailKernel) -> None:
    cell = "model.fit(X_wide, y, verbose=0)"
    crash = outcome_to_prediction(DryRunOutcome(**_run(jk, cell)), cell)
    assert crash.crash and crash.certainty == "observed" and crash.line == 0  # LSP lines count from 0
    words = "shape-level dry run (TensorFlow on cpu stood in: Keras traced on the data's shapes)"
    assert words in crash.diagnosis, crash.diagnosis
    cell = "model.fit(X, y, verbose=0)"
    clean = outcome_to_prediction(DryRunOutcome(**_run(jk, cell)), cell)
    assert clean.crash is False and clean.verdict == "nothing-found"
    assert "no shape error seen" in clean.message and "ran clean" not in clean.message


def test_pandas_cell_in_a_tensorflow_kernel_runs_for_real(jk: JailKernel) -> None:
    """A cell that touches no TensorFlow is an ordinary dry run, values and all."""
    seen = _run(jk, "m = frame['f0'].mean()\nassert m > 0\ncol = frame['missing']")
    assert verdict(seen)[:3] == ("raised", "KeyError", 3), verdict(seen)


def test_kernel_state_unchanged(jk: JailKernel) -> None:
    before = jk.eval(STATE)
    cells = ("model.fit(X, y, epochs=2, verbose=0)", "model.fit(X_wide, y)", "z = t * 2", "lazy.fit(X, y)")
    for cell in cells:
        _run(jk, cell)
    assert jk.eval(STATE) == before


def test_a_generator_s_first_batch_gives_the_shapes(jk: JailKernel) -> None:
    make = "batches = ((a[i : i + 8], y[i : i + 8]) for i in range(0, 40, 8))\n"
    seen = _run(jk, "a = X_wide\n" + make + "model.fit(batches, epochs=1, verbose=0)")
    assert verdict(seen)[:3] == ("raised", "ValueError", 3), verdict(seen)
    near = _run(jk, "a = X\n" + make + "model.fit(batches, epochs=1, verbose=0)")
    assert near["outcome"] == "completed", verdict(near)
    assert _real(jk, "a = X_wide\n" + make + "model.fit(batches, epochs=1, verbose=0)") == (
        "error",
        "ValueError",
    )
    assert _real(jk, "a = X\n" + make + "model.fit(batches, epochs=1, verbose=0)") == ("ok", None)


GPU_ON = (  # a GPU in TensorFlow's device list: the context's own list, as TensorFlow fills it
    "from tensorflow.python.eager import context as _ctx\n"
    "_ctx._context._logical_devices.append(_ctx.LogicalDevice(name='/device:GPU:0', device_type='GPU'))"
)
GPU_OFF = "_ctx._context._logical_devices.pop()\ndel _ctx"


def test_a_tensorflow_gpu_kernel_takes_the_path_unforced(jk: JailKernel) -> None:
    """Nothing forced: a GPU in TensorFlow's device list takes the path, worded for the GPU; nothing
    runs in the kernel meanwhile."""
    jk.run(GPU_ON)
    try:
        crash = jk.dry_run("model.fit(X_wide, y, verbose=0)", budget_s=30.0)
        eager = jk.dry_run("z = t * 2", budget_s=30.0)
    finally:
        jk.run(GPU_OFF)
    assert crash["standin"]["why"] == "gpu" and crash["standin"]["devices"] == ["GPU:0"], crash["standin"]
    assert verdict(crash)[:3] == ("raised", "ValueError", 1), verdict(crash)
    assert any("TensorFlow uses a GPU" in n for n in crash["notes"]), crash["notes"]
    assert (
        eager["outcome"] == "no_verdict" and eager["message"] == "needs TensorFlow to run `Mul` (on the GPU)"
    )


def test_through_the_pipeline_and_a_prepared_child(jk: JailKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's environment forces it (as for ``crane-lsp check`` and the server), through a child
    prepared ahead; the verdict is the pipeline's, worded as a shape-level run."""
    import asyncio

    from crane_lsp.dryrun import DryRunner
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.pipeline import Pipeline
    from crane_lsp.settings import Settings

    monkeypatch.setenv("CRANE_DRYRUN_STANDIN", "force")

    async def predict(cell: str) -> Any:
        async with await KernelLink.connect(jk.kernel.connection_file) as link:
            settings = Settings(dry_run="on", dry_run_budget_s=30.0, dry_run_shorten=False)
            runner = DryRunner(link, settings)
            prepared = await runner.prepare()
            assert prepared is not None and prepared.outcome == "prepared", prepared
            pipeline = Pipeline(settings, link=link, dryrun=runner)
            return (await pipeline.predict(cell, layers={"dryrun"})).prediction

    crash = asyncio.run(predict("h = model.predict(X, verbose=0)\nmodel.fit(X_wide, y, verbose=0)"))
    assert crash.crash and crash.certainty == "observed" and crash.line == 1, crash
    assert crash.exception == "ValueError"
    assert any("Keras traced on the data's shapes" in n for n in crash.notes), crash.notes
    stopped = asyncio.run(predict("z = t * 2"))
    assert not stopped.crash and stopped.verdict == "no-verdict", stopped
    assert "needs TensorFlow to run `Mul`" in stopped.message, stopped.message


def test_undo_holds_no_copy_of_a_tensorflow_gpu_kernel(jk: JailKernel) -> None:
    """The undo's copy needs values, which live on the GPU: it refuses, and says why (the dry run's
    shape-level path needs none)."""
    jk.run(GPU_ON)
    try:
        jk.call("undo_configure", {"on": True, "reserve_mb": 64, "hold_s": 30})
        jk.run("undo_probe = 1")
        changes = jk.call("undo_changes", {})
    finally:
        jk.call("undo_configure", {"on": False})
        jk.run(GPU_OFF)
    assert "a GPU is initialised in the kernel (TensorFlow)" in str(changes), changes
