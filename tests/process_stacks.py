"""Every thread's Python stack in a test kernel's process and its children, read from outside (py-spy).

A test that times out waiting on a kernel otherwise says only that it waited. py-spy reads another
process's memory without stopping it for long or running code in it, so it also reads a kernel whose
main thread is stuck in native code, and the kernel's dry-run children.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SPY_TIMEOUT_S = 30.0
MOST_CHILDREN = 4  # a kernel's children are its dry runs' forks: a few say enough


def py_spy() -> str | None:
    """The py-spy beside this interpreter (a venv not on PATH), else on PATH; None without one."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def children_of(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(kid) for kid in path.read_text().split()]
    except (OSError, ValueError):
        return []


def dump(pid: int) -> str:
    """One process's stacks as py-spy prints them, or why there are none."""
    spy = py_spy()
    if spy is None:
        return "(no py-spy here to read its stacks)"
    try:
        done = subprocess.run(
            [spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=SPY_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(py-spy failed: {exc})"
    return (done.stdout or done.stderr).strip()


def python_stacks(pid: int) -> str:
    """The kernel's stacks and its first children's, as text to append to a timeout's message."""
    parts = [f"\n--- stacks of the kernel process {pid} ---\n{dump(pid)}"]
    for child in children_of(pid)[:MOST_CHILDREN]:
        parts.append(f"--- stacks of its child {child} ---\n{dump(child)}")
    return "\n".join(parts)
