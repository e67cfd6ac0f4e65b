"""What a user cell's run produced, read from its execute reply and its IOPub messages: status,
execution count, outputs, the exception and the cell line it came from (``KernelLink.execute``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"(?:Cell In\s*\[(\d+)\], line (\d+))|(?:Input In \[(\d+)\].*?<cell line: (\d+)>)")
#: a ``%%time``/``%%timeit`` cell's body, compiled by the magic (IPython 9 also shows the magic's call)
_TIMED_FRAME = re.compile(r"File <timed (?:exec|eval)>:(\d+)")


@dataclass
class ExecutionResult:
    """The outcome of ``KernelLink.execute``: a normal, recorded user execution."""

    status: Literal["ok", "error", "aborted", "timeout"]
    execution_count: int | None = None
    ename: str | None = None
    evalue: str | None = None
    traceback: list[str] = field(default_factory=list)  # ANSI colour codes removed
    line: int | None = None  # 0-based line in the cell where it failed, when the traceback says
    stdout: str = ""
    stderr: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def failing_line(traceback: list[str], execution_count: int | None) -> int | None:
    """0-based line of the cell (``In[execution_count]``) from which the exception came, if shown.

    Under a cell magic the cell's frame is the magic's call on line 1; the body's own frame
    (``<timed exec>:K``, the body starting on the cell's second line) says the line: 0-based K.
    """
    text = "\n".join(strip_ansi(entry) for entry in traceback)
    for m in _CELL_FRAME.finditer(text):
        count = int(m.group(1) or m.group(3))
        line = int(m.group(2) or m.group(4))
        if execution_count is None or count == execution_count:
            timed = _TIMED_FRAME.search(text, m.end())
            if timed is not None and "run_cell_magic(" in text[m.end() : timed.start()]:
                return int(timed.group(1))
            return max(line - 1, 0)
    return None


def execution_result(
    body: dict[str, Any], messages: list[dict[str, Any]], elapsed_s: float
) -> ExecutionResult:
    """The ``ExecutionResult`` of a reply ``body`` (its content) and the request's IOPub ``messages``."""
    status = body.get("status", "error")
    count = body.get("execution_count")
    stdout = "".join(
        m["content"].get("text", "")
        for m in messages
        if m.get("msg_type") == "stream" and m["content"].get("name") == "stdout"
    )
    stderr = "".join(
        m["content"].get("text", "")
        for m in messages
        if m.get("msg_type") == "stream" and m["content"].get("name") == "stderr"
    )
    if count is None:
        count = next(
            (m["content"].get("execution_count") for m in messages if m.get("msg_type") == "execute_input"),
            None,
        )
    tb = [strip_ansi(t) for t in body.get("traceback") or []]
    if not tb:
        err = next((m["content"] for m in messages if m.get("msg_type") == "error"), None)
        if err:
            tb = [strip_ansi(t) for t in err.get("traceback") or []]
            body.setdefault("ename", err.get("ename"))
            body.setdefault("evalue", err.get("evalue"))
    return ExecutionResult(
        status=status if status in ("ok", "error", "aborted", "timeout") else "error",  # type: ignore[arg-type]
        execution_count=count if isinstance(count, int) else None,
        ename=body.get("ename"),
        evalue=body.get("evalue"),
        traceback=tb,
        line=failing_line(tb, count if isinstance(count, int) else None) if status != "ok" else None,
        stdout=stdout,
        stderr=stderr,
        elapsed_s=elapsed_s,
    )
