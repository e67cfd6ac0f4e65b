"""Undo the last cell: the client side of ``kernel/agent/undo/`` (issue 37), for the server's
``crane.undoLastCell`` and for scripts.

The kernel holds a jailed copy of its state from the start of each cell while undo is on
(``undo_configure``); this module turns it on, asks what the last cell changed, and asks for the
undo. Every answer is a typed model: the kernel's JSON validated here, never read from a sentence.

From a script, with a kernel's connection file::

    from crane_lsp.undo import configure_sync, undo_last_cell_sync
    configure_sync("kernel-123.json")          # before the cell
    ...                                        # the cell runs (any client)
    print(undo_last_cell_sync("kernel-123.json"))
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from crane_lsp.settings import Settings

if TYPE_CHECKING:
    from crane_lsp.layers import ProbeCaller

log = logging.getLogger(__name__)


class KeptName(BaseModel):
    """A name the undo could not bring back, and why (it stays as the cell left it)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    reason: str


class UndoAnswer(BaseModel):
    """What ``undo_last_cell`` did, or ``refused`` (one line) with nothing changed."""

    model_config = ConfigDict(extra="ignore")
    refused: str | None = None
    cell: int | None = Field(default=None, description="the undone cell's execution count (In [n])")
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list, description="names the cell created, deleted")
    kept: list[KeptName] = Field(default_factory=list)
    ms: float | None = None
    phases_ms: dict[str, float] = Field(default_factory=dict, description="fingerprints, fetch, apply")
    direct: list[str] = Field(default_factory=list, description="arrays written back from the copy's memory")


class CellChanges(BaseModel):
    """What the last cell changed in the kernel's namespace, or ``refused``."""

    model_config = ConfigDict(extra="ignore")
    refused: str | None = None
    cell: int | None = None
    bound: list[str] = Field(default_factory=list)
    rebound: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    mutated: list[str] = Field(default_factory=list)

    def sentence(self, line: int | None = None) -> str:
        """In words: "before raising at line 7 the cell rebound `model` and mutated `df` in place"."""
        parts = []
        for verb, names, tail in (
            ("bound", self.bound, ""),
            ("rebound", self.rebound, ""),
            ("deleted", self.deleted, ""),
            ("mutated", self.mutated, " in place"),
        ):
            if names:
                parts.append(f"{verb} " + ", ".join(f"`{n}`" for n in names[:5]) + tail)
        if not parts:
            return "the cell changed no name"
        head = f"before raising at line {line} the cell " if line is not None else "the cell "
        return head + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def configure_payload(settings: Settings) -> dict[str, Any]:
    """What ``undo_configure`` is sent for ``settings`` (the copy is forked as the dry run's is)."""
    return {
        "on": settings.undo,
        "reserve_mb": settings.undo_reserve_mb,
        "hold_s": settings.undo_hold_s,
        "fork": {"memory_mb": settings.dry_run_memory_mb},
    }


async def configure(link: ProbeCaller, settings: Settings) -> dict[str, Any]:
    """Turn undo on or off in the kernel behind ``link`` (idempotent)."""
    return await link.call("undo_configure", configure_payload(settings), timeout=5)


#: notebook URI -> what its kernel confirmed (link, its restarts, undo on, settings revision); a
#: request in flight is in ``_ASKING`` and counts only once it succeeds
_CONFIGURED: dict[str, tuple[int, Any, bool, int]] = {}
_ASKING: dict[str, tuple[int, Any, bool, int]] = {}


def configure_for(
    uri: str,
    link: Any,
    settings: Settings,
    rev: int,
    background: Callable[[Coroutine[Any, Any, Any]], None],
) -> None:
    """Tell the kernel behind ``link`` (the notebook ``uri``'s) whether to hold copies, in the
    background, once per link, kernel process and settings revision (the server calls it when it binds
    the kernel, where the dry run prepares its child, and after each cell while undo is on). A request
    that fails (a cell was running: Run All right after opening) is forgotten, so the next call asks
    again. Never raises."""
    if link is None:
        return
    key = (id(link), getattr(link, "restarts", None), settings.undo, rev)
    last = _CONFIGURED.get(uri)
    if key in (last, _ASKING.get(uri)):
        return
    if not settings.undo and (last is None or not last[2]):  # off, and never turned on there
        _CONFIGURED[uri] = key
        return
    _ASKING[uri] = key
    background(_configure_quietly(uri, key, link, settings))


async def _configure_quietly(
    uri: str, key: tuple[int, Any, bool, int], link: ProbeCaller, settings: Settings
) -> None:
    try:
        await configure(link, settings)
        _CONFIGURED[uri] = key
    except Exception as exc:  # a busy or gone kernel: the next call asks again
        log.debug("undo configure failed: %s", exc)
    finally:
        if _ASKING.get(uri) == key:
            del _ASKING[uri]


