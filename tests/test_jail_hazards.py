"""The dry-run jail against each hazard class of issue 10, in REAL kernels (root and unprivileged).

Every test states the outside world before the dry run (files, database rows, a socket's peer,
the kernel's file offsets and arrays, other processes), runs the cell through the kernel-side
``dry_run`` only (no static screen: the jail alone), and asserts the verdict and that nothing
outside the forked child changed. A representative set (shared mappings, sqlite and the read
offset of an inherited file, a swallowed block, signals, grandchildren) runs twice: through a
fresh fork, and through a child prepared (forked and jailed) before the cell was known.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator

import pytest
from jail_util import JailKernel, jail_kernels, no_process_in_group, verdict


@pytest.fixture(scope="module", params=["root", "nobody"])
def jk(request: pytest.FixtureRequest) -> Iterator[JailKernel]:
    yield from jail_kernels(request.param)


#: the two ways a dry run reaches its child: a fresh fork, or a child prepared ahead (dry_run_prepare)
PATHS = pytest.mark.parametrize("prepared", [False, True], ids=["cold", "prepared"])


def _blocked(result: dict, *words: str) -> None:
    assert result["outcome"] == "blocked", (result["outcome"], result.get("message"), result.get("exception"))
    for word in words:
        assert word in result["message"], result


# 1. shared mappings -------------------------------------------------------------------------------


@PATHS
def test_shared_mappings_are_private_in_the_child(jk: JailKernel, prepared: bool) -> None:
    data = jk.workdir / "mm.bin"
    data.write_bytes(bytes(4096))
    jk.own(data)
    jk.run(
        "import numpy as np\nfrom multiprocessing import shared_memory\n"
        f"mm = np.memmap({str(data)!r}, dtype='uint8', mode='r+', shape=(4096,))\n"
        "shm = shared_memory.SharedMemory(create=True, size=64)\nshm.buf[:4] = b'abcd'\n"
        "import mmap\nanon = mmap.mmap(-1, 4096)  # MAP_SHARED | MAP_ANONYMOUS\nanon[:2] = b'ok'"
    )
    try:
        result = jk.dry_run(
            "mm[:] = 7\nmm.flush()\nshm.buf[:4] = b'XXXX'\nanon[:2] = b'no'\nfinal = int(mm.sum())\n"
            "assert final == 7 * 4096\n1 / 0",
            prepared=prepared,
        )
        # the child wrote its private copies (and saw them), then crashed as the real run would
        assert result["outcome"] == "raised" and result["exception"] == "ZeroDivisionError", result
        assert result["line"] == 7
        assert data.read_bytes() == bytes(4096), "the memmap's file must be untouched"
        assert jk.eval("int(mm.sum())") == "0"
        assert jk.eval("bytes(shm.buf[:4])") == "b'abcd'"
        assert jk.eval("anon[:2]") == "b'ok'"
    finally:
        jk.run("del mm\nshm.close()\nshm.unlink()\nanon.close()")


@PATHS
def test_a_file_read_back_past_its_private_mapping_gives_no_verdict(jk: JailKernel, prepared: bool) -> None:
    """The cell writes through an np.memmap, then reads the file another way (open(), a second
    mapping). A real run reads what it wrote; in the copy the mapping is private and the file still
    holds the old bytes, so a crash after that is the jail's doing: no verdict, never the crash.
    Written without reading back, or read back without writing, a crash stays a crash. (With a second
    mapping of the file in the kernel, any crash after a write is no verdict: it may have read it.)"""
    data = jk.workdir / "readback.bin"
    data.write_bytes(bytes(64))
    jk.own(data)
    where = str(data)
    jk.run(f"import numpy as np\nrb = np.memmap({where!r}, dtype='uint8', mode='r+', shape=(64,))")
    read_back = f"with open({where!r}, 'rb') as f:\n    first = f.read(1)\n"
    reopened = f"rb[0] = 7\nrb.flush()\n{read_back}assert first == b'\\x07'"
    remapped = "rb[1] = 9\nassert rb_view[1] == 9"
    try:
        _blocked(jk.dry_run(reopened, prepared=prepared), "AssertionError", "readback.bin", "made private")
        written = jk.dry_run("rb[2] = 5\nrb.flush()\nnot_defined_here", prepared=prepared)
        assert verdict(written)[:3] == ("raised", "NameError", 3)
        read = jk.dry_run(f"{read_back}1 / 0", prepared=prepared)
        assert verdict(read)[:3] == ("raised", "ZeroDivisionError", 3)
        jk.run(f"rb_view = np.memmap({where!r}, dtype='uint8', mode='r', shape=(64,))")
        _blocked(jk.dry_run(remapped, prepared=prepared), "AssertionError", "another mapping")
        assert data.read_bytes() == bytes(64), "the file must be untouched by the dry runs"
        # the truth: both cells run clean for real
        jk.run(reopened)
        jk.run(remapped)
    finally:
        jk.run("rb = rb_view = None")


def test_torch_shared_tensor_stays_unchanged(jk: JailKernel) -> None:
    jk.run("import torch\nshared_t = torch.zeros(1000).share_memory_()")
    result = jk.dry_run("shared_t.fill_(5.0)\nassert float(shared_t.sum()) == 5000.0\nshared_t.bad_attribute")
    assert result["outcome"] == "raised" and result["exception"] == "AttributeError", result
    assert jk.eval("float(shared_t.sum())") == "0.0"


# 2. inherited handles -----------------------------------------------------------------------------


@PATHS
def test_inherited_handles_act_for_nothing(jk: JailKernel, prepared: bool) -> None:
    log = jk.own(jk.workdir / f"app{int(prepared)}.log")
    db = jk.workdir / f"runs{int(prepared)}.db"
    book = jk.workdir / "book.txt"
    book.write_text("".join(f"line {i}\n" for i in range(5000)))
    jk.own(book)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (score REAL)")
        conn.executemany("INSERT INTO runs VALUES (?)", [(0.1,), (0.4,), (0.9,)])
    jk.own(db)
    jk.run(
        "import logging, sqlite3\n"
        f"logf = open({str(log)!r}, 'a')\nlogger = logging.getLogger('jailtest')\n"
        f"logger.addHandler(logging.FileHandler({str(log)!r}))\n"
        f"db = sqlite3.connect({str(db)!r})\nreader = open({str(book)!r})\nfirst = reader.readline()"
    )
    offset = jk.eval("reader.tell()")
    for cell, words in (
        ("print('x', file=logf, flush=True)", ("writes a file", "write")),
        ("logger.warning('from the dry run')", ("writes a file",)),
        ("with db:\n    db.execute('DELETE FROM runs WHERE score < 0.5')", ()),
        ("db.execute('DROP TABLE runs')\ndb.commit()", ()),
    ):
        _blocked(jk.dry_run(cell, prepared=prepared), *words)
    # reading works on an independent copy of the descriptor: the kernel's offset does not move
    cell = "rest = reader.read()\nassert rest.count('\\n') == 4999\nreader.seek(0)\n1 / 0"
    result = jk.dry_run(cell, prepared=prepared)
    assert result["outcome"] == "raised" and result["exception"] == "ZeroDivisionError", result
    assert jk.eval("reader.tell()") == offset
    assert jk.eval("reader.readline()") == "'line 1\\n'"
    assert log.read_text() == ""
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 3


def test_connected_socket_and_kernel_sockets_send_nothing(jk: JailKernel) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    jk.run(f"import socket\npeer = socket.create_connection(('127.0.0.1', {port}))")
    server, _ = listener.accept()
    server.settimeout(0.5)
    try:
        _blocked(jk.dry_run("peer.sendall(b'secret')"), "talks to the network")
        _blocked(jk.dry_run("import os\nos.write(peer.fileno(), b'raw')"))
        _blocked(jk.dry_run("peer.recv(10)"))
        with pytest.raises(socket.timeout):
            server.recv(10)  # the peer received nothing
        # the kernel's own ZeroMQ sockets: through pyzmq, and through their raw descriptors
        content = "{'name': 'stdout', 'text': 'leak'}"
        jk.dry_run(f"k = get_ipython().kernel\nk.session.send(k.iopub_socket, 'stream', {content})")
        cell = (
            "import os, stat\nfor fd in map(int, os.listdir('/proc/self/fd')):\n"
            "    try:\n        os.write(fd, b'leak')\n    except OSError:\n        pass"
        )
        _blocked(jk.dry_run(cell), "write")
        assert not [m for m in jk.iopub_messages() if "leak" in str(m.get("content"))]
        assert jk.alive()
    finally:
        server.close()
        listener.close()
        jk.run("peer.close()")


# 3. a swallowed block does not switch the jail off ------------------------------------------------


@PATHS
def test_swallowed_block_still_ends_the_run(jk: JailKernel, prepared: bool) -> None:
    folder = jk.workdir / f"keep{int(prepared)}"
    folder.mkdir()
    jk.own(folder)
    (folder / "a.txt").write_text("keep me")
    cell = (
        "import os, shutil\ntry:\n"
        f"    os.rename({str(folder / 'a.txt')!r}, {str(folder / 'b.txt')!r})\n"
        "except BaseException:\n    pass\n"
        f"shutil.rmtree({str(folder)!r})"
    )
    result = jk.dry_run(cell, prepared=prepared)
    _blocked(result, "renames a file", "a.txt")
    assert (folder / "a.txt").read_text() == "keep me"
    assert not (folder / "b.txt").exists()


# 4. native code -----------------------------------------------------------------------------------


def test_native_writers_write_nothing(jk: JailKernel) -> None:
    """Files that native code writes are kept in the copy's memory (``jail_writes``): nothing reaches
    the disk. Native code looks its files up by name, which finds the disk, so a crash after such a
    write is no verdict; deleting a file or starting a process still ends the run."""
    target = jk.workdir / "native"
    victim = jk.workdir / "victim.txt"
    victim.write_text("still here")
    jk.own(victim)
    jk.run(f"def save_helper(frame):\n    frame.to_csv({str(target) + '.csv'!r})")
    kept = [
        f"import ctypes\nctypes.CDLL(None).open({str(target) + '.c'!r}.encode(), 0o101, 0o644)",
        f"import torch\ntorch.save(torch.ones(3), {str(target) + '.pt'!r})",
        "import pandas as pd\nsave_helper(pd.DataFrame({'a': [1]}))",
        f"import numpy as np\nnp.save({str(target) + '.npy'!r}, np.ones(3))",
    ]
    for cell in kept:
        result = jk.dry_run(cell)
        assert result["outcome"] == "completed", verdict(result)
        assert any("for writing -> a file in the copy's memory" in n for n in result["notes"]), result
    # SQLite creates its database, then checks it by name: it finds no file and raises
    sqlite = f"import sqlite3\nsqlite3.connect({str(target) + '.db'!r}).execute('create table t (x)')"
    _blocked(jk.dry_run(sqlite), "native code writing", "native.db")
    stopped = [
        (f"import ctypes\nctypes.CDLL(None).unlink({str(victim)!r}.encode())", "deletes"),
        (f"import ctypes\nctypes.CDLL(None).system(b'touch {target}.sh')", "starts a process"),
    ]
    if importlib.util.find_spec("h5py") is not None:  # HDF5's own C writer, which also stats its file
        stopped.append((f"import h5py\nh5py.File({str(target) + '.h5'!r}, 'w')", "native code writing"))
    for cell, words in stopped:
        _blocked(jk.dry_run(cell), words)
    assert sorted(p.name for p in jk.workdir.iterdir() if p.name.startswith("native")) == []
    assert victim.read_text() == "still here"


# 5. signals ---------------------------------------------------------------------------------------


@PATHS
def test_signals_reach_no_one_outside(jk: JailKernel, prepared: bool) -> None:
    other = subprocess.Popen(["sleep", "60"])
    if jk.user == "nobody":
        os.chown(jk.workdir, 65534, 65534)
    try:
        _blocked(
            jk.dry_run("import os\nos.kill(os.getppid(), 9)", prepared=prepared), "signals another process"
        )
        _blocked(
            jk.dry_run("import ctypes, os\nctypes.CDLL(None).kill(os.getppid(), 9)", prepared=prepared),
            "signals",
        )
        _blocked(jk.dry_run(f"import os\nos.kill({other.pid}, 15)", prepared=prepared), f"pid {other.pid}")
        _blocked(jk.dry_run("import os\nos.kill(1, 15)", prepared=prepared), "pid 1")
        cell = "import fcntl, os\nr, w = os.pipe()\nfcntl.fcntl(r, fcntl.F_SETOWN, os.getppid())"
        _blocked(jk.dry_run(cell, prepared=prepared), "fcntl")  # SIGIO routed to the kernel would kill it
        # the child's own process group is the child alone: the kernel's group is out of reach
        result = jk.dry_run("import os\nos.killpg(os.getpgid(0), 9)", prepared=prepared)
        assert result["outcome"] == "exits" and "SIGKILL" in result["message"], result
        assert other.poll() is None, "the other process must still run"
        assert jk.alive()
    finally:
        other.kill()
        other.wait()


# 6. escape ----------------------------------------------------------------------------------------


@PATHS
def test_no_grandchild_outlives_the_run(jk: JailKernel, prepared: bool) -> None:
    marker = jk.workdir / f"late{int(prepared)}.txt"
    for cell in (
        "import ctypes\nctypes.CDLL(None).fork()",
        f"import os\nos.system('sleep 1; touch {marker}')",
        "import subprocess\nsubprocess.Popen(['sleep', '30'])",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    ):
        result = jk.dry_run(cell, prepared=prepared)
        _blocked(result, "process")
        assert no_process_in_group(result["child_pid"])
    result = jk.dry_run("import time\nwhile True:\n    time.sleep(0.01)", budget_s=0.5, prepared=prepared)
    assert result["outcome"] == "timeout"
    assert not os.path.exists(f"/proc/{result['child_pid']}")
    assert no_process_in_group(result["child_pid"])
    time.sleep(1.2)
    assert not marker.exists()


# 7. verdicts as the real kernel's -----------------------------------------------------------------


def test_verdicts_match_the_real_kernel(jk: JailKernel) -> None:
    secret = jk.workdir / "secret.txt"
    secret.write_text("root only")
    os.chmod(secret, 0o600)
    os.chown(secret, 0, 0)
    read = f"open({str(secret)!r}).read()"
    real = jk.run(read, allow_error=True)
    dry = jk.dry_run(read)
    if real["status"] == "ok":  # root reads it: so must the dry run (no user namespace)
        assert dry["outcome"] == "completed", dry
    else:  # nobody cannot: the same PermissionError, on the same line
        assert dry["outcome"] == "raised" and dry["exception"] == real["ename"] == "PermissionError", dry
    result = jk.dry_run("import asyncio\nasync def f():\n    return 1\nasyncio.run(f())")
    real = jk.run("import asyncio\nasync def f():\n    return 1\nasyncio.run(f())", allow_error=True)
    assert real["status"] == "error" and real["ename"] == "RuntimeError"
    assert result["outcome"] == "raised" and result["exception"] == "RuntimeError" and result["line"] == 4
    result = jk.dry_run("import asyncio\nawait asyncio.sleep(0)\nint('x')")
    assert result["outcome"] == "raised" and result["exception"] == "ValueError" and result["line"] == 3
    result = jk.dry_run("%time int('x')")
    assert result["outcome"] == "raised" and result["exception"] == "ValueError", result
    result = jk.dry_run("import sys\nsys.exit(2)")
    assert result["outcome"] == "raised" and result["exception"] == "SystemExit"
    result = jk.dry_run("exit()")
    assert result["outcome"] == "exits" and "exit()" in result["message"], result
    result = jk.dry_run("import os\nos._exit(3)")
    assert result["outcome"] == "exits" and "os._exit(3)" in result["message"], result
    assert jk.alive()


# 8. thread pools ----------------------------------------------------------------------------------


def test_threaded_native_work_finishes_in_the_fork(jk: JailKernel) -> None:
    jk.run(
        "import numpy as np, torch\nfrom sklearn.cluster import KMeans\n"
        "from sklearn.mixture import GaussianMixture\nX = np.random.default_rng(0).random((2000, 8))\n"
        "KMeans(3, n_init=2, random_state=0).fit(X)\nGaussianMixture(2, random_state=0).fit(X)\n"
        "a = torch.rand(400, 400)\n_ = a @ a"
    )
    for cell in (
        "km = KMeans(3, n_init=2, random_state=0).fit(X)\nkm.predict(X[:, :3])",
        "gm = GaussianMixture(2, random_state=0).fit(X)\ngm.predict(X[:, :3])",
        "b = a @ a\nc = torch.rand(3, 5)\nb @ c",
    ):
        result = jk.dry_run(cell, budget_s=10)
        assert result["outcome"] == "raised" and result["exception"] in ("ValueError", "RuntimeError"), result
        assert result["line"] == cell.count("\n") + 1
        assert result["elapsed_s"] < 5
    result = jk.dry_run("import joblib\nn = joblib.cpu_count(only_physical_cores=True)\nn.missing")
    assert result["outcome"] == "raised" and result["exception"] == "AttributeError", result


# 9. budgets ---------------------------------------------------------------------------------------


def test_timeout_says_it_did_not_finish(jk: JailKernel) -> None:
    result = jk.dry_run("import time\ntime.sleep(5)\n1 / 0", budget_s=1.0)
    assert result["outcome"] == "timeout" and result["message"] == "did not finish in 1 s", result
    result = jk.dry_run("import time\ntime.sleep(1.5)\n1 / 0", budget_s=6.0)
    assert result["outcome"] == "raised" and result["exception"] == "ZeroDivisionError"


def test_memory_cap_is_blocked_not_a_crash(jk: JailKernel) -> None:
    result = jk.dry_run("import numpy as np\nbig = np.ones(2 * 1024**3 // 8)\n1 / 0", memory_mb=256)
    _blocked(result, "memory")
    assert jk.alive()
