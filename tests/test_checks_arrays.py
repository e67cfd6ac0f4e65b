"""NumPy/PyTorch checks: every crash case really raises in a real kernel; every near miss runs clean."""

from __future__ import annotations

import pytest

import crane_lsp.checks.arrays  # noqa: F401  (registers the checks)
from tests.lib_checks_util import Case, verify

NP = (
    "import numpy as np\n"
    "a = np.ones((68,))\nb = np.ones((272,))\nm = np.ones((75, 4))\nw = np.ones((1, 4))\n"
    "img = np.zeros((1, 20, 32, 32, 3))\nsq = np.ones((3, 3))\n"
    "labels2d = np.zeros((10, 1), dtype='uint8')\nlabels1d = np.zeros(10, dtype='int64')\n"
    "names = ['cat', 'dog']\n"
)
TORCH = (
    "import torch, torch.nn as nn\n"
    "t = torch.ones(4, 5)\nu = torch.ones(5, 3)\nv = torch.ones(4, 6)\n"
    "g = torch.ones(3, requires_grad=True)\none = torch.ones(1)\n"
    "lin = nn.Linear(3, 2)\nseq = nn.Sequential(nn.Linear(5, 2), nn.ReLU())\n"
    "meta = torch.ones(4, 5, device='meta')\n"
)

