"""CPU-bound work (parsing a cell, running the checks) off the event loop, and cancellable.

The checks are plain Python over a cell's syntax tree: on the event loop a 20,000-line cell would
leave the server deaf for as long as they take. ``Offload`` runs such work in one worker thread and
hands the result back to the awaiting coroutine. When that coroutine is cancelled (a newer edit of
the cell superseded it), the job is dropped if it has not started, and interrupted if it is running:
``Superseded`` is raised inside the worker thread at its next bytecode, so an outdated pass never
runs to the end and never delays the pass for the new text.

One worker thread, jobs in submission order: the server schedules the cell nearest the user first.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Superseded(BaseException):
    """Raised inside the worker thread to stop a job whose result nobody waits for any more.

    A ``BaseException``, as ``asyncio.CancelledError`` and ``KeyboardInterrupt`` are: a stop, not an
    error. The code it interrupts catches ``Exception`` to survive bad input (``analysis.parse.analyze``
    turns any failure into "nothing trusted"); caught there, a stopped parse came back as a finished
    one that trusted nothing, and a cell's SyntaxError was never shown (seen under load)."""


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    dropped: bool = False


class Offload:
    """``await offload(fn, *args)``: ``fn(*args)`` in the worker thread, interrupted on cancellation."""

    def __init__(self, name: str = "crane-checks") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._current: _Job | None = None
        self._guard = threading.Lock()  # who the running job is, against a late interrupt
        self.interrupted = 0  # jobs stopped mid-way (for tests and the status)

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        job = _Job(fn, args, loop, loop.create_future())
        self._ensure_thread()
        self._queue.put(job)
        try:
            return await asyncio.shield(job.future)  # type: ignore[no-any-return]
        except asyncio.CancelledError:
            self._drop(job)
            raise

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.start()

    def _drop(self, job: _Job) -> None:
        """Nobody waits for ``job`` any more: skip it, or stop it where it runs."""
        with self._guard:
            job.dropped = True
            if self._current is job and self._thread is not None and self._thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread.ident), ctypes.py_object(Superseded)
                )
                self.interrupted += 1

    def close(self) -> None:
        self._queue.put(None)

    def _work(self) -> None:
        while True:
            try:
                job = self._queue.get()
                if job is None:
                    return
                self._run(job)
            except Superseded:  # an interrupt that came after its job had finished: harmless
                continue

    def _run(self, job: _Job) -> None:
        while True:
            with self._guard:
                if job.dropped:
                    return
                self._current = job
            try:
                outcome: tuple[bool, Any]
                try:
                    outcome = (True, job.fn(*job.args))
                except Superseded:
                    raise
                except BaseException as exc:  # the caller sees the job's own exception
                    outcome = (False, exc)
                with self._guard:  # from here on no interrupt is aimed at this job
                    self._current = None
            except Superseded:
                self._current = None
                if job.dropped:
                    log.debug("stopped a superseded %s job", getattr(job.fn, "__name__", "?"))
                    return
                continue  # a late interrupt meant for the job before: run this one again
            job.loop.call_soon_threadsafe(_settle, job.future, outcome)
            return


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
