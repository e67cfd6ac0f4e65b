"""The shortened dry run, in the kernel: STANDARD LIBRARY ONLY, joined after ``shorten_sample.py``.

A dry run asked with ``payload["shorten"]`` gets a helper thread beside the full run. When the full
run has not answered ``after_s`` seconds in, the helper rewrites the cell (``for ... in range(n)``
loops and iteration keywords such as ``n_init=``/``epochs=`` go through the child's capping helpers,
``shorten_sample.py``), forks a fresh jailed child that samples the data the cell names and runs the
rewrite, and, when that run raises, a second child on a DIFFERENT sample (other rows, another size,
one more iteration per loop) to see whether the crash hinges on the sample. The full run wins
whenever it answers within its budget; while typing (``stop_full``) two shortened runs that raise
alike, of a kind that cannot hinge on the sample (``shorten_rules.py``), end the full run early.

Nothing here changes the kernel: the rewrite is compiled from the cell's text, the sampling and the
capping happen only in the forked children, whose whole process groups die at the deadline.
"""

import os as _sh_os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.dryrun.dryrun import (
        _SB_FILENAME,
        _sb_cold,
        _sb_contextlib,
        _sb_sys,
        _sb_tf_started,
        _sb_time,
        _sb_transform,
    )
    from crane_lsp.kernel.agent.dryrun_wire import SHORTENED_RUN_KEYS
    from crane_lsp.kernel.agent.shorten.shorten_flow import _shf_slow_part
    from crane_lsp.kernel.agent.shorten.shorten_rules import _shr_alike, _shr_doubt
    from crane_lsp.kernel.agent.shorten.shorten_sample import (
        _SHS_CAP,
        _SHS_CAPS,
        _SHS_RANGE,
        _SHS_WHILE,
        _SHS_WHILE_START,
        _shs_code_names,
        _shs_is_data,
    )

#: the two shortened runs: rows wanted (odd sizes, unlikely to be confused with a real dimension in
#: an error message), the sample's seed, and iterations kept per shortened loop
_SH_RUNS = ({"rows": 263, "seed": 0, "cap": 2}, {"rows": 391, "seed": 1, "cap": 3})
_SH_MIN_LEFT_S = 0.2  # no shortened run is started with less time than this left
_SH_NICE = 3  # added to the dry run's own niceness (10) while the full run still runs: it gets more CPU
_SH_WHERE_WAIT_S = 0.3  # how long the helper waits for the full run's first report of its line


