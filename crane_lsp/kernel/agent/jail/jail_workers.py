"""Worker processes given a single-process world in the dry run's copy. STANDARD LIBRARY ONLY.

Joined after ``jail_threads`` into the probe's private module: top-level names carry ``_jwk_``.
Everything here runs in the forked child only, after it is confined and before the cell.

A cell that asks for worker processes (joblib's ``Parallel(n_jobs=2)``, so scikit-learn's
``permutation_importance``, ``cross_val_score(n_jobs=2)``...; ``multiprocessing.Pool``;
``concurrent.futures.ProcessPoolExecutor``) used to end the dry run: its memmapping folder in
/dev/shm, or the ``clone()`` of a worker, is a call the jail stops. The copy is one process and
must stay one, so each library is given the single-process world it already knows:

* **joblib**: its process backends (loky, multiprocessing) count one worker, as they do inside a
  daemon process or below a thread, and joblib then takes its own path, ``FallbackToBackend`` to
  the ``sequential`` backend: the tasks run in order, in the copy, and a task's exception is
  raised from the ``Parallel`` call as the real run raises it (joblib re-raises the worker's own
  exception type). Threads (``prefer="threads"``) are left as they are: they work in the copy.
* **multiprocessing.Pool** (the ``fork`` start method): its workers are threads of the copy, as in
  ``ThreadPool``, but every task and result crosses a queue that pickles it exactly as the pipe
  to a process would (``ForkingPickler``), so a lambda or a lock given to ``map`` fails as in
  the real run, a worker's exception comes back rebuilt with its remote traceback, and an
  unpicklable result is a ``MaybeEncodingError``.
* **ProcessPoolExecutor** (``fork``): ``submit`` runs the call in a thread of the copy, the call and
  its outcome pickled as between processes; a pickling failure is the future's exception.

The ``spawn`` and ``forkserver`` start methods (``forkserver`` is Python 3.14's default on Linux)
start a fresh interpreter, whose ``__main__`` is the kernel's launcher: a function or class the
notebook defined is pickled by reference to ``__main__`` and cannot be loaded there. The pools get
the same threads, and a task that refers to the notebook's ``__main__`` meets what the real worker
meets: it dies unpickling it, so a ``ProcessPoolExecutor`` breaks (``BrokenProcessPool``, as the
real one raises) and a ``multiprocessing.Pool`` loses the task and waits for it forever (the dry
run then runs out of time, as the real cell never ends). Functions of real modules run as with
``fork``.

What is not the same, and why it rarely matters for a crash: the workers share the copy's memory
(a task that changes a global is seen by the cell afterwards; in the real run only the worker's
copy changes), and joblib's tasks are not pickled (a task loky could not pickle runs here). A bare
``multiprocessing.Process`` still ends the run (``blocked``). Each world given is listed in the
verdict's notes.
"""

import contextlib as _jwk_contextlib
import sys as _jwk_sys
import types as _jwk_types

_JWK_PREFIX = "worker processes kept in the copy (a single-process world): "
_jwk_notes: list = []  # what this child gave, in order (read after the cell: ``_jwk_report``)


def _jwk_note(text):
    if text not in _jwk_notes:
        _jwk_notes.append(text)


def _jwk_report(result):
    """Add the worlds given during the cell to the verdict's notes."""
    if _jwk_notes:
        result.setdefault("notes", []).append(_JWK_PREFIX + "; ".join(_jwk_notes[:8]))


def _jwk_round_trip(obj, fresh=False):
    """``obj`` pickled and unpickled as ``multiprocessing`` sends it between processes. ``fresh``:
    the receiver is a fresh interpreter (``spawn``, ``forkserver``), where a function or class of
    the notebook's ``__main__`` cannot be loaded: ``_JwkNotInFreshWorker`` names the first."""
    from multiprocessing.reduction import ForkingPickler

    if not fresh:
        return ForkingPickler.loads(ForkingPickler.dumps(obj))
    import io

    buffer = io.BytesIO()
    _jwk_fresh_pickler()(buffer).dump(obj)
    return ForkingPickler.loads(buffer.getvalue())


