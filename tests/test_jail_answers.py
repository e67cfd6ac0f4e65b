"""Calls the jail answers instead of ending the run (``jail_answers.py``), in a REAL kernel.

The kernel itself never imports matplotlib, scikit-learn, statsmodels or torch: every dry run
below is their *first* import, in the forked child, as in the first cell of a notebook. Each
answered call has no side effect (the kernel never runs it), is listed in the verdict's notes,
and the first call that would really change the world still ends the run.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from jail_util import NOBODY, JailKernel, assert_nothing_left_since, jail_kernels, machine_leftovers, verdict

from crane_lsp.dryrun import DryRunOutcome, outcome_to_prediction
from crane_lsp.kernel.probe_install import PROBE_SOURCE

#: the jail's functions as the kernel has them: one module joined from all of the agent's files
JOINED: dict[str, Any] = {}
exec(compile(PROBE_SOURCE, "<crane-probe>", "exec"), JOINED)
_JAN_FALLBACK, _JAN_KNOWN, _JAN_SHAPED = JOINED["_JAN_FALLBACK"], JOINED["_JAN_KNOWN"], JOINED["_JAN_SHAPED"]
_jan_errnos, _jan_settle, _JanLog = JOINED["_jan_errnos"], JOINED["_jan_settle"], JOINED["_JanLog"]

#: torch creates its inductor cache folder (/tmp/torchinductor_<user>) on an optimizer's first step
TORCH_STEP = (
    "import torch\nimport torch.optim as optim\n"
    "opt = optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)\nopt.step()"
)
PATHS = pytest.mark.parametrize("prepared", [False, True], ids=["cold", "prepared"])
#: getpass.getuser() reads these first; without them it asks glibc (nscd, then /etc/passwd)
NO_USER_ENV = "import os\nfor v in ('LOGNAME', 'USER', 'LNAME', 'USERNAME'):\n    os.environ.pop(v, None)\n"


def _folders_made(kernel: JailKernel) -> None:
    """matplotlib's and torch's folders exist, as for anyone who imported them once (the mkdir of an
    existing one is answered EEXIST, the real outcome), made by a process as the kernel's user."""
    argv = [sys.executable, "-c", "import matplotlib.pyplot\n" + TORCH_STEP]
    if kernel.user == "nobody":  # as the kernel's user, with its HOME and MPLCONFIGDIR
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(kernel.workdir)}
        env["MPLCONFIGDIR"] = str(kernel.workdir / ".mpl")
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
        subprocess.run(argv, check=True, timeout=300, cwd=kernel.workdir, env=env)
    else:
        subprocess.run(argv, check=True, timeout=300)


@pytest.fixture(scope="module", params=["root", "nobody"])
def jk(request: pytest.FixtureRequest) -> Iterator[JailKernel]:
    yield from jail_kernels(request.param, warm=_folders_made)


def _answered(result: dict, *words: str) -> str:
    notes = [n for n in result.get("notes") or [] if n.startswith("answered by the jail")]
    assert notes, result
    for word in words:
        assert word in notes[0], notes
    return notes[0]


def test_matplotlib_first_import_gets_a_verdict(jk: JailKernel) -> None:
    clean = jk.dry_run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])", budget_s=60)
    assert clean["outcome"] == "completed", verdict(clean)
    _answered(clean, "mkdir(", "EEXIST (known outcome)")
    crash = jk.dry_run("import matplotlib.pyplot as plt\nplt.plot(undefined_values)", budget_s=60)
    assert verdict(crash)[:3] == ("raised", "NameError", 2)
    _answered(crash, "mkdir(")


@PATHS
def test_scikit_learn_first_import_gets_a_verdict(jk: JailKernel, prepared: bool) -> None:
    fit = "from sklearn.linear_model import LinearRegression\nLinearRegression().fit([[1], [2], [3]], {})"
    clean = jk.dry_run(fit.format("[1, 2, 3]"), budget_s=60, prepared=prepared)
    assert clean["outcome"] == "completed", verdict(clean)
    _answered(clean, "sem_open('joblib-", "EACCES (handled fallback)")
    crash = jk.dry_run(fit.format("[1, 2]"), budget_s=60, prepared=prepared)
    assert verdict(crash)[:3] == ("raised", "ValueError", 2)


