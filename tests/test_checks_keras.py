"""Keras checks: every crash case really raises in a real kernel (TensorFlow backend); near misses run clean.

TensorFlow is imported once for the module's kernel (about 20 s on a loaded machine); the cases then
reuse it (``%reset`` clears names, not ``sys.modules``).
"""

from __future__ import annotations

import pytest

import crane_lsp.checks.keras  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, verify

KERAS = """
import os, tempfile
import numpy as np
from PIL import Image
import tensorflow as tf
from tensorflow import keras
root = tempfile.mkdtemp()
for cls in ('cat', 'dog', 'owl'):
    os.makedirs(os.path.join(root, cls))
    for i in range(2):
        Image.fromarray(np.zeros((8, 8, 3), dtype='uint8')).save(os.path.join(root, cls, f'{i}.png'))
gen = tf.keras.preprocessing.image.ImageDataGenerator(rescale=1 / 255)
it = gen.flow_from_directory(root, target_size=(8, 8), batch_size=2, class_mode='categorical')
it16 = gen.flow_from_directory(root, target_size=(16, 16), batch_size=2, class_mode='categorical')
def make(units, side=8):
    m = keras.Sequential([keras.Input((side, side, 3)), keras.layers.Flatten(),
                          keras.layers.Dense(units, activation='softmax')])
    m.compile(optimizer='adam', loss='categorical_crossentropy')
    return m
two, three = make(2), make(3)
L = keras.layers
gap = keras.Sequential([keras.Input((8, 8, 3)), L.Conv2D(2, 3), L.GlobalAveragePooling2D(),
                        L.Dense(3, activation='softmax')])
gap.compile(optimizer='adam', loss='categorical_crossentropy')
inp = keras.Input((8, 8, 3))
func = keras.Model(inp, L.Dense(3, activation='softmax')(L.GlobalAveragePooling2D()(inp)))
func.compile(optimizer='adam', loss='categorical_crossentropy')
hist = keras.callbacks.History()
hist.history = {'loss': [0.5], 'accuracy': [0.7]}
"""

CASES = [
    Case(
        "units-vs-classes",
        "keras.units-classes",
        KERAS,
        "two.fit(it, epochs=1, steps_per_epoch=1, verbose=0)\n",
        "ValueError",
    ),
    Case(
        "units-fine",
        "keras.units-classes",
        KERAS,
        "three.fit(it, epochs=1, steps_per_epoch=1, verbose=0)\n",
        None,
    ),
    Case(
        "input-shape",
        "keras.input-shape",
        KERAS,
        "three.fit(it16, epochs=1, steps_per_epoch=1, verbose=0)\n",
        "ValueError",
    ),
    Case(
        "input-shape-functional",
        "keras.input-shape",
        KERAS,
        "func.fit(it16, epochs=1, steps_per_epoch=1, verbose=0)\n",
        "ValueError",
    ),
    Case(
        "input-shape-pooling-fine",
        "keras.input-shape",
        KERAS,
        "gap.fit(it16, epochs=1, steps_per_epoch=1, verbose=0)\n",
        None,
    ),
    Case("history-key", "keras.history-key", KERAS, "v = hist.history['val_accuracy']\n", "KeyError"),
    Case(
        "history-fine",
        "keras.history-key",
        KERAS,
        "v = hist.history['accuracy']\nl = hist.history['loss']\n",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_keras_check(kernel, case: Case) -> None:
    verify(kernel, case)