async def changes(link: ProbeCaller, expect_count: int | None = None) -> CellChanges:
    """What the last cell (``expect_count``: the one that must be last) changed; changes nothing."""
    payload = {"expect_count": expect_count} if expect_count is not None else {}
    return CellChanges.model_validate(await link.call("undo_changes", payload, timeout=15))


#: Read in the kernel by a silent ``user_expressions`` request, never running user code: for each frame
#: of the last exception IPython showed (``sys.last_traceback``), the execution count of the cell the
#: frame's code came from (IPython's compiler maps a cell's file name to it) and the frame's line.
_RAISED_AT_EXPRESSION = (
    "__import__('json').dumps([[getattr(__import__('IPython').get_ipython().compile, '_filename_map', {})"
    ".get(f.f_code.co_filename), n] for f, n in __import__('traceback').walk_tb("
    "getattr(__import__('sys'), 'last_traceback', None))])"
)


def raised_line(frames: list[Any], count: int) -> int | None:
    """The 1-based line of cell ``[count]`` from which its exception came (its outermost frame in that
    cell: the cell's own statement), or None when the last exception shown is not that cell's."""
    for frame in frames:
        if isinstance(frame, list) and len(frame) == 2 and frame[0] == count and isinstance(frame[1], int):
            return frame[1]
    return None


async def raised_at(link: Any, count: int, timeout: float = 5.0) -> int | None:
    """The line at which cell ``[count]`` raised when the kernel reported an error for that run (the
    exception IPython showed last is from that cell), else None. Execution counts are unique within a
    kernel process, so a traceback left by an earlier cell never answers for this one. One silent
    request on the main shell, only when the kernel is idle: a busy kernel raises ``KernelBusy`` (the
    server's own check may be in flight for a moment; callers wait with ``when_idle``); any other
    failure answers None."""
    import ast
    import json

    from crane_lsp.kernel.link import KernelBusy

    try:
        result = (await link.evaluate({"r": _RAISED_AT_EXPRESSION}, timeout)).get("r", {})
        if result.get("status") != "ok":
            return None
        frames = json.loads(ast.literal_eval(result["data"]["text/plain"]))
    except KernelBusy:
        raise
    except Exception as exc:
        log.debug("where the cell raised is unknown: %s", exc)
        return None
    return raised_line(frames, count) if isinstance(frames, list) else None


def crash_line(changes: CellChanges, line: int) -> str:
    """The one line a crashed cell's changes read as: "Before raising at line 7 the cell rebound
    `model` and mutated `df` in place. Undo: command crane.undoLastCell." """
    sentence = changes.sentence(line)
    changed = changes.bound or changes.rebound or changes.deleted or changes.mutated
    return sentence[:1].upper() + sentence[1:] + (". Undo: command crane.undoLastCell." if changed else ".")


async def undo(link: ProbeCaller, expect_count: int | None = None, timeout_s: float = 60.0) -> UndoAnswer:
    """Undo the last cell (``expect_count``: the one that must be last, else a refusal)."""
    payload: dict[str, Any] = {"timeout_s": timeout_s}
    if expect_count is not None:
        payload["expect_count"] = expect_count
    return UndoAnswer.model_validate(await link.call("undo_last_cell", payload, timeout=timeout_s + 5))


async def _with_link(connection_file: str | Path, work: Any) -> Any:
    from crane_lsp.kernel.link import KernelLink

    link = await KernelLink.connect(connection_file)
    try:
        return await work(link)
    finally:
        await link.close()


def configure_sync(connection_file: str | Path, settings: Settings | None = None) -> dict[str, Any]:
    """Turn undo on (``Settings(undo=True)`` unless given) in the kernel of ``connection_file``."""
    chosen = settings if settings is not None else Settings(undo=True)
    return asyncio.run(_with_link(connection_file, lambda link: configure(link, chosen)))  # type: ignore[no-any-return]


def undo_last_cell_sync(connection_file: str | Path, expect_count: int | None = None) -> UndoAnswer:
    """Undo the last cell in the kernel of ``connection_file``."""
    return asyncio.run(_with_link(connection_file, lambda link: undo(link, expect_count)))  # type: ignore[no-any-return]


def changes_sync(connection_file: str | Path, expect_count: int | None = None) -> CellChanges:
    """What the last cell changed in the kernel of ``connection_file``."""
    return asyncio.run(_with_link(connection_file, lambda link: changes(link, expect_count)))  # type: ignore[no-any-return]