@pytest.mark.skipif(importlib.util.find_spec("statsmodels") is None, reason="statsmodels is not installed")
def test_statsmodels_first_import_gets_a_verdict(jk: JailKernel) -> None:
    clean = jk.dry_run("import statsmodels.api as sm\nsm.add_constant([1.0, 2.0])", budget_s=90)
    assert clean["outcome"] == "completed", verdict(clean)
    _answered(clean, "sem_open('joblib-")


def test_user_lookup_without_nscd_reads_the_files(jk: JailKernel) -> None:
    me = pwd.getpwuid(NOBODY if jk.user == "nobody" else os.getuid()).pw_name
    lookup = jk.dry_run(NO_USER_ENV + f"import getpass\nassert getpass.getuser() == {me!r}")
    assert lookup["outcome"] == "completed", verdict(lookup)
    nscd = "known outcome" if not os.path.exists("/var/run/nscd/socket") else "handled fallback"
    _answered(lookup, "connect('/var/run/nscd/socket')", nscd)
    optim = jk.dry_run(NO_USER_ENV + TORCH_STEP, budget_s=90)
    assert optim["outcome"] == "completed", verdict(optim)


def test_a_real_write_after_the_first_imports_is_kept_in_memory(jk: JailKernel) -> None:
    target = jk.workdir / "after-imports.txt"
    cell = (
        NO_USER_ENV + "import getpass\ngetpass.getuser()\nimport matplotlib.pyplot as plt\n"
        f"import sklearn.linear_model\nopen({str(target)!r}, 'w').write('x')\n1 / 0"
    )
    result = jk.dry_run(cell, budget_s=90)
    assert verdict(result)[:3] == ("raised", "ZeroDivisionError", cell.count("\n") + 1), verdict(result)
    _answered(result, "mkdir(", "sem_open('joblib-", "nscd", f"openat({str(target)!r}) for writing")
    assert not target.exists()
    new_folder = jk.workdir / "made-by-the-cell"
    made = jk.dry_run(f"import os\nos.makedirs({str(new_folder)!r}, exist_ok=True)")
    assert made["outcome"] == "completed", verdict(made)
    _answered(made, f"mkdir({str(new_folder)!r}) -> done (kept in the copy)")
    assert not new_folder.exists()


