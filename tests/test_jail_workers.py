"""Worker processes in the dry run (``jail_workers.py``), in a REAL kernel: each cell is dry-run,
then run for real in the same kernel, and the two must agree.

joblib (``Parallel(n_jobs=2)``, scikit-learn's ``n_jobs=2``), ``multiprocessing.Pool`` and
``ProcessPoolExecutor`` used to end the dry run (``blocked``: the memmapping folder in /dev/shm,
the ``clone()`` of a worker). Now the copy gets a single-process world the library knows, its
notes say which, a worker's exception is the cell's crash, and nothing outlives the dry run: no
process, no file in /dev/shm or /tmp. Pools of fresh interpreters (``spawn``, ``forkserver``) get it
too, with what such a worker cannot load (the notebook's own functions) failing as it fails there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from jail_util import (
    JailKernel,
    assert_nothing_left_since,
    children_of,
    jail_kernels,
    machine_leftovers,
    no_process_in_group,
    real_run,
    verdict,
)

pytest.importorskip("sklearn")
pytest.importorskip("joblib")

PATHS = pytest.mark.parametrize("prepared", [False, True], ids=["cold", "prepared"])
WORLD = "worker processes kept in the copy (a single-process world): "


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    kernels = jail_kernels("root")
    yield next(kernels)
    next(kernels, None)


def _world(result: dict, *words: str) -> str:
    notes = [n for n in result.get("notes") or [] if n.startswith(WORLD)]
    assert notes, result
    for word in words:
        assert word in notes[0], notes
    return notes[0]


def _children(jk: JailKernel) -> list[int]:
    """The kernel's child processes (the workers of earlier real runs, loky's, stay a while)."""
    return sorted(pid for pid, _state in children_of(jk.pid))


def _dry_then_real(jk: JailKernel, cell: str, prepared: bool = False) -> dict:
    """Dry-run ``cell`` (nothing may outlive it), then run it for real: the verdicts must agree."""
    before_children = _children(jk)
    before_files = machine_leftovers()
    result = jk.dry_run(cell, budget_s=60, prepared=prepared)
    deadline = time.monotonic() + 10  # the child is killed at once, and reaped by a thread of the kernel
    while time.monotonic() < deadline and not (
        no_process_in_group(result["child_pid"]) and _children(jk) == before_children
    ):
        time.sleep(0.05)
    assert no_process_in_group(result["child_pid"])  # nor any thread or process it started
    assert _children(jk) == before_children, (children_of(jk.pid), before_children)
    assert_nothing_left_since(before_files)
    outcome, exception, line = real_run(jk, cell)
    assert (result["outcome"], result.get("exception")) == (outcome, exception), (verdict(result), outcome)
    if outcome == "raised":
        assert result.get("line") == line, (verdict(result), line)
    return result


POOL = "import multiprocessing\nwith multiprocessing.Pool(2) as pool:\n    out = pool.map(int, {})\n"
POOL += "assert len(out) == 2"
EXECUTOR = (
    "from concurrent.futures import ProcessPoolExecutor\n"
    "with ProcessPoolExecutor(max_workers=2) as ex:\n    out = list(ex.map(int, {}))\nassert len(out) == 2"
)


def test_a_pool_first_imported_by_the_cell(jk: JailKernel) -> None:
    """The kernel has not loaded ``multiprocessing.pool``: the cell's import gets the world too."""
    loaded = "'multiprocessing.pool' in __import__('sys').modules"
    assert jk.eval(loaded) == "False"
    clean = _dry_then_real(jk, POOL.format("['1', '2']"))
    assert clean["outcome"] == "completed", verdict(clean)
    _world(clean, "multiprocessing.Pool -> its workers ran as threads of the copy")
    assert jk.eval(loaded) == "True"  # the real run loaded it: the next dry runs patch it at setup


@PATHS
def test_a_pool_map_whose_worker_raises(jk: JailKernel, prepared: bool) -> None:
    crash = _dry_then_real(jk, POOL.format("['1', 'x']"), prepared)
    assert verdict(crash)[:3] == ("raised", "ValueError", 3)
    assert "invalid literal" in crash["message"]
    # a lambda cannot be pickled to a worker process: the real run fails, and so does the copy
    lam = _dry_then_real(
        jk, "import multiprocessing\nwith multiprocessing.Pool(2) as pool:\n    pool.map(lambda v: v, [1])"
    )
    assert verdict(lam)[:3] == ("raised", "PicklingError", 3), verdict(lam)


@PATHS
def test_a_process_pool_executor(jk: JailKernel, prepared: bool) -> None:
    clean = _dry_then_real(jk, EXECUTOR.format("['1', '2']"), prepared)
    assert clean["outcome"] == "completed", verdict(clean)
    _world(clean, "ProcessPoolExecutor -> its calls ran in threads of the copy (2 asked)")
    crash = _dry_then_real(jk, EXECUTOR.format("['1', 'x']"), prepared)
    assert verdict(crash)[:3] == ("raised", "ValueError", 3)


