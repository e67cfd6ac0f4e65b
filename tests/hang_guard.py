"""A hard end for a test that hangs past its time, so a CI run names it instead of waiting out its limit.

pytest-timeout's signal method fails a test once, by raising in it; whatever then hangs (a fixture's
teardown waiting for a server that never exits, a join) is timed by nothing, and the run stops only
at CI's own limit, with no word of which test. faulthandler's watchdog is a C thread: it fires
whatever Python is doing, writes every thread's stack and exits the process. Under pytest-xdist the
run goes on with a new worker and names the test the old one crashed in.

The stacks go to a file per worker (a worker's stderr is pytest's capture file while a test runs),
in a folder of the run that the controlling process reads back into the terminal summary.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO

import pytest

GRACE_S = float(os.environ.get("CRANE_TEST_HANG_GRACE_S", "120"))  # past the test's own timeout
FOLDER_ENV = "CRANE_TEST_HANG_DIR"
SHOWN_LINES = 120  # of each hung worker's stacks

_stack_file: IO[str] | None = None  # kept open: faulthandler writes to its descriptor
_armed = False  # between ``arm`` and ``disarm``: a test's protocol is running


def start_run() -> Path | None:
    """In the controlling process: the run's folder, inherited by its workers; None in a worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="crane-test-hangs-"))
    os.environ[FOLDER_ENV] = str(folder)
    return folder


def hard_limit_s(item: pytest.Item) -> float | None:
    """The test's pytest-timeout (marker, else ``--timeout``, else the ini) plus GRACE_S; None if untimed."""
    marker = item.get_closest_marker("timeout")
    value: object = None
    if marker is not None:
        value = marker.args[0] if marker.args else marker.kwargs.get("timeout")
    if value is None:
        value = item.config.getoption("timeout", None)
    if value is None:
        value = item.config.getini("timeout")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds + GRACE_S if seconds > 0 else None


def _file_for(nodeid: str) -> IO[str] | None:
    global _stack_file
    folder = os.environ.get(FOLDER_ENV)
    if not folder or not Path(folder).is_dir():
        return None
    if _stack_file is None:
        name = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.txt"
        _stack_file = open(Path(folder) / name, "w", encoding="utf-8")  # noqa: SIM115 - lives with the process
    _stack_file.seek(0)
    _stack_file.truncate()
    _stack_file.write(f"{nodeid} hung past its timeout (+{GRACE_S:.0f} s); every thread's stack:\n")
    _stack_file.flush()
    return _stack_file


def arm(item: pytest.Item) -> None:
    """Start the watchdog for ``item`` (``disarm`` after its protocol); none for an untimed test."""
    global _armed
    limit = hard_limit_s(item)
    target = _file_for(item.nodeid) if limit is not None else None
    if limit is not None and target is not None:
        faulthandler.dump_traceback_later(limit, exit=True, file=target)
        _armed = True


def rearm() -> None:
    """Again for GRACE_S: pytest cancels every watchdog when a test fails (its faulthandler plugin's
    ``pytest_exception_interact``), which is exactly when a teardown may hang. Only while armed."""
    if _armed and _stack_file is not None:
        faulthandler.dump_traceback_later(GRACE_S, exit=True, file=_stack_file)


def disarm() -> None:
    global _armed
    if _armed:
        faulthandler.cancel_dump_traceback_later()
        _armed = False


def hung_reports(folder: Path) -> list[str]:
    """Each worker's file that holds stacks (more than its header): what it says, cut to SHOWN_LINES."""
    reports = []
    for path in sorted(folder.glob("*.txt")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) > 1:
            more = len(lines) - SHOWN_LINES
            tail = [f"... ({more} more lines)"] if more > 0 else []
            reports.append("\n".join(lines[:SHOWN_LINES] + tail))
    return reports


def end_run(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
