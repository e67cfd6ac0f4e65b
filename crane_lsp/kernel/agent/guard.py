"""Budgets and guards: the clock every summary checks, the alarm around user code, RNG restore.

A summary may run user code only where that is the object's nature (a torch ``Dataset``'s
``__len__``/``__getitem__``); ``_guarded`` runs it under a SIGALRM at the object deadline on the
main thread, and ``_restore_rng`` puts every RNG (Python, NumPy, torch, and those the object holds)
back as it was, so probing never moves the user's random streams.
"""

import contextlib
import signal as _signal
import sys as _sys
import threading as _threading
import time as _time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined before this module in the kernel (probe_install.SOURCES)
    from crane_lsp.kernel.agent.safe import (
        _MISSING,
        _cls_name,
        _exc_text,
        _instance_dict,
        _isa,
        _mro_names,
        _trunc,
    )
    from crane_lsp.kernel.agent.wire import DEADLINE


class _JSONResult:
    """Renders as ``application/json``; ``__repr__`` stays cheap (IPython also asks for text/plain)."""

    def __init__(self, data):
        self._data = data

    def _repr_json_(self):
        return self._data

    def __repr__(self):
        return "<crane snapshot>"


class _Deadline(BaseException):
    """Out of time. A BaseException, so user code's ``except Exception`` cannot swallow the alarm."""


class _SandboxBlocked(BaseException):
    """The jail blocked a call in the dry run. A BaseException, so a cell's ``except Exception``
    cannot swallow it."""


class _Clock:
    def __init__(self, request_s, object_s):
        self.start = _time.monotonic()
        self.request_end = self.start + request_s
        self.object_s = object_s
        self.object_end = self.request_end
        self.hit = False

    def begin_object(self):
        self.object_end = min(_time.monotonic() + self.object_s, self.request_end)

    def left(self):
        return self.object_end - _time.monotonic()

    def check(self):
        if _time.monotonic() >= self.object_end:
            self.hit = True
            raise _Deadline()

    def request_over(self):
        return _time.monotonic() >= self.request_end


_GUARD_ACTIVE = [False]


def _guarded(clock, fn, *args):
    """Run possibly-user code; on the main thread a SIGALRM interrupts it at the object deadline."""
    clock.check()
    if (
        _GUARD_ACTIVE[0]
        or _threading.current_thread() is not _threading.main_thread()
        or _signal.getitimer(_signal.ITIMER_REAL)[0] > 0  # the user's own alarm is pending: leave it be
    ):
        return fn(*args)

    def _on_alarm(signum, frame):
        raise _Deadline()

    old = _signal.signal(_signal.SIGALRM, _on_alarm)
    _GUARD_ACTIVE[0] = True
    try:
        _signal.setitimer(_signal.ITIMER_REAL, max(clock.left(), 0.001))
        try:
            return fn(*args)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    except _Deadline:
        clock.hit = True
        raise
    finally:
        _GUARD_ACTIVE[0] = False
        _signal.signal(_signal.SIGALRM, old)


def _own_generator_state(v, states):
    """Save the state of an RNG object a dataset holds (random.Random, NumPy Generator/RandomState, torch)."""
    names = _mro_names(v)
    if "random.Random" in names:
        st = v.getstate()
        states.append(lambda: v.setstate(st))
    elif _isa(v, "np_generator"):
        bit = v.bit_generator
        bst = bit.state
        states.append(lambda: setattr(bit, "state", bst))
    elif _isa(v, "np_random_state"):
        rst = v.get_state(legacy=False)
        states.append(lambda: v.set_state(rst))
    elif _isa(v, "torch_generator"):
        gst = v.get_state()
        states.append(lambda: v.set_state(gst))


def _restore_rng(held=()):
    """Capture Python, NumPy and torch RNG states (global and ``held`` objects); returns the restorer."""
    states: list = []
    for v in held:
        with contextlib.suppress(Exception):
            _own_generator_state(v, states)
    rnd = _sys.modules.get("random")
    if rnd is not None:
        st = rnd.getstate()
        states.append(lambda: rnd.setstate(st))
    np = _sys.modules.get("numpy")
    if np is not None:
        nst = np.random.get_state(legacy=False)
        states.append(lambda: np.random.set_state(nst))
    torch = _sys.modules.get("torch")
    if torch is not None:
        tst = torch.get_rng_state()
        states.append(lambda: torch.set_rng_state(tst))
        cuda = _sys.modules.get("torch.cuda")
        if cuda is not None and cuda.is_initialized():
            cst = cuda.get_rng_state_all()
            states.append(lambda: cuda.set_rng_state_all(cst))

    def restore():
        for fn in states:
            fn()

    return restore


@contextlib.contextmanager
def _left_as_found(obj):
    """Around user code run on ``obj``: every RNG (global and those ``obj`` holds) and ``obj.__dict__``
    are put back as found, so a dataset's ``__getitem__`` cannot move a random stream or a cursor."""
    saved = _instance_dict(obj)
    saved = dict(saved) if saved is not None else None
    restore = _restore_rng(list(saved.values()) if saved else ())
    try:
        yield
    finally:
        restore()
        d = _instance_dict(obj) if saved is not None else None
        if d is not None and saved is not None and _changed(d, saved):
            d.clear()
            d.update(saved)


def _changed(d, saved):
    """By identity, not ``==``: comparing tensors or user objects would run their code."""
    return len(d) != len(saved) or any(d.get(k, _MISSING) is not v for k, v in saved.items())


def _field(summary, clock, name, fn, *args):
    """Fill ``summary[name]`` from ``fn``; a deadline or an exception leaves it unknown with a reason."""
    try:
        clock.check()
        v = fn(*args)
    except _Deadline:
        summary["error"] = DEADLINE
        return
    except RecursionError:
        summary.setdefault("error", name + ": RecursionError")
        return
    except Exception as exc:
        summary.setdefault("error", name + ": " + _cls_name(type(exc)) + ": " + _trunc(_exc_text(exc), 120))
        return
    if v is not None:
        summary[name] = v