_jwk_fresh_pickler_cache: list = []


def _jwk_fresh_pickler():
    """``ForkingPickler`` that stops at the first function or class of ``__main__``, made once in
    the copy (``multiprocessing.reduction`` is never imported into the kernel for it)."""
    if not _jwk_fresh_pickler_cache:
        from multiprocessing.reduction import ForkingPickler

        class Watching(ForkingPickler):
            def reducer_override(self, value):
                if isinstance(value, (type, _jwk_types.FunctionType)) and value.__module__ == "__main__":
                    raise _JwkNotInFreshWorker(value.__qualname__)
                return NotImplemented

        _jwk_fresh_pickler_cache.append(Watching)
    return _jwk_fresh_pickler_cache[0]


class _JwkNotInFreshWorker(Exception):
    """A task refers to a name of the notebook's ``__main__``: a fresh worker cannot load it."""


def _jwk_fresh(ctx):
    return getattr(ctx, "_name", None) in ("spawn", "forkserver")


# joblib ------------------------------------------------------------------------------------


def _jwk_joblib(module):
    """joblib's process backends count one worker in the copy: joblib falls back to sequential."""
    for name in ("LokyBackend", "MultiprocessingBackend"):
        cls = getattr(module, name, None)
        original = getattr(cls, "effective_n_jobs", None)
        if original is None or getattr(original, "_jwk_original", None) is not None:
            continue
        label = "loky" if name == "LokyBackend" else "multiprocessing"

        def effective_n_jobs(self, n_jobs, _original=original, _label=label):
            asked = _original(self, n_jobs)  # its own checks first (n_jobs=0 is a ValueError)
            if asked != 1 or n_jobs not in (None, 1):
                _jwk_note(
                    f"joblib Parallel(n_jobs={n_jobs}, backend '{_label}') -> its tasks ran in "
                    "sequence (joblib's own fallback to the 'sequential' backend)"
                )
            return 1

        effective_n_jobs._jwk_original = original  # type: ignore[attr-defined]
        setattr(cls, "effective_n_jobs", effective_n_jobs)  # noqa: B010


# multiprocessing.Pool -----------------------------------------------------------------------


class _JwkPickledQueue:
    """A queue between a pool and its worker threads that pickles what it carries, as the pipe
    to a worker process does (a failure is raised by ``put``, where the pool expects it). ``fresh``:
    the tasks go to fresh interpreters; one that refers to the notebook's ``__main__`` is lost, as
    the real worker dies unpickling it (and the pool waits for its result forever)."""

    def __init__(self, fresh=False):
        import queue

        self._jwk_queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._jwk_fresh = fresh

    def put(self, obj, block=True, timeout=None):
        try:
            self._jwk_queue.put(_jwk_round_trip(obj, self._jwk_fresh))
        except _JwkNotInFreshWorker as exc:
            _jwk_note(f"multiprocessing.Pool (spawn or forkserver) -> a task refers to {exc}, "
                      "defined in the notebook, which a fresh worker cannot load: the task is lost "
                      "and the pool waits for it, as the real one does")  # fmt: skip

    def get(self, block=True, timeout=None):
        return self._jwk_queue.get(block, timeout)


def _jwk_threaded(ctx):
    """Whether a pool of this context gets threads: the ``fork`` start method, whose workers would
    see the copy's modules and ``__main__`` as a thread does, and ``spawn``/``forkserver``, whose
    tasks are checked for what a fresh interpreter cannot load."""
    return getattr(ctx, "_name", None) in ("fork", "spawn", "forkserver")


