"""How ``slow_twins.py`` makes a slow twin of a fast cell: the prefixes, the scaling, the calibration.

Three kinds, each built so that the twin's truth is known from the fast cell's own real run:

- ``loop``: a pure-Python loop of many seconds before the cell, binding only fresh ``_slow_`` names,
  so nothing the cell reads changes;
- ``training``: epochs over mini-batches of numeric work on a fresh array (the shape of a training
  loop), binding only fresh names; element-wise NumPy only, so that no BLAS thread pool makes the
  CPU seconds it is calibrated by differ from wall seconds;
- ``scaled``: in the kernel, the DataFrames, Series, arrays and tensors the cell reads get their rows
  repeated to 100,000 or more (the same factor for all, so that aligned objects stay aligned), and a
  row-wise step on the largest of them comes before the cell. Scaling changes the state, so this
  twin's truth is the plain cell's real run on the scaled state.

The work is calibrated in a kernel of the machine it runs on (CPU seconds, which a busy machine does
not change), so the prefixes take many seconds in full however fast or loaded the machine is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crane_lsp.kernel.link import KernelLink

LOOP_S = 12.0  # CPU seconds each slow prefix is sized for: well over the 3 s typing budget
ROWS_GOAL = 100_000  # the least number of rows a scaled object gets
ROWS_CAP = 1_000_000  # the most: a scaled cell's real run must still finish
BYTES_CAP = 1_500_000_000  # all the scaled objects of one cell together

LOOP = "_slow_acc = 0\nfor _slow_i in range({n}):\n    _slow_acc += _slow_i % 7\n"

TRAINING = (
    "import numpy as _slow_np\n"
    "_slow_X = _slow_np.random.default_rng(0).random((4096, 64))\n"
    "_slow_w = _slow_np.zeros(64)\n"
    "for _slow_epoch in range({n}):\n"
    "    for _slow_b in range(0, len(_slow_X), 32):\n"
    "        _slow_xb = _slow_X[_slow_b : _slow_b + 32]\n"
    "        _slow_err = (_slow_xb * _slow_w).sum(axis=1) - 1.0\n"
    "        _slow_w -= 0.01 * (_slow_err[:, None] * _slow_xb).mean(axis=0)\n"
)

_CALIBRATE = f"""
import json as _slow_json, time as _slow_time
def _slow_cpu(code, ns):
    t = _slow_time.thread_time(); exec(code, ns); return _slow_time.thread_time() - t
