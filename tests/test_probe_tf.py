"""The probe on TensorFlow/Keras objects in a real kernel (the one probe test module importing TF)."""

from __future__ import annotations

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

pytestmark = pytest.mark.slow

SETUP = """
import os, sys
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
import numpy as np, pandas as pd, tensorflow as tf, keras
from tensorflow.keras.preprocessing.image import ImageDataGenerator
for cls in ('cat', 'dog'):
    os.makedirs(f'imgs/{cls}', exist_ok=True)
    for i in range(3):
        open(f'imgs/{cls}/{i}.png', 'wb').close()
gen = ImageDataGenerator(rescale=1 / 255)
dir_it = gen.flow_from_directory('imgs', target_size=(64, 64), batch_size=2)
frame = pd.DataFrame({'filename': ['cat/0.png', 'dog/0.png'], 'label': ['cat', 'dog']})
df_it = gen.flow_from_dataframe(frame, 'imgs', x_col='filename', y_col='label', target_size=(32, 32),
                                batch_size=1, class_mode='binary')
ds = tf.data.Dataset.from_tensor_slices((tf.zeros((10, 4)), tf.zeros(10))).batch(4)
tensor = tf.constant([[1.0, float('nan')], [3.0, 4.0]])
var = tf.Variable([1, 2, 3])
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation='relu'),
                          keras.layers.Dense(3, activation='softmax')])
model.compile(loss='categorical_crossentropy', optimizer='adam')
history = model.fit(np.zeros((4, 4)), np.zeros((4, 3)), epochs=1, verbose=0)
"""


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP, timeout=240)
    install_probe(kernel)
    return kernel


def test_keras_iterators(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["dir_it", "df_it"]}).variables
    it = v["dir_it"]
    assert it.kind == "keras_iterator" and it.iterator
    assert (it.iterator.samples, it.iterator.num_classes, it.iterator.batch_size) == (6, 2, 2)
    assert it.iterator.class_indices == {"cat": 0, "dog": 1}
    assert it.iterator.image_shape == [64, 64, 3] and it.iterator.target_size == [64, 64]
    assert it.iterator.class_mode == "categorical"
    d = v["df_it"]
    assert d.kind == "keras_iterator" and d.iterator and d.iterator.class_mode == "binary"
    assert d.iterator.image_shape == [32, 32, 3] and d.iterator.samples == 2


def test_tf_dataset_and_tensors(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["ds", "tensor", "var"]}).variables
    ds = v["ds"]
    assert ds.kind == "tf_dataset" and ds.cardinality == 3
    assert ds.element_spec and "shape=(None, 4)" in ds.element_spec
    t = v["tensor"]
    assert (t.kind, t.shape, t.dtype) == ("tf_tensor", [2, 2], "float32")
    assert t.stats and t.stats.has_nan is True and t.stats.max == 4
    assert v["var"].kind == "tf_tensor" and v["var"].shape == [3] and v["var"].dtype == "int32"


def test_keras_model_and_history(k: TestKernel) -> None:
    snap = snapshot(k, {"names": ["model", "history"], "chains": ["model.predict_classes", "model.predict"]})
    m = snap.variables["model"]
    assert m.kind == "keras_model" and m.nn
    assert m.nn.input_shape == [None, 4] and m.nn.output_shape == [None, 3]
    assert (m.nn.last_units, m.nn.last_activation, m.nn.loss) == (3, "softmax", "categorical_crossentropy")
    assert m.nn.layers == ["Dense", "Dense"]
    h = snap.variables["history"]
    assert h.nn and h.nn.history_keys == ["loss"]
    assert snap.attributes["model.predict_classes"].exists is False
    assert snap.attributes["model.predict"].exists is True


def test_tf_state_is_untouched(k: TestKernel) -> None:
    state = "(sorted(sys.modules), len(model.layers), dir_it.batch_index, dir_it.total_batches_seen)"
    before = k.eval(state)
    snapshot(k, {"names": ["dir_it", "df_it", "ds", "tensor", "var", "model", "history", "tf", "keras"]})
    assert k.eval(state) == before