def _jwk_pool(module):
    """``multiprocessing.pool.Pool`` (not its ``ThreadPool`` subclass, which overrides all of these)
    with worker threads and pickling queues, for the ``fork`` start method only. The worker handler
    waits on the change notifier's pipe alone, as ``ThreadPool``'s does (``Pool._handle_workers``
    always runs as ``Pool``'s)."""
    pool_cls = module.Pool
    if getattr(pool_cls, "_jwk_patched", False):
        return
    names = ("Process", "_setup_queues", "_get_sentinels", "_get_worker_sentinels", "_help_stuff_finish")
    original = {name: pool_cls.__dict__[name] for name in names}
    thread_pool = module.ThreadPool.__dict__

    def process(ctx, *args, **kwds):
        if not _jwk_threaded(ctx):
            return original["Process"].__func__(ctx, *args, **kwds)
        return thread_pool["Process"].__func__(ctx, *args, **kwds)

    def setup_queues(self):
        if not _jwk_threaded(self._ctx):
            return original["_setup_queues"](self)
        self._inqueue, self._outqueue = _JwkPickledQueue(_jwk_fresh(self._ctx)), _JwkPickledQueue()
        self._quick_put = self._inqueue.put
        self._quick_get = self._outqueue.get
        _jwk_note("multiprocessing.Pool -> its workers ran as threads of the copy, "
                  "each task and result pickled as between processes")  # fmt: skip
        return None

    def get_sentinels(self):
        if not isinstance(self._inqueue, _JwkPickledQueue):
            return original["_get_sentinels"](self)
        return thread_pool["_get_sentinels"](self)

    def get_worker_sentinels(workers):
        if any(not hasattr(w, "sentinel") for w in workers):  # threads have none
            return []
        return original["_get_worker_sentinels"].__func__(workers)

    def help_stuff_finish(inqueue, task_handler, size):
        if not isinstance(inqueue, _JwkPickledQueue):
            return original["_help_stuff_finish"].__func__(inqueue, task_handler, size)
        return thread_pool["_help_stuff_finish"].__func__(inqueue, task_handler, size)

    pool_cls.Process = staticmethod(process)
    pool_cls._setup_queues = setup_queues
    pool_cls._get_sentinels = get_sentinels
    pool_cls._get_worker_sentinels = staticmethod(get_worker_sentinels)
    pool_cls._help_stuff_finish = staticmethod(help_stuff_finish)
    pool_cls._jwk_patched = True


# concurrent.futures.ProcessPoolExecutor -----------------------------------------------------


def _jwk_call(fn, args, kwargs):
    """One call in a worker thread, its outcome pickled back as ``_process_worker`` sends it."""
    process = _jwk_sys.modules["concurrent.futures.process"]
    try:
        outcome = (True, fn(*args, **kwargs))
    except BaseException as exc:  # as the worker: sent back with its traceback
        outcome = (False, process._ExceptionWithTraceback(exc, exc.__traceback__))
    try:
        ok, value = _jwk_round_trip(outcome)
    except BaseException as exc:  # the result could not be sent: that error is the future's
        ok, value = _jwk_round_trip((False, process._ExceptionWithTraceback(exc, exc.__traceback__)))
    if ok:
        return value
    raise value


#: ``concurrent.futures.process``'s own words for a worker that died with calls pending
_JWK_BROKEN = "A process in the process pool was terminated abruptly while the future was running or pending."


