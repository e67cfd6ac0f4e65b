"""The kernel's thread never waits on a dry run's copy past a bound, in a REAL kernel: a killed copy
that does not end (here: the kill is withheld in this kernel only) leaves the kernel free after
``_CP_REAP_WAIT_S``, and a bare thread reaps it once it ends, so no zombie stays. ``dry_run_many``
answers by its bound with the runs that did not answer as no verdict."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from jail_util import JailKernel, alive, children_of, jail_kernels, settles

pytestmark = pytest.mark.timeout(180)

WITHHOLD_KILL = """
import sys
_p = sys.modules['_crane_probe']
_real_kill, _real_wait = _p._cp_kill, _p._CP_REAP_WAIT_S
_p._cp_kill = lambda pid: None  # the copy outlives its kill, as one stuck in the Linux kernel would
_p._CP_REAP_WAIT_S = 1.0
del sys
"""
RESTORE_KILL = "_p._cp_kill, _p._CP_REAP_WAIT_S = _real_kill, _real_wait\ndel _real_kill, _real_wait"

ONE_RUN_HANGS = """
import sys, time as _t
_p = sys.modules['_crane_probe']
_real_one, _real_slack = _p._dm_one, _p._DM_SLACK_S
def _hanging_one(payload):
    if payload['source'].startswith('hang'):
        _t.sleep(60)  # a run that does not answer in time (a worker stuck)
        return {'outcome': 'completed'}
    return _real_one(payload)
_p._dm_one = _hanging_one
_p._DM_SLACK_S = 1.0
del sys
"""
RESTORE_ONE = (
    "_p._dm_one, _p._DM_SLACK_S = _real_one, _real_slack\ndel _real_one, _real_slack, _hanging_one, _t"
)


@pytest.fixture(scope="module")
def jk() -> Iterator[JailKernel]:
    yield from jail_kernels("root")


def test_a_copy_that_outlives_its_kill_does_not_hold_the_kernel(jk: JailKernel) -> None:
    jk.run(WITHHOLD_KILL)
    try:
        began = time.monotonic()
        answer = jk.call("dry_run", {"source": "while True:\n    pass", "budget_s": 1.0}, timeout=60)
        took = time.monotonic() - began
    finally:
        jk.run(RESTORE_KILL)
    assert answer["outcome"] == "timeout", answer
    assert took < 30, took  # its budget and the 1 s bound, not the copy's endless loop
    copy = int(answer["child_pid"])
    assert alive(copy)  # the copy still runs: the kernel stopped waiting for it, as it should
    assert jk.eval("1 + 1") == "2"  # and the kernel is the user's again
    os.killpg(copy, signal.SIGKILL)
    assert settles(lambda: not any(pid == copy for pid, _ in children_of(jk.pid)), 10.0), (
        "the copy was never reaped: " + str(children_of(jk.pid))
    )


def test_dry_run_many_answers_by_its_bound(jk: JailKernel) -> None:
    jk.run(ONE_RUN_HANGS)
    try:
        runs = [{"source": "hang = 1", "budget_s": 0.5}, {"source": "x = 1 / 0", "budget_s": 0.5}]
        began = time.monotonic()
        answer = jk.call("dry_run_many", {"runs": runs, "width": 1}, timeout=60)
        took = time.monotonic() - began
    finally:
        jk.run(RESTORE_ONE)
    # one place: the hanging run holds the only worker, so the other never starts
    assert [r["outcome"] for r in answer["runs"]] == ["unavailable", "unavailable"], answer
    assert answer["runs"][0]["message"] == "the dry run did not answer in time", answer
    assert took < 20, took  # (0.5 + 1) * 2 / 1 + 1.5 = 4.5 s, not the run's 60 s
    assert jk.eval("1 + 1") == "2"
