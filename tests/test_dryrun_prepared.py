"""The prepared dry-run child in a REAL kernel: used when valid, discarded when stale, never left behind.

``dry_run_prepare`` forks and jails a child that waits for the next dry run. It must serve only the
kernel state it was forked from: a real execute (the generation moves), its window running out, or a
different memory cap discard it, and the dry run then forks cold and sees the new state. No child of
the kernel is left once a prepared one expired, nor after the kernel shut down; where the dry run is
refused, prepare says the same.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import start_test_kernel
from jail_util import JailKernel, alive, children_of, jail_kernels, settles

from crane_lsp.kernel.probe_install import install_code


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    yield from jail_kernels("root")


def _gone(pid: int, within_s: float = 3.0) -> bool:
    return settles(lambda: not alive(pid), within_s)


def _no_children(pid: int, within_s: float = 3.0) -> bool:
    """No child of the kernel is left, zombies included. A child's exit and its reaper thread's
    ``waitpid`` are not one instant: on a loaded machine the zombie lingers until that thread runs."""
    return settles(lambda: children_of(pid) == [], within_s)


def test_a_prepared_child_serves_the_next_dry_run(jk: JailKernel) -> None:
    jk.run("prep_items = [1, 2, 3]")
    first = jk.prepare()
    assert first["outcome"] == "prepared" and first["fresh"] is True, first
    again = jk.prepare()  # idempotent: the same child
    assert (
        again["outcome"] == "prepared"
        and again["fresh"] is False
        and again["child_pid"] == first["child_pid"]
    )
    result = jk.dry_run("total = sum(prep_items)\nprep_items.append(4)\nprep_items[9]", prepared=True)
    assert result["outcome"] == "raised" and result["exception"] == "IndexError" and result["line"] == 3
    assert result["child_pid"] == first["child_pid"]
    phases = result["phases_ms"]  # one clock: ms since the prepared child's fork
    assert phases["confined"] <= phases["received"] and phases["called"] <= phases["requested"]
    assert phases["requested"] <= phases["verdict_read"] and phases["received"] <= phases["cell_end"]
    assert jk.eval("prep_items") == "[1, 2, 3]"
    assert _gone(first["child_pid"])
    assert jk.eval(WATCHERS) == "0"
    # consumed by that one use: the next dry run forks cold
    assert jk.dry_run("prep_items[9]")["prepared"] is False


def test_the_prepared_child_gives_back_the_kernels_free_heap(jk: JailKernel) -> None:
    """Memory the kernel freed is dropped from the waiting copy, so the cell's allocations get fresh
    pages instead of copying the kernel's garbage page by page: the copy starts with ~25 MB less
    resident. The cell's values are the same, and the kernel's own heap is untouched."""
    jk.run(
        "heap_items = [bytearray(64_000) for _ in range(400)]\n"  # ~25 MB from the heap, then freed
        "del heap_items\n"
        "kept = bytes(range(256)) * 4"
    )
    cell = (
        "import os as _os\n"
        "with open('/proc/self/statm') as _f:\n"
        "    resident_kib = int(_f.read().split()[1]) * _os.sysconf('SC_PAGE_SIZE') // 1024\n"
        "again = [bytearray(64_000) for _ in range(400)]\n"
        "assert sum(map(sum, again)) == 0 and kept[255] == 255\n"
        "raise RuntimeError(resident_kib)"
    )
    jk.prepare()
    given_back = jk.dry_run(cell, prepared=True)
    assert given_back["prepared"] and "heap_given_back" in given_back["phases_ms"], given_back
    assert given_back["exception"] == "RuntimeError", given_back  # the assertions held in the copy
    cold = jk.dry_run(cell)  # the cold child keeps the kernel's free pages shared
    assert not cold["prepared"] and "heap_given_back" not in cold["phases_ms"]
    assert cold["exception"] == "RuntimeError", cold
    assert int(given_back["message"]) < int(cold["message"]) - 20_000, (given_back, cold)
    assert jk.eval("len(kept)") == "1024"


def test_a_syntax_error_does_not_consume_the_prepared_child(jk: JailKernel) -> None:
    child = jk.prepare()["child_pid"]
    result = jk.call("dry_run", {"source": "def broken(:\n    pass"})
    assert result["outcome"] == "raised" and result["exception"] == "SyntaxError"
    assert alive(child)
    assert jk.dry_run("1 / 0", prepared=True)["child_pid"] == child


WATCHERS = (
    "sum(getattr(f, '__name__', '') == '_dw_on_cell' for f in get_ipython().events.callbacks['pre_execute'])"
)


def test_a_real_execute_discards_it_and_the_dry_run_sees_the_new_state(jk: JailKernel) -> None:
    assert jk.eval(WATCHERS) == "0"
    child = jk.prepare()["child_pid"]
    assert jk.eval(WATCHERS) == "1"  # only while a prepared child lives
    jk.run("late_value = 41")  # after the fork: the prepared child does not know it
    assert not alive(child), "a real cell kills the prepared child before it runs"
    assert jk.eval(WATCHERS) == "0"
    result = jk.dry_run("answer = late_value + 1\nanswer.missing")
    assert result["outcome"] == "raised" and result["exception"] == "AttributeError", result
    assert result["child_pid"] != child
    assert _gone(child)


def test_a_silent_execute_with_code_discards_it_too(jk: JailKernel) -> None:
    """Another frontend's silent execute changes the state without moving the execution count."""
    child = jk.prepare()["child_pid"]
    msg_id = jk.kernel.client.execute("silent_value = 41", silent=True, store_history=False)
    assert jk.kernel._reply(msg_id, 30)["content"]["status"] == "ok"
    assert not alive(child), "a silent execute with code kills the prepared child before it runs"
    result = jk.dry_run("answer = silent_value + 1\nanswer.missing")
    assert result["outcome"] == "raised" and result["exception"] == "AttributeError", result
    assert _gone(child)


