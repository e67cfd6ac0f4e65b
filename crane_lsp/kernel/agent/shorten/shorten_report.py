"""Reports a dry run's child writes on its verdict pipe before its answer: STANDARD LIBRARY ONLY.

Joined before ``dryrun.py``, which calls them in the child and reads them in the kernel
(``_sb_where_reports``): the full run's child says every 0.1 s which line of the cell it is on, so the
shortened runs (``shorten.py``) cut the loop the time goes to and leave the data whole; a shortened
run's child says what it shortened before it runs the cell, so a run that hangs still says it.
"""

import contextlib as _shp_contextlib
import json as _shp_json
import os as _shp_os
import sys as _shp_sys

_SHP_CELL_FILE = "<crane-dryrun>"  # the dry run's name for the cell's code (dryrun.py's _SB_FILENAME)
_SHP_WHERE = b"\x01"  # + six digits: the line the full run is on
_SHP_EVERY_S = 0.1  # the full run reports its line this often


def _shp_report_where(fd, after_s):
    """In the full run's child: every 0.1 s from its start, the line of the
    cell's own code it is running, as ``\\x01`` and six digits on the verdict pipe (read by
    ``_sb_wait``). A Python signal handler runs between bytecodes; system calls are restarted."""
    signal = _shp_sys.modules.get("signal")
    if signal is None:
        return

    def report(_signum, frame):
        line = None
        while frame is not None:  # the outermost frame of the cell: the statement the time goes to
            if frame.f_code.co_filename == _SHP_CELL_FILE:
                line = frame.f_lineno
            frame = frame.f_back
        if line:
            with _shp_contextlib.suppress(OSError):
                _shp_os.write(fd, _SHP_WHERE + b"%06d" % min(int(line), 999999))

    with _shp_contextlib.suppress(Exception):
        signal.signal(signal.SIGALRM, report)
        signal.siginterrupt(signal.SIGALRM, False)
        signal.setitimer(signal.ITIMER_REAL, min(0.05, after_s), _SHP_EVERY_S)


def _shp_report_shortened(fd, shortened):
    """In a shortened run's child, before the cell runs: what it shortened, so that a run that hangs
    still says it (``\\x02`` + six digits of length + JSON on the verdict pipe, read by ``_sb_wait``)."""
    with _shp_contextlib.suppress(Exception):
        data = _shp_json.dumps(shortened, default=str).encode()
        if len(data) < 999_999:
            view = memoryview(b"\x02" + b"%06d" % len(data) + data)
            while view:
                view = view[_shp_os.write(fd, view) :]


def _shp_stop_reports():
    """Before the answer: the timer off (a report inside the answer would garble it)."""
    signal = _shp_sys.modules.get("signal")
    if signal is not None:
        with _shp_contextlib.suppress(Exception):
            signal.setitimer(signal.ITIMER_REAL, 0)