class _ShHelper:
    """The helper thread beside one full dry run: its two cancel pipes and what it observed."""

    def __init__(self, payload, compiled, deadline):
        import _thread

        self.payload, self.compiled, self.deadline = payload, compiled, deadline
        options = payload["shorten"]
        budget = float(payload.get("budget_s", 3.0))
        self.after_s = float(options.get("after_s", min(0.5, budget / 4)))
        self.stop_full = bool(options.get("stop_full", True))
        # the client's reason to expect the full run to overrun (the same cell's full run did before):
        # it is stopped as soon as the shortened runs start, which then have the CPU to themselves
        self.skip_full = options.get("skip_full") or None
        if self.skip_full:
            self.after_s = 0.0
        self.full_cancel = _sh_os.pipe()  # written: the full run is superseded
        self.own_cancel = _sh_os.pipe()  # written: the full run answered, the helper stops
        self.second_cancel = _sh_os.pipe()  # written: the second sample is not needed
        # The pipes are closed by the last of their users (``finish`` and the helper threads): a
        # straggler that outlives ``finish`` (a slow fork or teardown on a busy machine) must never
        # poll or write a descriptor number the kernel has meanwhile given to something else.
        self.pipe_lock = _thread.allocate_lock()
        self.pipe_users = 2  # finish() and the helper thread; the second sample's thread adds itself
        self.runs: list[dict[str, Any]] = []
        self.error = None
        self.skipped = None  # why no shortened run was started
        self.code = None  # the rewrite, compiled once for both samples
        self.superseded = False
        self.where: dict[str, Any] = {}  # the line the full run is on, as its child reports it
        payload["_where"] = self.where
        payload["_report_where"] = self.after_s
        self.done = _thread.allocate_lock()
        self.done.acquire()
        _thread.start_new_thread(self._main, ())

    def _wait_cancelled(self, seconds):
        import select

        poller = select.poll()
        poller.register(self.own_cancel[0], select.POLLIN)
        return bool(poller.poll(max(0, int(seconds * 1000))))

    def _main(self):
        """Both samples side by side (a crash is confirmed in the time of one run); the second is
        stopped as soon as the first does not raise."""
        import _thread

        try:
            if self._wait_cancelled(self.after_s):
                return
            if not self.skip_full and "line" not in self.where:  # its first report may be on its way
                self._wait_cancelled(_SH_WHERE_WAIT_S)
            text = _sb_transform(self.payload["source"])[0]
            self.plan_extra = _shf_slow_part(text, self.where.get("line"))
            self.code, inserted = _sh_compile(self.payload["source"])
            if self.code is None:
                self.skipped = "the cell could not be rewritten"
                return
            if not inserted and not _sh_names_data(self.code, self.compiled[1]):
                self.skipped = "nothing to shorten: the cell names no large data and has no loop to cut"
                return
            if self.skip_full:  # only now: a cell with nothing to shorten keeps its full run
                self.superseded = True
                self._signal(self.full_cancel)
            second: dict[str, Any] = {}
            second_done = _thread.allocate_lock()
            second_done.acquire()
            self._hold_pipes()
            try:
                _thread.start_new_thread(self._second, (second, second_done))
            except BaseException:
                self._release_pipes()
                raise
            first = self._run(_SH_RUNS[0], self.own_cancel[0])
            if first is None or first.get("outcome") != "raised":
                self._cancel_second()
            second_done.acquire(timeout=max(1.0, self.deadline - _sb_time.monotonic() + 5.0))
            if first is not None:
                self.runs.append(first)
                if first.get("outcome") == "raised" and second.get("run") is not None:
                    self.runs.append(second["run"])
            if self.stop_full and self._trusted():
                self.superseded = True
                self._signal(self.full_cancel)
        except BaseException as exc:  # never in the kernel's way: the full run's verdict stands
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.release()
            self._release_pipes()

    def _hold_pipes(self):
        with self.pipe_lock:
            self.pipe_users += 1

    def _release_pipes(self):
        """One user is done with the pipes; the last one closes them."""
        with self.pipe_lock:
            self.pipe_users -= 1
            last = self.pipe_users == 0
        if last:
            for fd in (*self.full_cancel, *self.own_cancel, *self.second_cancel):
                with _sb_contextlib.suppress(OSError):
                    _sh_os.close(fd)

    def _signal(self, pipe):
        """Wake whoever polls ``pipe`` (the caller holds the pipes: they are open)."""
        with _sb_contextlib.suppress(OSError):
            _sh_os.write(pipe[1], b"x")

    def _trusted(self):
        """Two runs that raised alike, of a kind that cannot hinge on the sample (shorten_rules.py):
        only then may they end the full run early (which might still have observed it whole)."""
        if len(self.runs) < 2 or not _shr_alike(*self.runs):
            return False
        try:
            return _shr_doubt(self.runs[0], self.runs[1], self.payload["source"]) is None
        except Exception:
            return False

    def _second(self, box, done):
        try:
            box["run"] = self._run(_SH_RUNS[1], self.second_cancel[0])
        except BaseException as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            done.release()
            self._release_pipes()

    def _cancel_second(self):
        self._signal(self.second_cancel)

    def _run(self, plan, cancel_fd):
        left = self.deadline - _sb_time.monotonic()
        if left < _SH_MIN_LEFT_S or self._wait_cancelled(0):
            return None
        code = self.code
        payload = {
            key: self.payload[key]
            for key in ("source", "memory_mb", "async_mode", "_cell_magic", "measure_memory")
            if key in self.payload
        }
        # no failing-line facts (failfacts.py): they would describe the sample
        plan = {**plan, **(getattr(self, "plan_extra", None) or {})}
        payload.update(budget_s=round(left, 3), _shorten=plan, _cancel_fd=cancel_fd, facts=False)
        if not self.superseded:  # the full run goes on: it keeps the CPU it needs to finish
            payload["_nice"] = _SH_NICE
        sink: dict[str, Any] = {}  # what it shortened, said before it ran the cell
        payload["_where"] = sink
        result = _sb_cold(payload, _sb_time.perf_counter(), (code, self.compiled[1]))
        data = dict(result._data)
        if "shortened" not in data and sink.get("shortened"):  # it hung: still say what it shortened
            data["shortened"] = sink["shortened"]
        data["plan"] = {k: v for k, v in plan.items() if k != "where"}  # where: in ``shortened``
        if data.get("outcome") == "superseded":
            return None
        return {k: data[k] for k in SHORTENED_RUN_KEYS if k in data}  # the full run's bookkeeping stays

    def finish(self, result):
        """The full run's verdict, with the shortened runs when the full one did not answer."""
        data = result._data if result is not None else {}  # None: the full run was interrupted
        outcome = data.get("outcome")
        if outcome not in ("timeout", "superseded"):
            self._signal(self.own_cancel)  # the full run answered: stop the helper
            self._cancel_second()
        if not self.done.acquire(timeout=max(1.0, self.deadline - _sb_time.monotonic() + 5.0)):
            # a straggler (its fork or teardown is slow): told to stop, it closes the pipes at its end
            self._signal(self.own_cancel)
            self._cancel_second()
        self._release_pipes()
        if result is None:
            return None
        if outcome == "superseded" and self.skip_full:
            data.update(outcome="timeout", message=f"not run: {self.skip_full}")
        elif outcome == "superseded":
            data.update(outcome="timeout", message="stopped early: two shortened runs raised alike")
        if data.get("outcome") == "timeout":
            tf_started = _sb_tf_started()  # said at once: a compiled function may wait forever in a copy
            shortened = {
                "runs": self.runs,
                "after_s": self.after_s,
                "error": self.error,
                "skipped": self.skipped,
                "skipped_full": self.skip_full if outcome == "superseded" else None,
                "tf_started": tf_started,
            }
            data["shortened"] = shortened
        return result


