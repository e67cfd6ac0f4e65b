"""The probe on torch objects in a real kernel: tensors, datasets (sampled, RNG-safe), loaders, modules."""

from __future__ import annotations

import time

import pytest
from conftest import TestKernel
from probe_util import install_probe, snapshot

SETUP = """
import random, time
import numpy as np, torch
from torch import nn
from torch.utils.data import Dataset, IterableDataset, DataLoader

t2d = torch.zeros(4, 3, dtype=torch.float32, requires_grad=True)
labels = torch.tensor([0, 1, 1, 0, 1])
t0d = torch.tensor(3.5)

class ImageSet(Dataset):
    def __init__(self, n):
        self.n = n
        self.calls = 0
        self.rng = np.random.default_rng(0)
        self.trng = torch.Generator().manual_seed(0)
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        self.calls += 1
        noise = torch.rand(1).item() + random.random() + np.random.rand() + self.rng.random()
        noise += torch.rand(1, generator=self.trng).item()
        return torch.full((3, 8, 8), float(i) + noise * 0), i % 2

class Ragged(Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        return torch.zeros(i + 1)

class Sleepy(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        time.sleep(30)

class Stubborn(Dataset):
    def __len__(self):
        return 3
    def __getitem__(self, i):
        while True:
            try:
                time.sleep(1)
            except Exception:
                pass

class BadLen(Dataset):
    def __len__(self):
        raise ValueError('no length')
    def __getitem__(self, i):
        return 0

GLOBAL_CALLS = []
class Counting(Dataset):
    def __len__(self):
        return 10
    def __getitem__(self, i):
        GLOBAL_CALLS.append(i)
        return torch.tensor([i])

class Stream(IterableDataset):
    def __iter__(self):
        GLOBAL_CALLS.append('iter')
        yield from range(3)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)
    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))

images = ImageSet(50)
ragged = Ragged()
sleepy = Sleepy()
stubborn = Stubborn()
badlen = BadLen()
counting = Counting()
stream = Stream()
loader = DataLoader(counting, batch_size=4, drop_last=True, shuffle=True)
stream_loader = DataLoader(stream, batch_size=2)
net = Net()
lin = nn.Linear(5, 2)
"""

RNG = (
    "(random.getstate()[1][:4], np.random.get_state()[1][:4].tolist(), "
    "torch.get_rng_state()[:16].tolist(), len(GLOBAL_CALLS), images.calls, "
    "images.rng.bit_generator.state['state']['state'], images.trng.get_state()[:16].tolist())"
)


@pytest.fixture(scope="module")
def k(kernel: TestKernel) -> TestKernel:
    kernel.run(SETUP)
    install_probe(kernel)
    return kernel


def test_tensors(k: TestKernel) -> None:
    v = snapshot(k, {"names": ["t2d", "labels", "t0d"]}).variables
    t = v["t2d"]
    assert (t.kind, t.shape, t.dtype, t.device, t.requires_grad) == ("tensor", [4, 3], "float32", "cpu", True)
    assert t.stats and t.stats.has_nan is False and t.stats.min == 0
    lab = v["labels"]
    assert lab.dtype == "int64" and lab.stats and lab.stats.value_kind == "binary" and lab.stats.distinct == 2
    assert v["t0d"].shape == [] and v["t0d"].value == "3.5"


def test_map_dataset_samples_and_restores_rng(k: TestKernel) -> None:
    before = k.eval(RNG)
    snap = snapshot(k, {"names": ["images"]})
    assert k.eval(RNG) == before  # RNG states, and the dataset's own counter, as they were
    ds = snap.variables["images"]
    assert ds.kind == "torch_dataset" and ds.length == 50 and ds.dataset
    assert ds.dataset.length == 50 and len(ds.dataset.samples or []) == 10
    assert ds.dataset.samples and ds.dataset.samples[0] == "(Tensor[3,8,8] float32, int)"
    assert ds.dataset.sample_shapes and ds.dataset.sample_shapes[0] == [[3, 8, 8], None]
    assert ds.dataset.collated == "[Tensor[10,3,8,8] float32, Tensor[10] int64]"


def test_collate_failure_is_reported(k: TestKernel) -> None:
    ds = snapshot(k, {"names": ["ragged"]}).variables["ragged"]
    assert ds.dataset and ds.dataset.collated and ds.dataset.collated.startswith("error: RuntimeError")
    assert "equal size" in ds.dataset.collated


def test_hostile_datasets_yield_error_entries(k: TestKernel) -> None:
    t0 = time.monotonic()
    snap = snapshot(k, {"names": ["sleepy", "stubborn", "badlen", "lin"], "object_budget_s": 0.3})
    assert time.monotonic() - t0 < 3
    assert snap.variables["sleepy"].error == "deadline" and snap.variables["sleepy"].length == 100
    assert snap.variables["stubborn"].error == "deadline"  # its `except Exception` cannot swallow the alarm
    assert snap.variables["badlen"].error and "ValueError" in snap.variables["badlen"].error
    assert snap.variables["lin"].nn and snap.variables["lin"].nn.in_features == 5


def test_loaders_and_iterable_datasets_are_never_iterated(k: TestKernel) -> None:
    before = k.eval(RNG)
    snap = snapshot(k, {"names": ["loader", "stream", "stream_loader"]})
    assert k.eval(RNG) == before  # no __getitem__/__iter__ ran: GLOBAL_CALLS is still empty
    assert k.eval("len(GLOBAL_CALLS)") == "0"
    dl = snap.variables["loader"]
    assert dl.kind == "dataloader" and dl.dataset
    assert (dl.dataset.batch_size, dl.dataset.drop_last, dl.dataset.length) == (4, True, 2)
    assert dl.dataset.dataset_type == "__main__.Counting"
    assert snap.variables["stream"].kind == "torch_iterable_dataset"
    sl = snap.variables["stream_loader"]
    assert sl.dataset and sl.dataset.dataset_type == "__main__.Stream" and sl.dataset.length is None


def test_nn_module_and_chains(k: TestKernel) -> None:
    chains = ["net.fc1.in_features", "net.nope", "net.forward"]
    snap = snapshot(k, {"names": ["net", "lin"], "chains": chains})
    net = snap.variables["net"]
    assert net.kind == "torch_module" and net.nn
    assert (net.nn.in_features, net.nn.out_features, net.nn.device) == (784, 10, "cpu")
    assert net.nn.layers == ["Linear(784->128)", "ReLU", "Linear(128->10)"]
    lin = snap.variables["lin"].nn
    assert lin and (lin.in_features, lin.out_features) == (5, 2)
    a = snap.attributes
    assert a["net.fc1"].exists is True and a["net.fc1.in_features"].exists is True
    assert snap.variables["net.fc1.in_features"].value == "784"
    assert a["net.nope"].exists is False
    assert snap.variables["net.forward"].signature == "(x)"
