"""Several dry runs at once, each in its own jailed fork: STANDARD LIBRARY ONLY, joined after
``undo_hold.py`` (whose memory reading it shares).

A fix's verification dry-runs a few edited versions of one cell from the same kernel state. One
after another they cost the sum of their times; ``dry_run_many(payload_json)`` forks them side by
side, each exactly as a cold ``dry_run`` (the same jail, budget, memory cap and shortened run for a
slow cell), and answers when the last one has. How many run at once is the smallest of the asked
``width`` (3), the CPUs the machine's load leaves idle (``jail_threads._jth_spare_cpus``: a fourth
copy on two busy cores would only make each slower) and what memory allows: each copy may grow to
``memory_mb`` above the kernel, so only as many as ``MemAvailable`` holds that many times over run
together; the rest wait for a free place. With one place it is ``dry_run`` in turn.

Each run has its own waiting thread (a bare ``_thread``, as the shortened run's helper: the forks
happen there too); the kernel's own thread waits for all of them, so nothing of a dry run outlives
the call, but never past the time they can take (``_dm_bound``): a run that has not answered by then
is no verdict, and the kernel is the user's again. The prepared child is left for the next single
dry run (it is one copy, for one cell).
"""

import _thread as _dm_thread
import json as _dm_json
import time as _dm_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.copies import _CP_REAP_WAIT_S
    from crane_lsp.kernel.agent.dryrun.dryrun_warm import _dw_run
    from crane_lsp.kernel.agent.guard import _JSONResult
    from crane_lsp.kernel.agent.jail.jail_threads import _jth_spare_cpus
    from crane_lsp.kernel.agent.undo.undo_hold import _uh_available_mb

_DM_WIDTH = 3  # runs at once, at most
_DM_SLACK_S = _CP_REAP_WAIT_S + 10.0  # per run, beyond its budget (see ``_dm_bound``)


def _dm_width(asked, runs, memory_mb):
    """How many of ``runs`` dry runs may run at once (at least one)."""
    width = max(1, min(int(asked), runs, _jth_spare_cpus()))
    available = _uh_available_mb()
    if available is not None and memory_mb > 0:
        width = max(1, min(width, int(available // memory_mb)))
    return width


def _dm_one(payload):
    """One cold dry run of ``payload``, as ``dry_run`` makes it without the prepared child."""
    result = _dw_run(payload, prepared=False)
    return dict(result._data) if isinstance(result, _JSONResult) else result


def dry_run_many(payload_json):
    """``{"runs": [dry_run payload, ...], "width": 3}`` -> ``{"runs": [verdict, ...], "width": n}``:
    each verdict as ``dry_run`` gives it, in the order asked."""
    payload = _dm_json.loads(payload_json)
    runs = list(payload.get("runs") or [])
    memory_mb = max((float(r.get("memory_mb", 4096)) for r in runs), default=4096.0)
    width = _dm_width(payload.get("width", _DM_WIDTH), len(runs), memory_mb)
    results: list[Any] = [None] * len(runs)
    queue = list(range(len(runs)))
    queue_lock = _dm_thread.allocate_lock()
    finished = []  # one lock per worker thread, released when it ends

    def worker(done):
        try:
            while True:
                with queue_lock:
                    if not queue:
                        return
                    index = queue.pop(0)
                try:
                    results[index] = _dm_one(runs[index])
                except Exception as exc:  # the jail failed for this run: the others stand
                    results[index] = {"outcome": "unavailable", "message": f"the jail failed: {exc}"}
        finally:
            done.release()

    for _ in range(width):
        done = _dm_thread.allocate_lock()
        done.acquire()
        finished.append(done)
        _dm_thread.start_new_thread(worker, (done,))
    # every run answers within its budget, its shortened run's wait and its copy's reaping: the
    # kernel's thread waits that long for all of them, never longer (a stuck run is no verdict)
    until = _dm_time.monotonic() + _dm_bound(runs, width)
    for done in finished:
        if not done.acquire(timeout=max(0.0, until - _dm_time.monotonic())):
            with queue_lock:
                queue.clear()  # the workers start nothing more
            break
    for index, result in enumerate(results):
        if result is None:
            results[index] = {"outcome": "unavailable", "message": "the dry run did not answer in time"}
    return _JSONResult({"runs": results, "width": width})


def _dm_bound(runs, width):
    """How long ``width`` workers may take for ``runs`` at worst: each run its budget and its slack (a
    shortened run's helper, a killed copy's reaping), taken from one queue (Graham's bound for list
    scheduling: the total over the workers plus the longest run)."""
    spans = [float(r.get("budget_s", 3.0)) + _DM_SLACK_S for r in runs]
    return sum(spans) / max(1, width) + max(spans, default=0.0)