def test_a_blocked_connection_names_its_address(jk: JailKernel) -> None:
    inet = jk.dry_run("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
    assert inet["outcome"] == "blocked" and "connect(127.0.0.1:9)" in inet["message"], verdict(inet)
    unix = jk.dry_run("import socket\nsocket.socket(socket.AF_UNIX).bind('\\0crane-test')")
    assert unix["outcome"] == "blocked" and "bind('@crane-test')" in unix["message"], verdict(unix)


@PATHS
def test_urllib3s_ipv6_probe_on_import_goes_on(jk: JailKernel, prepared: bool) -> None:
    """urllib3 binds a socket to [::1] port 0 on import to learn whether IPv6 works (reached from
    requests, TensorFlow, plotly); it ended every such first import. Answered EADDRNOTAVAIL, which
    urllib3 handles; the cell's own crash after it is reported. Any other bind still ends the run."""
    probe = "import importlib\nimport urllib3.util.connection as c\nimportlib.reload(c)\nc.HAS_IPV6\n"
    ok = jk.dry_run(probe + "done = True", prepared=prepared)
    assert ok["outcome"] == "completed", verdict(ok)
    _answered(ok, "bind('[::1]:0') -> EADDRNOTAVAIL (handled fallback)")
    crash = jk.dry_run(probe + "{}['missing']", prepared=prepared)
    assert verdict(crash)[:3] == ("raised", "KeyError", 5)
    # a server of the cell's own, on a fixed port, or on IPv4: still the end of the run
    fixed = jk.dry_run("import socket\nsocket.socket(socket.AF_INET6).bind(('::1', 8765))", prepared=prepared)
    assert fixed["outcome"] == "blocked" and "bind(" in fixed["message"], verdict(fixed)
    inet = jk.dry_run("import socket\nsocket.socket().bind(('127.0.0.1', 0))", prepared=prepared)
    assert inet["outcome"] == "blocked" and "bind(127.0.0.1:0)" in inet["message"], verdict(inet)
    # a crash that carries the answered errno is no verdict: the real bind may work
    own = jk.dry_run("import socket\nsocket.socket(socket.AF_INET6).bind(('::1', 0))", prepared=prepared)
    assert own["outcome"] == "blocked" and "follows a call the jail answered" in own["message"], verdict(own)
    # the truth, where the machine has IPv6: the real bind works, so the answer is a fallback, not the truth
    if socket.has_ipv6 and _binds_ipv6_loopback():
        jk.run("import socket\ns6 = socket.socket(socket.AF_INET6)\ns6.bind(('::1', 0))\ns6.close()")


def _binds_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_mkdir_of_an_existing_folder_is_the_real_outcome(jk: JailKernel) -> None:
    existing = jk.workdir / "existing"
    existing.mkdir()
    ok = jk.dry_run(f"import os\nos.makedirs({str(existing)!r}, exist_ok=True)\nx = 1")
    assert ok["outcome"] == "completed", verdict(ok)
    # the real call fails with EEXIST too: the crash through a known-outcome answer is real
    crash = jk.dry_run(f"import os\nx = 1\nos.mkdir({str(existing)!r})")
    assert verdict(crash)[:3] == ("raised", "FileExistsError", 3)
    relative = jk.dry_run("import os\nos.mkdir('.')")
    assert verdict(relative)[:2] == ("raised", "FileExistsError")


def test_naming_a_thread_of_the_copy_goes_on(jk: JailKernel) -> None:
    # glibc names another thread through /proc/self/task/<tid>/comm (TensorFlow names its pools so)
    cell = (
        "import ctypes, threading\nready = threading.Event()\n"
        "worker = threading.Thread(target=ready.wait)\nworker.start()\n"
        "status = ctypes.CDLL(None).pthread_setname_np(ctypes.c_ulong(worker.ident), b'crane-pool')\n"
        "ready.set()\nworker.join()"
    )
    result = jk.dry_run(cell)
    assert result["outcome"] == "completed", verdict(result)
    _answered(result, "/comm')", "EACCES (handled fallback)")
    own = jk.dry_run("import os\nfd = os.open('/proc/1/comm', os.O_WRONLY)")  # not the copy's own name
    assert own["outcome"] == "blocked" and "writes a file" in own["message"], verdict(own)


def test_a_crash_through_a_fallback_answer_is_no_verdict(jk: JailKernel) -> None:
    # shm_open is answered EACCES; SharedMemory does not handle it, while the real call works
    result = jk.dry_run(
        "from multiprocessing import shared_memory\nshared_memory.SharedMemory(create=True, size=8)"
    )
    assert result["outcome"] == "blocked", verdict(result)
    assert "follows a call the jail answered" in result["message"] and "PermissionError" in result["message"]
    assert result.get("exception") is None and result.get("line") is None
    _answered(result, "openat('/dev/shm/psm_", "EACCES (handled fallback)")


@PATHS
def test_semaphores_are_kept_in_the_copy(jk: JailKernel, prepared: bool) -> None:
    before = machine_leftovers()
    lock = jk.dry_run(
        "import multiprocessing\nlock = multiprocessing.Lock()\nwith lock:\n    x = 1", prepared=prepared
    )
    assert lock["outcome"] == "completed", verdict(lock)
    _answered(lock, "sem_open('mp-", "done (kept in the copy)")
    pool = "from multiprocessing.pool import ThreadPool\nwith ThreadPool(2) as pool:\n"
    pool += "    out = pool.map(int, {})"
    clean = jk.dry_run(pool.format("['1', '2']"), prepared=prepared)
    assert clean["outcome"] == "completed", verdict(clean)
    crash = jk.dry_run(pool.format("['1', 'x']"), prepared=prepared)
    assert verdict(crash)[:3] == ("raised", "ValueError", 3)
    queue = jk.dry_run(
        "import multiprocessing\nq = multiprocessing.Queue()\nq.put(1)\nassert q.get(timeout=5) == 1"
    )
    assert queue["outcome"] == "completed", verdict(queue)
    # joblib's probe is still refused: it runs serially in the copy, where processes are stopped
    serial = jk.dry_run("import joblib\nfrom joblib._multiprocessing_helpers import mp\nassert mp is None")
    assert serial["outcome"] == "completed", verdict(serial)
    assert_nothing_left_since(before)  # nothing reached /dev/shm


def test_a_verdict_the_jail_shaped_is_not_a_crash(jk: JailKernel) -> None:
    jk.run("import socket\nserver = socket.socket()\nserver.bind(('127.0.0.1', 0))")
    port = jk.eval("server.getsockname()[1]")
    # the child's copy of the socket is /dev/null: the real getsockname() works
    seen = jk.dry_run("address = server.getsockname()\nprint(address)")
    assert seen["outcome"] == "blocked", verdict(seen)
    assert "after seeing the jail's own work" in seen["message"] and "getsockname()" in seen["message"]
    _answered(seen, "ENOTSOCK (the jail's own work)")
    handled = jk.dry_run("try:\n    server.getsockname()\nexcept OSError:\n    pass\nx = 1")
    assert handled["outcome"] == "completed", verdict(handled)
    assert jk.eval("server.getsockname()[1]") == port
    jk.run("server.close()")


@PATHS
def test_timeit_runs_the_statement_once(jk: JailKernel, prepared: bool) -> None:
    once = jk.dry_run("calls = []\n%timeit calls.append(1)\nassert len(calls) == 1", prepared=prepared)
    assert once["outcome"] == "completed", verdict(once)
    crash = jk.dry_run("x = 0\n%timeit 1 / x", prepared=prepared)
    assert verdict(crash)[:3] == ("raised", "ZeroDivisionError", 2)
    body = jk.dry_run("%%timeit values = [1, 2]\ntotal = sum(values)\nvalues[5]", prepared=prepared)
    assert verdict(body)[:3] == ("raised", "IndexError", 3)
    clean = jk.dry_run("%%timeit\nsorted(range(100000))", budget_s=3, prepared=prepared)
    assert clean["outcome"] == "completed", verdict(clean)
    local = jk.dry_run("def f():\n    y = 2\n    %timeit y + 1\nf()", prepared=prepared)
    assert local["outcome"] == "completed", verdict(local)


# the settling rules, without a kernel ---------------------------------------------------------


def _log(*answers: tuple[int, str, str]) -> _JanLog:
    log = _JanLog()
    log.answers.extend(answers)
    return log


def test_settle_keeps_real_crashes_and_lists_the_answers() -> None:
    raised = {"outcome": "raised", "exception": "KeyError", "line": 3, "notes": [], "errnos": []}
    settled = _jan_settle(dict(raised), _log((13, _JAN_FALLBACK, "openat('/dev/shm/sem.x')")))
    assert settled["outcome"] == "raised" and "errnos" not in settled
    note = "answered by the jail without running them: openat('/dev/shm/sem.x') -> EACCES (handled fallback)"
    assert settled["notes"] == [note]
    known = _jan_settle({**raised, "errnos": [17]}, _log((17, _JAN_KNOWN, "mkdir('/tmp')")))
    assert known["outcome"] == "raised"
    through = _jan_settle({**raised, "errnos": [13]}, _log((13, _JAN_FALLBACK, "openat('/dev/shm/sem.x')")))
    assert through["outcome"] == "blocked" and through["line"] is None
    shaped = _jan_settle(dict(raised), _log((88, _JAN_SHAPED, "getpeername() on descriptor 7")))
    assert shaped["outcome"] == "blocked" and "jail's own work" in shaped["message"]
    untouched = _jan_settle({"outcome": "completed", "errnos": []}, _JanLog())
    assert untouched == {"outcome": "completed"}
    # EINTR: a parked call a signal interrupted before the parent read it (the real call does not wait)
    interrupted = _jan_settle({**raised, "exception": "InterruptedError", "errnos": [4]}, _JanLog())
    assert interrupted["outcome"] == "blocked" and "EINTR" in interrupted["message"], interrupted


def test_errnos_follow_causes_contexts_and_text() -> None:
    try:
        try:
            raise PermissionError(13, "Permission denied")
        except OSError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as exc:
        assert _jan_errnos(exc) == [13]
    try:
        try:
            raise FileExistsError(17, "exists")
        except OSError:
            raise ValueError("joblib: [Errno 28] No space left") from None
    except ValueError as exc:
        assert _jan_errnos(exc) == [17, 28]  # a context ``from None`` hides still ran through the call


def test_a_blocked_verdict_keeps_the_answered_calls_in_its_notes() -> None:
    note = "answered by the jail without running them: mkdir('/home/me/.config/matplotlib') -> EEXIST"
    outcome = DryRunOutcome(outcome="blocked", message="writes a file: openat('/data/out.csv')", notes=[note])
    prediction = outcome_to_prediction(outcome, "import matplotlib.pyplot as plt\ndf.to_csv('/data/out.csv')")
    assert not prediction.crash
    assert prediction.message.startswith("no verdict: the dry run was stopped (writes a file")
    assert note in prediction.notes


def test_every_rule_is_defined_in_the_joined_probe() -> None:
    rules = JOINED["_JAN_RULES"]
    assert all(callable(JOINED.get(rule)) for rule in rules.values()), rules