_slow_ns = {{}}
_slow_loop_s = _slow_cpu({LOOP.format(n=2_000_000)!r}, _slow_ns) / 2_000_000
_slow_cpu({TRAINING.format(n=2)!r}, _slow_ns)  # numpy's import and the array: once, not per epoch
_slow_train_s = _slow_cpu({TRAINING.format(n=42)!r}, _slow_ns)
_slow_train_s = (_slow_train_s - _slow_cpu({TRAINING.format(n=2)!r}, _slow_ns)) / 40
print(_slow_json.dumps([_slow_loop_s, _slow_train_s]))
del _slow_json, _slow_time, _slow_cpu, _slow_ns, _slow_loop_s, _slow_train_s
"""


@dataclass(frozen=True)
class Prefixes:
    """The calibrated ``loop`` and ``training`` prefixes (each ends with a newline)."""

    loop: str
    training: str
    loop_n: int
    epochs: int

    def get(self, kind: str) -> str:
        return self.loop if kind == "loop" else self.training


async def calibrate(goal_s: float = LOOP_S) -> Prefixes:
    """Time a piece of each prefix in a fresh kernel; size both for ``goal_s`` CPU seconds."""
    link = await KernelLink.start(quiet=True)
    try:
        result = await link.execute(_CALIBRATE, timeout=300)
        if not result.ok:
            raise RuntimeError(f"calibration failed: {result.ename}: {result.evalue}")
        per_iter, per_epoch = json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        await link.close()
    loop_n = int(goal_s / max(per_iter, 1e-9))
    epochs = max(2, int(goal_s / max(per_epoch, 1e-9)))
    return Prefixes(LOOP.format(n=loop_n), TRAINING.format(n=epochs), loop_n, epochs)


# Runs in the user's kernel (a benchmark's own kernel): reads the names the cell reads, repeats the rows
# of its data objects, prints what it did as JSON, and removes its own helper names.
_SCALE = """
def _slow_scale(src, goal, cap, bytes_cap, min_rows, step_goal_s):
    import ast, json, math, time
    ip = get_ipython()
    ns = ip.user_ns
    try:
        tree = ast.parse(ip.transform_cell(src))
    except SyntaxError:
        return {"error": "the cell does not parse"}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def kind(obj):
        mod = type(obj).__module__.split(".")[0]
        name = type(obj).__name__
        if mod == "pandas" and name in ("DataFrame", "Series"):
            return name
        if mod == "numpy" and name == "ndarray" and obj.ndim >= 1:
            return "ndarray"
        if mod == "torch" and name == "Tensor" and obj.dim() >= 1:
            return "Tensor"
        return None

    data = {}
    for name in sorted(read & set(ns)):
        obj = ns[name]
        k = kind(obj)
        if k and len(obj) >= min_rows:
            data[name] = (k, obj)
    if not data:
        return {"error": "reads no DataFrame, Series, array or tensor of %d rows or more" % min_rows}

    def nbytes(obj, k):
        if k == "DataFrame":
            return int(obj.memory_usage(index=True, deep=True).sum())
        if k == "Series":
            return int(obj.memory_usage(index=True, deep=True))
        if k == "Tensor":
            return int(obj.element_size() * obj.nelement())
        return int(obj.nbytes)

    def repeat(obj, k, times):
        if k in ("DataFrame", "Series"):
            import pandas as pd
            plain = isinstance(obj.index, pd.RangeIndex) and obj.index.start == 0 and obj.index.step == 1
            return pd.concat([obj] * times, ignore_index=plain)
        if k == "Tensor":
            return obj.repeat(times, *([1] * (obj.dim() - 1)))
        import numpy as np
        return np.tile(obj, (times,) + (1,) * (obj.ndim - 1))

    def step_of(name, k):
        if k == "DataFrame":
            return "_slow_tmp = %s.apply(lambda r: 0, axis=1)" % name
        if k == "Series":
            return "_slow_tmp = %s.apply(lambda v: 0)" % name
        return "_slow_tmp = [0 for _slow_r in %s]" % name

    order = {"DataFrame": 0, "Series": 1, "ndarray": 2, "Tensor": 2}
    step_name = min(data, key=lambda n: (order[data[n][0]], -len(data[n][1]), n))
    step_kind, step_obj = data[step_name]
    rows = max(len(obj) for _k, obj in data.values())
    # the row step's cost per row, on about 2,000 rows of the object it walks
    sample = repeat(step_obj, step_kind, max(1, math.ceil(2000 / len(step_obj))))
    started = time.thread_time()
    exec(step_of("_slow_sample", step_kind), {"_slow_sample": sample})
    per_row = (time.thread_time() - started) / len(sample)
    want = max(goal, min(cap, int(step_goal_s / max(per_row, 1e-9))))
    times = max(2, math.ceil(want / rows))
    # memory: all the scaled objects together stay under bytes_cap (the machine is shared)
    most = int(bytes_cap / max(1, sum(nbytes(obj, k) for k, obj in data.values())))
    if rows * min(times, most) < goal:
        return {"error": "too large to repeat to %d rows in %d MB" % (goal, bytes_cap // 10**6)}
    times = min(times, most)
    shapes = {}
    for name, (k, obj) in data.items():
        before = len(obj)
        ns[name] = repeat(obj, k, times)
        shapes[name] = [k, before, len(ns[name])]
    return {
        "scaled": shapes,
        "times": times,
        "step": step_of(step_name, step_kind),
        "step_s": per_row * len(ns[step_name]),
    }

"""


async def scale(link: KernelLink, source: str, step_goal_s: float = LOOP_S) -> dict[str, Any]:
    """Scale up the data ``source`` reads in ``link``'s kernel; the row step to put before it, or why not.

    Returns ``{"scaled": {name: [type, rows before, rows after]}, "times", "step", "step_s"}`` or
    ``{"error": reason}``.
    """
    call = f"_slow_scale({source!r}, {ROWS_GOAL}, {ROWS_CAP}, {BYTES_CAP}, 10, {step_goal_s})"
    code = f'{_SCALE}\nprint("_slow_json_" + __import__("json").dumps({call}))\ndel _slow_scale\n'
    result = await link.execute(code, timeout=600)
    if not result.ok:
        return {"error": f"scaling failed: {result.ename}: {(result.evalue or '')[:120]}"}
    for line in reversed(result.stdout.splitlines()):
        if line.startswith("_slow_json_"):
            found: dict[str, Any] = json.loads(line[len("_slow_json_") :])
            return found
    return {"error": "scaling printed nothing"}


def twin(prefix: str, source: str) -> tuple[str, int] | None:
    """``prefix + source`` and the number of lines the prefix adds; None for a cell magic cell."""
    if source.lstrip().startswith("%%"):
        return None
    if not prefix.endswith("\n"):
        prefix += "\n"
    return prefix + source, prefix.count("\n")