def _sh_begin(payload, compiled):
    """A helper for ``payload`` when it asks for shortening, else None (never raises)."""
    if not payload.get("shorten") or payload.get("_shorten"):
        return None
    try:
        budget = float(payload.get("budget_s", 3.0))
        helper = _ShHelper(payload, compiled, _sb_time.monotonic() + budget)
    except Exception:
        return None
    payload["_cancel_fd"] = helper.full_cancel[0]
    return helper


def _sh_compile(source):
    """The cell's rewrite for a shortened run and how many loops/keywords it routes through the
    child's helpers, or ``(None, 0)``."""
    ast = _sb_sys.modules.get("ast")  # IPython has it; nothing new is imported into the kernel
    if ast is None:
        return None, 0
    try:
        text, _namespace = _sb_transform(source)
        rewrite = _ShRewrite(ast)
        tree = rewrite.visit(ast.parse(text, _SB_FILENAME))
        ast.fix_missing_locations(tree)
        return compile(tree, _SB_FILENAME, "exec", 0x2000), rewrite.inserted  # top-level await allowed
    except Exception:
        return None, 0


def _sh_names_data(code, namespace):
    """Whether the cell names data a sample could shorten, judged by TYPE alone (in the kernel no
    attribute of a user object is read): arrays, frames, tensors, loaders, datasets, sparse
    matrices, long lists, and small containers of them. A cell that names none and has no loop to
    cut (an ``import torch``) gets no shortened run: it would only slow the full one down."""
    for name in _shs_code_names(code):
        with _sb_contextlib.suppress(Exception):
            if name in namespace and _shs_is_data(namespace[name]):
                return True
    return False


