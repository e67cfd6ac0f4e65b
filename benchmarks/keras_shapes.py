"""The shape-level dry run for TensorFlow/Keras (issue 36) against the truth, on mutants derived
systematically from clean Keras cells.

Forced on this CPU machine (``CRANE_DRYRUN_STANDIN=force``: no TensorFlow operation runs in the copy,
Keras models are traced on the data's shapes, exactly as in a kernel whose TensorFlow uses a GPU).

The corpus is not hand-picked crashes. ``BASE`` holds clean cells that hand data to a Keras model
(``fit``, ``evaluate``, ``predict``, a call on a batch, validation data, a training loop of its
own). Every data argument of every such call gets every shape mutation that applies to its number of
axes (``MUTATIONS``: a feature fewer or more, the batch axis dropped, an axis added, the channel
axis moved, samples cut, labels one-hot or back). Each base cell and each mutant is dry-run, then
run for real on fresh models; the real run is the truth. A mutant that runs clean for real (Keras
adjusts a rank by one, a loss broadcasts) is a false-alarm check like the base cells.

Then every code cell of ``examples/keras_images`` (a ``DirectoryIterator`` into ``fit``) in order,
dry-run, then run for real.

Prints one row per cell and the totals: crashes observed with the right exception and line, false
alarms, no verdicts, and the crashes missed (a clean shape-level trace where the real run raised: a
crash that only the values decide).

``--real-gpu`` (``benchmarks/gpu_real.sh``, where TensorFlow sees a GPU): nothing forced; the setup
trains one step on the GPU, so the dry run takes the path because TensorFlow initialised a GPU, and
every truth is the real run on the GPU.

    python benchmarks/keras_shapes.py [--budget S] [--real-gpu]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_shapes import Row, dry_run_then_run, report, set_up_kernel, shape_level_settings, walk_notebook

REPO = Path(__file__).resolve().parents[1]
#: our notebook that uses Keras: its cells in order, the real run the truth
NOTEBOOK = REPO / "examples" / "keras_images" / "images.ipynb"
SETUP = """
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras
keras.utils.set_random_seed(0)
L = keras.layers
model = keras.Sequential([keras.Input((10,)), L.Dense(16, activation="relu"), L.Dense(3)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
onehot_model = keras.Sequential([keras.Input((10,)), L.Dense(3, activation="softmax")])
onehot_model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
reg = keras.Sequential([keras.Input((10,)), L.Dense(8, activation="relu"), L.Dense(1)])
reg.compile(optimizer="sgd", loss="mse")
cnn = keras.Sequential([keras.Input((16, 16, 3)), L.Conv2D(4, 3), L.GlobalAveragePooling2D(), L.Dense(2)])
cnn.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
lazy = keras.Sequential([L.Dense(8, activation="relu"), L.Dense(3)])  # built by its first batch
lazy.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
X = np.random.rand(48, 10).astype("float32")
y = np.random.randint(0, 3, 48)
Y_onehot = keras.utils.to_categorical(y, 3)
t = np.random.rand(48).astype("float32")
X_val = np.random.rand(16, 10).astype("float32")
y_val = np.random.randint(0, 3, 16)
imgs = np.random.rand(12, 16, 16, 3).astype("float32")
labels = np.random.randint(0, 2, 12)
"""
#: clean cells handing data to a Keras model: every mutant is derived from these
BASE = [
    "model.fit(X, y, epochs=1, verbose=0)",
    "onehot_model.fit(X, Y_onehot, epochs=1, verbose=0)",
    "reg.fit(X, t, epochs=1, verbose=0)",
    "cnn.fit(imgs, labels, epochs=1, verbose=0)",
    "p = model.predict(X, verbose=0)",
    "r = reg.evaluate(X, t, verbose=0)",
    "out = cnn(imgs[:2])",
    "h = model.fit(X, y, validation_data=(X_val, y_val), epochs=1, verbose=0)",
    "lazy.fit(X, y, epochs=1, verbose=0)",
    "with tf.GradientTape() as tape:\n    logits = model(X[:8], training=True)\n"
    "    loss = loss_fn(y[:8], logits)",
]
#: the methods that take data, and the models and losses called on data themselves
DATA_METHODS = {"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"}
CALLED_ON_DATA = {"model", "onehot_model", "reg", "cnn", "lazy", "loss_fn"}
#: name -> (applies to this many axes, the mutated expression): shapes, then dtypes
MUTATIONS: dict[str, tuple[Callable[[int], bool], str]] = {
    "feature fewer": (lambda nd: nd >= 1, "{e}[..., :-1]"),
    "feature more": (lambda nd: nd >= 1, "np.concatenate([{e}, {e}[..., :1]], axis=-1)"),
    "batch axis dropped": (lambda nd: nd >= 2, "{e}[0]"),
    "axis added": (lambda nd: nd >= 1, "{e}[..., None]"),
    "channel axis moved": (lambda nd: nd >= 3, "np.moveaxis({e}, -1, 1)"),
    "samples cut": (lambda nd: nd >= 1, "{e}[:-5]"),
    "labels one-hot": (lambda nd: nd == 1, "keras.utils.to_categorical({e})"),
    "labels from one-hot": (lambda nd: nd == 2, "{e}.argmax(-1)"),
    "dtype: Python objects": (lambda nd: nd >= 1, "{e}.astype(object)"),
    "dtype: text": (lambda nd: nd >= 1, "{e}.astype(str)"),
}


def data_arguments(source: str) -> Iterator[ast.expr]:
    """The expressions a cell hands to a model as data: a data method's positional arguments and its
    ``validation_data``'s items, and the arguments of a call on a model or a loss."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in DATA_METHODS:
            yield from node.args
            for keyword in node.keywords:
                if keyword.arg == "validation_data" and isinstance(keyword.value, ast.Tuple):
                    yield from keyword.value.elts
        elif isinstance(func, ast.Name) and func.id in CALLED_ON_DATA:
            yield from node.args


def mutants(source: str, ndims: dict[str, int]) -> Iterator[tuple[str, str]]:
    """(what changed, mutated cell) for every data argument and every mutation that applies to it."""
    for argument in data_arguments(source):
        text = ast.get_source_segment(source, argument)
        if text is None or text not in ndims:
            continue
        for name, (applies, template) in MUTATIONS.items():
            if not applies(ndims[text]):
                continue
            start = source.index(text, argument.col_offset)
            mutated = source[:start] + template.format(e=text) + source[start + len(text) :]
            yield f"{text}: {name}", mutated


#: on a real GPU: one training step, so that TensorFlow has placed the models and their state there
GPU_SETUP = """
import tensorflow as tf
assert tf.config.list_logical_devices("GPU"), "TensorFlow sees no GPU"
model.fit(X, y, epochs=1, verbose=0)
"""


async def run(budget: float, real_gpu: bool = False) -> list[Row]:
    settings = shape_level_settings(budget, real_gpu)
    setup_code = SETUP + (GPU_SETUP if real_gpu else "")
    rows: list[Row] = []
    async with set_up_kernel(settings, setup_code) as (link, runner):
        texts = sorted(
            {
                text
                for source in BASE
                for a in data_arguments(source)
                if (text := ast.get_source_segment(source, a))
            }
        )
        answered = await link.evaluate({t: f"np.ndim({t})" for t in texts}, timeout=30)
        ndims = {t: int(answered[t]["data"]["text/plain"]) for t in texts if answered[t]["status"] == "ok"}
        for index, source in enumerate(BASE, 1):
            for name, cell in [("base", source), *mutants(source, ndims)]:
                await link.execute(setup_code, timeout=120)  # fresh models (a failed fit breaks Keras' step)
                verdict, truth, origin = await dry_run_then_run(link, runner, cell, None)
                rows.append(Row(f"keras {index}", name, verdict, truth, origin))
    if not real_gpu:
        rows += await walk_notebook(NOTEBOOK, settings)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--budget", type=float, default=20.0, help="dry-run budget per cell (s)")
    parser.add_argument("--real-gpu", action="store_true", help="TensorFlow on a GPU, nothing forced")
    args = parser.parse_args()
    console = Console(width=160)
    rows = asyncio.run(run(args.budget, args.real_gpu))
    report(rows, console)
    missed = [r for r in rows if r.crash and r.verdict == "completed"]
    console.print(f"crashes the shapes alone cannot show (clean trace, real run raised): {len(missed)}")
    for r in missed:
        console.print(f"  {r.corpus} {r.name}: {r.truth}")


if __name__ == "__main__":
    main()
