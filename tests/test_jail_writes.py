"""Files the dry run's copy writes are kept in its own memory (``jail_writes.py``), in REAL kernels.

Each cell that writes is dry-run, then (where the test's own folder takes the write) run for real in
the same kernel: the verdicts agree, the dry run left the disk as it was, and the real run wrote.
Errors the real open would meet (a missing folder, a folder, ``O_EXCL`` on a file that exists) are
the real crashes. What the copy cannot show (a kept file read back by name, a file past its cap,
native code that looks its file up by name) is no verdict; a folder the kernel may not write, /proc
and a ninth file still end the run. A folder the cell makes is made in the copy only. The kernel
holds no descriptor afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jail_util import JailKernel, jail_kernels, real_run, verdict

from crane_lsp.kernel.probe_install import PROBE_SOURCE

PATHS = pytest.mark.parametrize("prepared", [False, True], ids=["cold", "prepared"])
KEPT = "for writing -> a file in the copy's memory (kept in the copy)"


@pytest.fixture(scope="module", params=["root", "nobody"])
def jk(request: pytest.FixtureRequest) -> Iterator[JailKernel]:
    # matplotlib imported once (its config folder and font cache exist), as in any notebook
    yield from jail_kernels(request.param, warm=lambda kernel: kernel.run("import matplotlib.pyplot"))


def _folder(jk: JailKernel, name: str) -> Path:
    """A fresh folder of the test's, which the kernel's user may write."""
    folder = jk.workdir / name
    folder.mkdir()
    if jk.user == "nobody":
        os.chown(folder, 65534, 65534)
    return folder


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _kept(result: dict, *paths: Path) -> None:
    notes = [n for n in result.get("notes") or [] if n.startswith("answered by the jail")]
    assert notes, result
    for path in paths:
        assert f"openat({str(path)!r}) {KEPT}" in notes[0], notes


def _kept_descriptors(jk: JailKernel) -> list[str]:
    """The kernel's descriptors of kept files (the copy's are gone with the copy; none may stay)."""
    found = []
    for fd in os.listdir(f"/proc/{jk.pid}/fd"):
        try:
            target = os.readlink(f"/proc/{jk.pid}/fd/{fd}")
        except OSError:
            continue
        if "crane-kept" in target:
            found.append(target)
    return found


def _dry_then_real(jk: JailKernel, cell: str, expected: tuple, prepared: bool, folder: Path) -> dict:
    """Dry-run ``cell`` (``folder`` stays as it was, no kept file's descriptor stays in the
    kernel), then run it for real: both give ``expected``."""
    before = _listing(folder)
    dry = jk.dry_run(cell, budget_s=60, prepared=prepared)
    assert verdict(dry)[:3] == expected, verdict(dry)
    assert _listing(folder) == before and _kept_descriptors(jk) == []
    assert real_run(jk, cell) == expected
    return dry


@PATHS
def test_a_cell_that_saves_gets_the_verdict_of_its_real_run(jk: JailKernel, prepared: bool) -> None:
    folder = _folder(jk, f"saves{int(prepared)}")
    (folder / "old.csv").write_text("kept as it is\n")
    jk.own(folder / "old.csv")
    cell = (
        "import numpy as np, pandas as pd, matplotlib\nmatplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\n"
        f"frame = pd.DataFrame({{'a': [1, 2]}})\nframe.to_csv({str(folder / 'old.csv')!r})\n"
        f"np.savetxt({str(folder / 'a.txt')!r}, np.ones((2, 2)))\n"
        f"plt.plot([1, 2])\nplt.savefig({str(folder / 'fig.png')!r})\n"
        "frame['no such column']"
    )
    dry = _dry_then_real(jk, cell, ("raised", "KeyError", 9), prepared, folder)
    _kept(dry, folder / "old.csv", folder / "a.txt", folder / "fig.png")
    assert sorted(_listing(folder)) == ["a.txt", "fig.png", "old.csv"]  # the real run wrote


def test_the_errors_of_the_real_open_are_the_real_crashes(jk: JailKernel) -> None:
    folder = _folder(jk, "errors")
    (folder / "there.txt").write_text("x")
    jk.own(folder / "there.txt")
    cells = [
        (f"open({str(folder / 'missing' / 'x.txt')!r}, 'w')", "FileNotFoundError"),
        (f"open({str(folder / 'there.txt' / 'x.txt')!r}, 'w')", "NotADirectoryError"),
        (f"open({str(folder)!r}, 'w')", "IsADirectoryError"),
        (f"open({str(folder / 'there.txt')!r}, 'x')", "FileExistsError"),
        (
            f"import numpy as np\nnp.savetxt({str(folder / 'five.txt')!r}, np.ones((1, 2, 1, 2, 1)))",
            "ValueError",
        ),
    ]
    for cell, exception in cells:
        dry = jk.dry_run(cell, budget_s=30)
        assert verdict(dry)[1] == exception and verdict(dry)[0] == "raised", (cell, verdict(dry))
        assert not (folder / "five.txt").exists()
        assert real_run(jk, cell)[:2] == ("raised", exception), cell


def test_the_copy_sees_what_it_wrote_through_its_own_files(jk: JailKernel) -> None:
    """Appending in a loop reopens the same kept file; ``os.path.getsize``, ``os.path.exists`` and
    ``Path.stat`` describe it; a temporary file (named or not) works and is gone after."""
    folder = _folder(jk, "loop")
    log = folder / "log.txt"
    cell = (
        "import os, tempfile, pathlib\n"
        f"for i in range(3):\n    with open({str(log)!r}, 'a') as f:\n        f.write(str(i))\n"
        f"assert os.path.exists({str(log)!r}) and os.path.getsize({str(log)!r}) == 3\n"
        f"assert pathlib.Path({str(log)!r}).stat().st_size == 3\n"
        f"with open({str(log)!r}, 'w') as f:\n    f.write('x')\n"
        f"assert os.path.getsize({str(log)!r}) == 1\n"
        f"with tempfile.TemporaryFile(dir={str(folder)!r}) as t:\n    t.write(b'y')\n"
        f"with tempfile.NamedTemporaryFile(dir={str(folder)!r}) as t:\n    t.write(b'z')\n"
        "1 / 0"
    )
    dry = jk.dry_run(cell, budget_s=30)
    assert verdict(dry)[:3] == ("raised", "ZeroDivisionError", 14), verdict(dry)
    assert _listing(folder) == {} and _kept_descriptors(jk) == []


@PATHS
def test_a_file_read_back_through_python_is_the_kept_one(jk: JailKernel, prepared: bool) -> None:
    """``pd.read_csv`` of the CSV the cell just saved, ``np.load`` of its ``.npy``: the copy reads
    what it wrote, as the real run does, and the verdicts agree."""
    folder = _folder(jk, f"readback{int(prepared)}")
    cell = (
        "import numpy as np, pandas as pd\n"
        f"pd.DataFrame({{'a': [1, 2]}}).to_csv({str(folder / 'b.csv')!r}, index=False)\n"
        f"np.save({str(folder / 'c.npy')!r}, np.arange(3))\n"
        f"assert np.load({str(folder / 'c.npy')!r}).tolist() == [0, 1, 2]\n"
        f"back = pd.read_csv({str(folder / 'b.csv')!r})\n"
        "back['b']"
    )
    _dry_then_real(jk, cell, ("raised", "KeyError", 6), prepared, folder)
    # after a save, a file that is really missing is the real crash, not a doubt about the save
    missing = f"{cell.rsplit(chr(10), 1)[0]}\npd.read_csv({str(folder / 'no-such.csv')!r})"
    _dry_then_real(jk, missing, ("raised", "FileNotFoundError", 6), prepared, folder)


def test_a_folder_the_cell_makes_is_made_in_the_copy_only(jk: JailKernel) -> None:
    """``os.makedirs('out/sub')`` then a save into it: the folders exist in name only, in the copy,
    and the files in them are kept files; a listing of such a folder is no verdict."""
    folder = _folder(jk, "made")
    out = folder / "out" / "sub"
    cells = [
        (
            f"import os, pandas as pd\nos.makedirs({str(out)!r}, exist_ok=True)\n"
            f"pd.DataFrame({{'a': [1]}}).to_csv({str(out / 's.csv')!r})\n"
            f"assert os.path.isdir({str(out)!r}) and os.path.exists({str(out / 's.csv')!r})\n"
            f"pd.read_csv({str(out / 's.csv')!r})['b']"
        ),
        f"import os\nos.mkdir({str(folder / 'c')!r})\nos.mkdir({str(folder / 'c')!r})",  # EEXIST
        f"import os\nos.mkdir({str(folder / 'no' / 'parent')!r})",  # ENOENT
    ]
    for cell in cells:
        dry = jk.dry_run(cell, budget_s=30)
        assert _listing(folder) == {}, cell
        real = real_run(jk, cell)
        assert real[0] == "raised" and verdict(dry)[:3] == real, (cell, verdict(dry), real)
        for made in sorted(folder.iterdir(), reverse=True):  # what the real run made
            for file in sorted(made.rglob("*"), reverse=True):
                file.unlink() if file.is_file() else file.rmdir()
            made.rmdir()
    listed = jk.dry_run(f"import os\nos.mkdir({str(folder / 'e')!r})\nos.listdir({str(folder / 'e')!r})")
    assert listed["outcome"] == "blocked" and "it read back" in listed["message"], verdict(listed)


def test_what_the_copy_cannot_show_is_no_verdict(jk: JailKernel) -> None:
    folder = _folder(jk, "cannot")
    path = folder / "b.bin"
    # read back by name below Python's open: the disk has no such file (the real run reads what it wrote)
    read_back = (
        f"open({str(path)!r}, 'wb').write(b'x')\nimport os\nos.read(os.open({str(path)!r}, os.O_RDONLY), 1)"
    )
    result = jk.dry_run(read_back, budget_s=30)
    assert result["outcome"] == "blocked" and "it read back" in result["message"], verdict(result)
    # past the cap (memory_mb / 8): the write fails in the copy only
    big = f"with open({str(folder / 'big.bin')!r}, 'wb') as f:\n    f.write(bytes(20 * 1024 * 1024))"
    result = jk.dry_run(big, budget_s=30, memory_mb=128)
    assert result["outcome"] == "blocked" and "size cap" in result["message"], verdict(result)
    # a ninth file ends the run, as every write did before
    many = "".join(f"open({str(folder / f'f{i}.txt')!r}, 'w')\n" for i in range(9))
    result = jk.dry_run(many, budget_s=30)
    assert result["outcome"] == "blocked" and "writes a file" in result["message"], verdict(result)
    assert "f8.txt" in result["message"]
    # a file of the system
    result = jk.dry_run("open('/proc/self/oom_score_adj', 'w').write('0')", budget_s=30)
    assert result["outcome"] == "blocked" and "writes a file" in result["message"], verdict(result)
    assert _listing(folder) == {}


def test_a_folder_the_kernel_may_not_write_still_ends_the_run(jk: JailKernel) -> None:
    if jk.user != "nobody":
        pytest.skip("root may write anywhere")
    folder = jk.workdir / "roots"
    folder.mkdir(mode=0o755)  # owned by root: the unprivileged kernel may not create files in it
    result = jk.dry_run(f"open({str(folder / 'x.txt')!r}, 'w')", budget_s=30)
    assert result["outcome"] == "blocked" and "writes a file" in result["message"], verdict(result)
    assert real_run(jk, f"open({str(folder / 'x.txt')!r}, 'w')")[:2] == ("raised", "PermissionError")


def test_settle_rules() -> None:
    """The parent's rules, on the joined module (no kernel): a raise about a kept file (its
    ``filename``, or its name as a word in the message), through EFBIG, or after native code opened
    one is no verdict; a crash about another file, or elsewhere, stands."""
    joined: dict[str, Any] = {}
    exec(compile(PROBE_SOURCE, "<crane-probe>", "exec"), joined)
    settle, log = joined["_jwr_settle"], joined["_JanLog"]()
    log.kept = {"/data/out.csv": -1}
    raised = {"outcome": "raised", "exception": "KeyError", "message": "'x'", "written": ["/data/out.csv"]}
    assert settle(raised, log) == ""
    missing = {**raised, "exception": "FileNotFoundError", "errnos": [2], "files": ["/data/other.csv"]}
    assert settle(missing, log) == ""  # another file: the real crash
    assert "about /data/out.csv" in settle({**missing, "files": ["/data/out.csv"]}, log)
    assert "about /data/out.csv" in settle({**raised, "message": "cannot open 'out.csv'"}, log)
    assert settle({**raised, "message": "cannot open 'without.csv'"}, log) == ""
    assert "size cap" in settle({**raised, "errnos": [27]}, log)
    assert "native code writing /data/out.csv" in settle({**raised, "written": []}, log)
    assert "read back" in settle({"outcome": "completed", "read_back": ["/data/out.csv"]}, log)
    assert settle({"outcome": "completed", "written": []}, log) == ""
    log.kept = {}


def test_a_parked_call_interrupted_by_a_signal_is_answered_when_it_restarts(jk: JailKernel) -> None:
    """A timer signal interrupts parked calls (the answer then finds no call: ENOENT); each restarts,
    is parked again and answered then, as if the first had not been. Python retries ``open`` itself,
    so 300 saves under a 0.2 ms timer get the real verdict. An ``unlink`` interrupted before the
    parent read it fails with EINTR, which Python does not retry and the real call never returns:
    that is no verdict, saying why. The storm never ends the run."""
    folder = _folder(jk, "signals")
    timer = (
        "import os, signal, tempfile, multiprocessing\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)\n"
    )
    saves = f"for i in range(300):\n    open({str(folder / 'x.txt')!r}, 'w').write(str(i))\n"
    mixed = (
        "for i in range(100):\n"
        f"    with tempfile.NamedTemporaryFile(dir={str(folder)!r}) as t:\n        t.write(b'x')\n"
        f"    os.makedirs(os.path.join({str(folder)!r}, f'd{{i % 3}}'), exist_ok=True)\n"
        "    multiprocessing.Lock()\n"
    )
    end = "signal.setitimer(signal.ITIMER_REAL, 0)\n1 / 0"
    for _ in range(3):
        result = jk.dry_run(timer + saves + end, budget_s=60)
        assert verdict(result)[:3] == ("raised", "ZeroDivisionError", 7), verdict(result)
        result = jk.dry_run(timer + mixed + end, budget_s=60)
        real = ("raised", "ZeroDivisionError", 10)
        message = result.get("message") or ""
        said = result["outcome"] == "blocked" and ("Interrupted" in message or "EINTR" in message)
        assert verdict(result)[:3] == real or said, verdict(result)
    assert _listing(folder) == {}