CASES = [
    Case("broadcast-sub", "array.broadcast", NP, "s = sum((a - b) ** 2)\n", "ValueError"),
    Case(
        "broadcast-in-later-line",
        "array.broadcast",
        NP,
        "mu = np.mean(a)\nx = (a - mu) ** 2\ny = a * b\n",
        "ValueError",
        2,
    ),
    Case("broadcast-compare", "array.broadcast", NP, "x = a == b\n", "ValueError"),
    Case("broadcast-fine", "array.broadcast", NP, "x = m - w\ny = a - a.mean()\nz = m.T.T * w\n", None),
    Case("broadcast-reassigned", "array.broadcast", NP, "b = a * 2\nx = a - b\n", None),
    Case("broadcast-torch", "array.broadcast", TORCH, "x = t + v\n", "RuntimeError"),
    Case("dot-misaligned", "array.matmul", NP, "p = np.dot(m, w)\n", "ValueError"),
    Case("matmul-misaligned", "array.matmul", NP, "p = m @ sq\n", "ValueError"),
    Case("method-dot", "array.matmul", NP, "p = m.dot(sq)\n", "ValueError"),
    Case("dot-fine", "array.matmul", NP, "p = np.dot(w, m.T)\nq = m @ w.T\nr = a.dot(a)\n", None),
    Case("torch-mm", "array.matmul", TORCH, "p = t @ v\n", "RuntimeError"),
    Case("torch-mm-fine", "array.matmul", TORCH, "p = t @ u\nq = torch.matmul(t, u)\n", None),
    Case("concat-dims", "array.concatenate", NP, "c = np.concatenate([m, sq])\n", "ValueError"),
    Case("vstack-1d", "array.concatenate", NP, "c = np.vstack([a, b])\n", "ValueError"),
    Case("concat-axis", "array.concatenate", NP, "c = np.concatenate((m, m), axis=2)\n", "AxisError"),
    Case("torch-cat", "array.concatenate", TORCH, "c = torch.cat([t, u])\n", "RuntimeError"),
    Case("concat-fine", "array.concatenate", NP, "c = np.concatenate([a, b])\nd = np.hstack([m, m])\n", None),
    Case("concat-zero-dim", "array.concatenate", NP, "c = np.concatenate([a[0], a[1]])\n", "ValueError"),
    Case(
        "stack-zero-dim-fine",
        "array.concatenate",
        NP,
        "c = np.hstack([a[0], a])\nd = np.vstack([a[0], a[1]])\n",
        None,
    ),
    Case("index-out", "array.index-range", NP, "x = m[75]\n", "IndexError"),
    Case("index-out-axis1", "array.index-range", NP, "x = m[0, 4]\n", "IndexError"),
    Case("torch-index-out", "array.index-range", TORCH, "x = t[4]\n", "IndexError"),
    Case("choice-2d", "array.index-range", NP, "x = np.random.choice(m)\n", "ValueError"),
    Case("index-fine", "array.index-range", NP, "x = m[74]\ny = m[-75, 3]\nz = np.random.choice(a)\n", None),
    Case(
        "list-by-array-in-loop",
        "array.as-list-index",
        NP,
        "names = 'cat dog'.split()\nfor i in range(5):\n    n = i + 1\n    t = names[labels2d[i]]\n",
        "TypeError",
        3,
    ),
    Case("list-by-array-kernel-list", "array.as-list-index", NP, "t = names[labels2d[0]]\n", "TypeError"),
    Case(
        "list-by-array-fine",
        "array.as-list-index",
        NP,
        "for i in range(5):\n    t = names[labels2d[i, 0]]\n    u = names[labels1d[i]]\n",
        None,
    ),
    Case(
        "loop-may-break",
        "array.as-list-index",
        NP,
        "for i in range(5):\n    if i == 0:\n        break\n    t = names[labels2d[i]]\n",
        None,
    ),
    Case("loop-index-out", "array.index-range", NP, "for k in [0, 1]:\n    x = m[k + 75]\n", "IndexError", 1),
    Case("loop-empty-range", "array.broadcast", NP, "for k in range(0):\n    x = a - b\n", None),
    Case("reshape-size", "array.reshape", NP, "r = m.reshape(10, 31)\n", "ValueError"),
    Case("np-reshape-size", "array.reshape", NP, "r = np.reshape(a, (256, 256, 3))\n", "ValueError"),
    Case("reshape-minus-one", "array.reshape", NP, "r = m.reshape((-1, 7))\n", "ValueError"),
    Case("torch-view", "array.reshape", TORCH, "r = t.view(3, -1)\n", "RuntimeError"),
    Case("reshape-fine", "array.reshape", NP, "r = m.reshape(-1, 2)\ns = np.reshape(a, (4, 17))\n", None),
    Case("axis-out", "array.axis", NP, "s = m.sum(axis=2)\n", "AxisError"),
    Case("np-axis-out", "array.axis", NP, "s = np.mean(a, axis=1)\n", "AxisError"),
    Case("torch-dim-out", "array.axis", TORCH, "s = t.sum(dim=2)\n", "IndexError"),
    Case("axis-fine", "array.axis", NP, "s = m.sum(axis=-1)\nq = np.max(m, axis=(0, 1))\n", None),
    Case(
        "savetxt-5d", "numpy.savetxt-ndim", NP, "np.savetxt('images.txt', img, delimiter=',')\n", "ValueError"
    ),
    Case("savetxt-fine", "numpy.savetxt-ndim", NP, "np.savetxt('m.txt', m)\nnp.save('img.npy', img)\n", None),
    Case("item-many", "tensor.item", TORCH, "x = t.item()\n", "RuntimeError"),
    Case("np-item-many", "tensor.item", NP, "x = m.item()\n", "ValueError"),
    Case("numpy-grad", "tensor.item", TORCH, "x = g.numpy()\n", "RuntimeError"),
    Case("item-fine", "tensor.item", TORCH, "x = one.item()\ny = g.detach().numpy()\nz = t.numpy()\n", None),
    Case("linear-width", "torch.linear-input", TORCH, "y = lin(t)\n", "RuntimeError"),
    Case("sequential-width", "torch.linear-input", TORCH, "y = seq(v)\n", "RuntimeError"),
    Case("linear-fine", "torch.linear-input", TORCH, "y = seq(t)\nz = lin(u)\n", None),
    Case("device-mismatch", "torch.device-mismatch", TORCH, "x = t + meta\n", "RuntimeError"),
    Case("device-fine", "torch.device-mismatch", TORCH, "x = t + t\ny = meta * meta\n", None),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_array_check(kernel, case: Case) -> None:
    verify(kernel, case)