def test_an_expired_window_discards_it_and_it_leaves_no_process(jk: JailKernel) -> None:
    child = jk.prepare(window_s=0.3)["child_pid"]
    time.sleep(0.5)
    result = jk.dry_run("1 / 0")  # prepared=False is asserted: the window had passed
    assert result["outcome"] == "raised" and result["child_pid"] != child
    assert _gone(child)
    # an expired child that nobody discards exits by itself (its window + 1 s) and is reaped
    child = jk.prepare(window_s=0.3)["child_pid"]
    time.sleep(0.3 + 1.0)
    assert _gone(child, within_s=2.0)
    assert _no_children(jk.pid), children_of(jk.pid)
    # a child that stopped waiting before the request reached it: the dry run forks cold (and the
    # verdict is the cell's, not "the cell ends the kernel"); simulated by the kernel taking it for live
    child = jk.prepare(window_s=0.3)["child_pid"]
    held = "__import__('sys').modules['_crane_probe']._dw_state['child']"
    jk.eval(f"setattr({held}, 'window_s', 100.0) or setattr({held}, 'alive', lambda: True)")
    assert _gone(child, within_s=3.0)
    result = jk.dry_run("1 / 0")
    assert result["outcome"] == "raised" and result["exception"] == "ZeroDivisionError", result


def test_a_different_memory_cap_discards_it(jk: JailKernel) -> None:
    child = jk.prepare(memory_mb=256)["child_pid"]
    result = jk.dry_run("1 / 0")  # the default cap (4096 MiB): not what the child was limited to
    assert result["outcome"] == "raised" and result["child_pid"] != child
    assert _gone(child)
    # the same cap: served, and the cap holds in the prepared child
    result = jk.dry_run(
        "import numpy as np\nbig = np.ones(2 * 1024**3 // 8)\n1 / 0", memory_mb=256, prepared=True
    )
    assert result["outcome"] == "blocked" and "memory" in result["message"], result


def test_prepare_refuses_as_the_dry_run_does(jk: JailKernel) -> None:
    probe = "__import__('sys').modules['_crane_probe']"
    child = jk.prepare()["child_pid"]  # prepared before the refusal: discarded by it
    jk.run(f"_saved_refusal = {probe}._frm_refusal\n{probe}._frm_refusal = lambda source='': 'refused here'")
    try:
        dry, refused = jk.call("dry_run", {"source": "x = 1"}), jk.prepare()
    finally:
        jk.run(f"{probe}._frm_refusal = _saved_refusal\ndel _saved_refusal")
    assert refused == {**refused, "outcome": "unavailable", "message": "refused here"}
    assert dry["outcome"] == "unavailable" and dry["message"] == "refused here"
    assert _gone(child)
    assert _no_children(jk.pid), children_of(jk.pid)


@pytest.mark.parametrize("now", [False, True], ids=["shutdown", "killed"])
def test_no_prepared_child_outlives_its_kernel(tmp_path: Path, now: bool) -> None:
    kernel = start_test_kernel(tmp_path)
    try:
        msg_id = kernel.client.execute(install_code(), silent=True, store_history=False)
        assert kernel._reply(msg_id, 60)["content"]["status"] == "ok"
        pid = int(kernel.eval("__import__('os').getpid()"))
        kernel_jk = JailKernel(kernel, tmp_path, "root", pid)
        child = kernel_jk.prepare(window_s=60)["child_pid"]
        time.sleep(0.2)
        assert alive(child) and [c for c, _ in children_of(pid)] == [child]
    finally:
        kernel.client.stop_channels()
        kernel.manager.shutdown_kernel(now=now)
    assert _gone(pid, within_s=10)
    assert _gone(child), "the prepared child must die with its kernel"
