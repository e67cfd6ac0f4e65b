"""The built-in checks in a worker process: the server's event loop never waits for them.

A thread is not enough: ``ast.parse`` of a 20,000-line cell holds the GIL for seconds, and the
event loop with it. ``ProcessOffload`` runs module-level functions in one spawned worker process
(``await offload(fn, *args)``), reading replies with ``loop.add_reader`` so nothing blocks. A
cancelled call (a newer edit superseded it) is dropped if it has not started, and interrupted in
the worker if it runs (``Superseded`` raised in the worker's job thread, see ``offload.py``).

The worker's stdout is the server's LSP channel: it is pointed at stderr before anything runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from crane_lsp.server.offload import Superseded

log = logging.getLogger(__name__)

T = TypeVar("T")


class WorkerDied(RuntimeError):
    """The worker process exited with calls in flight (they are answered with this)."""


class ProcessOffload:
    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._proc: Any = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start the worker (it imports the checks meanwhile); calls start it when needed."""
        if self._proc is not None and self._proc.is_alive():
            return
        loop = asyncio.get_running_loop()
        context = multiprocessing.get_context("spawn")  # never fork a process with threads
        ours, theirs = context.Pipe(duplex=True)
        proc = context.Process(target=_worker_main, args=(theirs,), name="crane-checks", daemon=True)
        proc.start()
        theirs.close()
        self._conn, self._proc, self._loop = ours, proc, loop
        loop.add_reader(ours.fileno(), self._on_readable)

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        self.start()
        assert self._conn is not None and self._loop is not None
        job = next(self._ids)
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[job] = future
        self._conn.send(("call", job, fn, args))
        try:
            return await asyncio.shield(future)  # type: ignore[no-any-return]
        except asyncio.CancelledError:
            if self._pending.pop(job, None) is not None and self._conn is not None:
                with contextlib.suppress(OSError):
                    self._conn.send(("cancel", job, None, ()))
            raise

    def _on_readable(self) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            while conn.poll():
                job, ok, value = conn.recv()
                future = self._pending.pop(job, None)
                if future is None or future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    error = value if isinstance(value, BaseException) else RuntimeError(str(value))
                    future.set_exception(error)
        except (EOFError, OSError):
            self._died()

    def _died(self) -> None:
        log.warning("the checks worker process exited; starting a new one on the next check")
        if self._loop is not None and self._conn is not None:
            self._loop.remove_reader(self._conn.fileno())
            self._conn.close()
        self._conn, self._proc = None, None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(WorkerDied("the checks worker process exited"))
        self._pending.clear()

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()


# ---------------------------------------------------------------------- inside the worker


def _worker_main(conn: Connection) -> None:
    os.dup2(2, 1)  # fd 1 is the editor's LSP channel: nothing of ours may ever reach it
    sys.stdout = sys.stderr
    jobs: dict[int, tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    order: list[int] = []
    ready = threading.Condition()
    current: list[int | None] = [None]
    send_lock = threading.Lock()

    def run_one() -> None:
        with ready:
            while not order:
                ready.wait()
            job = order.pop(0)
            call = jobs.pop(job, None)
            if call is None:
                return
            current[0] = job
        try:
            result: tuple[bool, Any] = (True, call[0](*call[1]))
        except Superseded:
            raise
        except BaseException as exc:  # the caller sees the job's own exception
            result = (False, _picklable(exc))
        finally:
            with ready:  # from here on no interrupt is aimed at this job
                current[0] = None
        with send_lock:
            try:
                conn.send((job, *result))
            except Exception as exc:  # an unpicklable result: say so instead
                conn.send((job, False, RuntimeError(f"unpicklable result: {exc}")))

    def run_jobs() -> None:
        while True:
            try:
                run_one()
            except Superseded:  # a superseded job stopped (or a late interrupt): next one
                continue

    worker = threading.Thread(target=run_jobs, name="crane-check-job", daemon=True)
    worker.start()
    while True:
        try:
            kind, job, fn, args = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the server is gone
        with ready:
            if kind == "call":
                jobs[job] = (fn, args)
                order.append(job)
                ready.notify()
            elif kind == "cancel":
                jobs.pop(job, None)
                if current[0] == job and worker.ident is not None:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(worker.ident), ctypes.py_object(Superseded)
                    )


def _picklable(exc: BaseException) -> BaseException:
    import pickle

    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