def _jwk_executor(module):
    """``ProcessPoolExecutor.submit`` in threads of the copy (``fork``, ``spawn``, ``forkserver``)."""
    cls = module.ProcessPoolExecutor
    if getattr(cls, "_jwk_patched", False):
        return
    submit, shutdown = cls.submit, cls.shutdown

    def patched_submit(self, fn, /, *args, **kwargs):
        if not _jwk_threaded(getattr(self, "_mp_context", None)):
            return submit(self, fn, *args, **kwargs)
        with self._shutdown_lock:  # the executor's own refusals, as its submit makes them
            if self._broken:
                raise module.BrokenProcessPool(self._broken)
            if self._shutdown_thread:
                raise RuntimeError("cannot schedule new futures after shutdown")
            threads = self.__dict__.get("_jwk_threads")
            if threads is None:
                from concurrent.futures import ThreadPoolExecutor

                threads = self._jwk_threads = ThreadPoolExecutor(self._max_workers, "crane-dryrun-worker")
                _jwk_note(f"ProcessPoolExecutor -> its calls ran in threads of the copy ({self._max_workers} "
                          "asked), each call and outcome pickled as between processes")  # fmt: skip
        fresh = _jwk_fresh(getattr(self, "_mp_context", None))
        future = module._base.Future()
        try:
            if self.__dict__.get("_jwk_broken"):
                raise _JwkNotInFreshWorker(self._jwk_broken)
            call = _jwk_round_trip((fn, args, kwargs), fresh)
        except _JwkNotInFreshWorker as exc:  # the real worker dies unpickling it: the pool breaks,
            # and every future pending then fails (the calls are all submitted before a result)
            if not self.__dict__.get("_jwk_broken"):
                self._jwk_broken = str(exc)
                _jwk_note(f"ProcessPoolExecutor (spawn or forkserver) -> a call refers to {exc}, defined "
                          "in the notebook, which a fresh worker cannot load: the pool broke, as the "
                          "real one does")  # fmt: skip
            future.set_exception(module.BrokenProcessPool(_JWK_BROKEN))
            return future
        except Exception as exc:  # as the queue's feeder: the future carries the pickling error
            future.set_exception(exc)
            return future
        return threads.submit(_jwk_call, *call)

    def patched_shutdown(self, wait=True, *, cancel_futures=False):
        threads = self.__dict__.get("_jwk_threads")
        if threads is not None:
            threads.shutdown(wait, cancel_futures=cancel_futures)
        return shutdown(self, wait, cancel_futures=cancel_futures)

    cls.submit = patched_submit
    cls.shutdown = patched_shutdown
    cls._jwk_patched = True


# multiprocessing.resource_tracker ------------------------------------------------------------


def _jwk_tracker(module):
    """The ``spawn``/``forkserver`` contexts register each semaphore with a tracker process that
    unlinks it if the program dies; in the copy the semaphores are the copy's own (the jail keeps
    them there: ``jail_semaphores``) and die with it, so there is nothing to track and no tracker
    process is started. The cell sees no difference: the tracker never answers anything."""

    def ensure_running():
        return None

    def register(name, rtype):
        return None

    def unregister(name, rtype):
        return None

    for name, replacement in (("ensure_running", ensure_running), ("register", register),
                              ("unregister", unregister)):  # fmt: skip
        setattr(module, name, replacement)


# installing ---------------------------------------------------------------------------------

_JWK_WATCHED = {
    "multiprocessing.resource_tracker": _jwk_tracker,
    "joblib._parallel_backends": _jwk_joblib,
    "multiprocessing.pool": _jwk_pool,
    "concurrent.futures.process": _jwk_executor,
}


class _JwkLoader:
    """A module's own loader, then the single-process world applied to the module it made."""

    def __init__(self, loader, patch):
        self._jwk_loader = loader
        self._jwk_patch = patch

    def create_module(self, spec):
        return self._jwk_loader.create_module(spec)

    def exec_module(self, module):
        self._jwk_loader.exec_module(module)
        with _jwk_contextlib.suppress(Exception):  # the library changed shape: the jail stops its workers
            self._jwk_patch(module)


class _JwkFinder:
    """First on ``sys.meta_path`` in the copy: a watched module imported by the cell (it was not
    loaded in the kernel) gets its single-process world as soon as it is executed."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        patch = _JWK_WATCHED.get(name)
        if patch is None:
            return None
        for finder in _jwk_sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is _JwkFinder or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _JwkLoader(spec.loader, patch)
                return spec
        return None


def _jwk_single_process():
    """In the confined child, before the cell: each watched module already loaded is patched now,
    the others when the cell imports them."""
    for name, patch in _JWK_WATCHED.items():
        module = _jwk_sys.modules.get(name)
        if module is not None:
            with _jwk_contextlib.suppress(Exception):  # the library changed shape: the jail stops its workers
                patch(module)
    _jwk_sys.meta_path.insert(0, _JwkFinder)  # type: ignore[arg-type]