def _sh_rewriter_base():
    ast = _sb_sys.modules.get("ast")
    return ast.NodeTransformer if ast is not None else object


class _ShRewrite(_sh_rewriter_base()):  # type: ignore[misc]
    """``for x in range(n)`` (also inside ``tqdm(...)``/``enumerate(...)``) goes through the child's
    range helper; ``n_init=50``-like keywords through its cap helper. Lines stay the cell's."""

    def __init__(self, ast):
        self.ast = ast
        self.inserted = 0  # loops and keywords routed through the child's helpers
        self.depth = 0  # loops around the node being visited

    def _helper_call(self, name, args, node):
        ast = self.ast
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])
        return ast.copy_location(call, node)

    def _is_range(self, node):
        ast = self.ast
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"

    def _wrap_loop_iter(self, node):
        """The loop's range through the helper; a nested loop says so (it is cut even when it runs
        over the sampled rows: a pairwise loop over a sample is still quadratic)."""
        ast = self.ast
        nested = self.depth > 0
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        args = [ast.Constant(value=node.lineno), ast.Constant(value=nested)]
        target = node.iter
        if self._is_range(target):
            node.iter = self._helper_call(_SHS_RANGE, [target, *args], target)
            self.inserted += 1
        elif isinstance(target, ast.Call) and target.args and self._is_range(target.args[0]):
            target.args[0] = self._helper_call(_SHS_RANGE, [target.args[0], *args], target.args[0])
            self.inserted += 1
        return node

    def visit_For(self, node):
        return self._wrap_loop_iter(node)

    def visit_While(self, node):
        """``while epoch < EPOCHS:`` (a comparison, a counter) stops after its first iterations: the
        test goes through the child's while helper, reset by a call just before the loop."""
        ast = self.ast
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        test = node.test
        counted = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.NotEq)
        if not isinstance(test, ast.Compare) or not all(isinstance(op, counted) for op in test.ops):
            return node
        line = ast.Constant(value=node.lineno)
        node.test = self._helper_call(_SHS_WHILE, [test, line], test)
        start = ast.Expr(value=self._helper_call(_SHS_WHILE_START, [line], node))
        self.inserted += 1
        return [ast.copy_location(start, node), node]

    def _visit_comprehensions(self, node):
        """``[f(i) for i in range(N)]``: its ranges through the child's range helper, which cuts
        only long ones (``_SHS_COMPREHENSION_MIN``: a comprehension over a few columns runs whole)."""
        ast = self.ast
        nested = self.depth > 0
        for generator in node.generators:
            if self._is_range(generator.iter):
                where = [generator.iter.lineno, nested, True]  # line, nested, a comprehension
                args = [ast.Constant(value=value) for value in where]
                generator.iter = self._helper_call(_SHS_RANGE, [generator.iter, *args], generator.iter)
                self.inserted += 1
            nested = True  # a second generator runs inside the first
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    def visit_ListComp(self, node):
        return self._visit_comprehensions(node)

    def visit_SetComp(self, node):
        return self._visit_comprehensions(node)

    def visit_DictComp(self, node):
        return self._visit_comprehensions(node)

    def visit_GeneratorExp(self, node):
        return self._visit_comprehensions(node)

    def visit_AsyncFor(self, node):
        return self._wrap_loop_iter(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        ast = self.ast
        for keyword in node.keywords:
            if keyword.arg in _SHS_CAPS:
                args = [keyword.value, ast.Constant(value=keyword.arg), ast.Constant(value=node.lineno)]
                keyword.value = self._helper_call(_SHS_CAP, args, keyword.value)
                self.inserted += 1
        return node