@PATHS
def test_joblib_parallel_with_two_jobs(jk: JailKernel, prepared: bool) -> None:
    jk.run("import math\nimport joblib\nfrom joblib import Parallel, delayed")  # loaded in the kernel
    cell = "roots = Parallel(n_jobs=2)(delayed(math.sqrt)(v) for v in {})\nassert len(roots) == 3"
    clean = _dry_then_real(jk, cell.format("[1, 4, 9]"), prepared)
    assert clean["outcome"] == "completed", verdict(clean)
    _world(clean, "joblib Parallel(n_jobs=2, backend 'loky') -> its tasks ran in sequence")
    crash = _dry_then_real(jk, cell.format("[1, -4, 9]"), prepared)
    assert verdict(crash)[:3] == ("raised", "ValueError", 1)
    assert crash["message"] == "math domain error"
    if not prepared:  # joblib's other process backend: a multiprocessing.Pool of its own
        pool = cell.replace("n_jobs=2", "n_jobs=2, backend='multiprocessing'")
        crash = _dry_then_real(jk, pool.format("[1, -4, 9]"))
        assert verdict(crash)[:3] == ("raised", "ValueError", 1)
        _world(crash, "backend 'multiprocessing') -> its tasks ran in sequence")


def test_scikit_learn_with_two_jobs(jk: JailKernel) -> None:
    jk.run(
        "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\n"
        "from sklearn.model_selection import cross_val_score\n"
        "from sklearn.inspection import permutation_importance\n"
        "X = np.random.RandomState(0).rand(60, 3)\ny = (X[:, 0] > 0.5).astype(int)"
    )
    clean = _dry_then_real(
        jk,
        "model = LogisticRegression().fit(X, y)\n"
        "imp = permutation_importance(model, X, y, n_repeats=3, n_jobs=2, random_state=0)\n"
        "scores = cross_val_score(LogisticRegression(), X, y, cv=3, n_jobs=2)",
    )
    assert clean["outcome"] == "completed", verdict(clean)
    _world(clean, "n_jobs=2", "sequence")
    # the fit fails inside the worker: the real run re-raises the worker's own exception
    crash = _dry_then_real(
        jk, "scores = cross_val_score(LogisticRegression(C=-1.0), X, y, cv=3, n_jobs=2, error_score='raise')"
    )
    assert verdict(crash)[:3] == ("raised", "InvalidParameterError", 1), verdict(crash)


FRESH = pytest.mark.parametrize("method", ["spawn", "forkserver"])


@FRESH
def test_a_fresh_interpreter_pool_runs_what_it_can_load(jk: JailKernel, method: str) -> None:
    """``spawn``/``forkserver`` workers are fresh interpreters: a function of a real module loads
    there, and the copy's threads run it as the real workers do."""
    jk.run("import math\nimport multiprocessing as mp\nfrom concurrent.futures import ProcessPoolExecutor")
    pool = f"with mp.get_context('{method}').Pool(2) as pool:\n    out = pool.map(math.sqrt, [1, 4])\n"
    clean = _dry_then_real(jk, pool + "assert out == [1.0, 2.0]")
    assert clean["outcome"] == "completed", verdict(clean)
    _world(clean, "multiprocessing.Pool -> its workers ran as threads of the copy")
    executor = f"with ProcessPoolExecutor(2, mp_context=mp.get_context('{method}')) as ex:\n"
    clean = _dry_then_real(
        jk, executor + "    out = list(ex.map(math.sqrt, [1, 4]))\nassert out == [1.0, 2.0]"
    )
    assert clean["outcome"] == "completed", verdict(clean)


@FRESH
def test_a_notebook_function_breaks_a_fresh_interpreter_executor(jk: JailKernel, method: str) -> None:
    """The notebook's own function is pickled by reference to ``__main__``, which a fresh worker's
    ``__main__`` (the kernel's launcher) does not have: the real worker dies unpickling the call and
    the executor breaks; the copy says the same, on the same line."""
    jk.run("import multiprocessing as mp\nfrom concurrent.futures import ProcessPoolExecutor\n"
           "def nb_double(v):\n    return 2 * v")  # fmt: skip
    cell = f"with ProcessPoolExecutor(2, mp_context=mp.get_context('{method}')) as ex:\n"
    cell += "    out = list(ex.map(nb_double, [1, 2]))"
    crash = _dry_then_real(jk, cell)
    assert verdict(crash)[:3] == ("raised", "BrokenProcessPool", 2), verdict(crash)
    _world(crash, "refers to nb_double, defined in the notebook", "the pool broke")


def test_a_notebook_function_is_lost_by_a_spawned_pool(jk: JailKernel) -> None:
    """A ``multiprocessing.Pool`` whose fresh worker dies unpickling a task loses it and waits for its
    result forever: with a timeout the cell raises ``TimeoutError`` there, in the copy as for real."""
    jk.run("import multiprocessing as mp\ndef nb_triple(v):\n    return 3 * v")
    cell = "with mp.get_context('spawn').Pool(2) as pool:\n    out = pool.map_async(nb_triple, [1]).get(3)"
    crash = _dry_then_real(jk, cell)
    assert verdict(crash)[:3] == ("raised", "TimeoutError", 2), verdict(crash)
    _world(crash, "refers to nb_triple, defined in the notebook", "the task is lost")


def test_a_bare_process_still_ends_the_run(jk: JailKernel) -> None:
    """A ``multiprocessing.Process`` of its own is a process, which the copy cannot start: the run
    ends, and nothing reaches the machine."""
    before = machine_leftovers()
    cell = "import multiprocessing\nworker = multiprocessing.Process(target=abs, args=(1,))\nworker.start()"
    result = jk.dry_run(cell, budget_s=60)
    assert result["outcome"] == "blocked", verdict(result)
    assert_nothing_left_since(before)
