"""The cell's execution in the dry-run child, and a preview's capture around it ("Try in sandbox",
issue 37, docs/undo.md): STANDARD LIBRARY ONLY, joined after ``undo_print.py``, before ``dryrun.py``.

``_pv_execute`` runs the compiled cell as the kernel would. With ``payload["preview"]`` the child
also keeps what the user would see and what the cell would leave: its namespace is fingerprinted
before the cell (``_ufp_all``, undo_print.py: cheap, no user code); ``sys.stdout``/``sys.stderr``
and the text of what it displays go to a bounded sink; the value of its last expression is kept as
IPython would show it (its ``text/plain``); after the run (also after a raise) the fingerprints
again give the names it bound, rebound, deleted and changed in place, with the facts to say how
(type, shape, length, columns before and after). All of it in the jailed copy: the kernel is never
touched. What C code writes to file descriptors (``/dev/null`` in the child) is not seen.
"""

import ast as _pv_ast
import contextlib as _pv_contextlib
import io as _pv_io
import sys as _pv_sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.undo.undo_print import _ufp_all, _ufp_diff

_PV_STDOUT = 20_000  # characters of output kept (the first ones)
_PV_RESULT = 5_000  # characters of the last expression's text kept
_PV_NAMES = 50  # changed names described; the rest are counted
_PV_VALUE = "__crane_preview_value__"  # where the child keeps the last expression's value (a dunder:
# never a user name for the fingerprints)
_PV_FACTS = ("type", "shape", "len", "columns", "dtype")


class _PvSink(_pv_io.TextIOBase):
    """The child's ``sys.stdout`` and ``sys.stderr`` during a preview: the first ``limit`` characters."""

    encoding = "utf-8"  # read by code that encodes before it writes

    def __init__(self, limit):
        super().__init__()
        self._pv_parts = []
        self._pv_size = 0
        self._pv_limit = limit
        self.cut = False

    def write(self, text):
        text = str(text)
        room = self._pv_limit - self._pv_size
        if len(text) > room:
            self.cut = True
        kept = text[: max(room, 0)]
        if kept:
            self._pv_parts.append(kept)
            self._pv_size += len(kept)
        return len(text)

    def writable(self):
        return True

    def isatty(self):
        return False

    def text(self):
        return "".join(self._pv_parts)


def _pv_run(code, namespace, async_mode):
    """Run the compiled cell as the kernel would: a top-level ``await`` is awaited, and where the
    kernel runs its cells inside an event loop, so does the child (``asyncio.run`` then raises)."""
    if not async_mode and not code.co_flags & 0x80:  # CO_COROUTINE: the cell has a top-level await
        exec(code, namespace)
        return
    import asyncio

    async def _cell():
        value = eval(code, namespace)
        if asyncio.iscoroutine(value):
            await value

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(_cell())


def _pv_execute(code, namespace, payload, result):
    """The cell, run in the child (``_sb_run``); a preview (``payload["preview"]``) also puts what it
    printed, its value and what it changed into ``result["preview"]``, even when it raised."""
    options = payload.get("preview")
    if not options:
        _pv_run(code, namespace, payload.get("async_mode", False))
        return
    options = options if type(options) is dict else {}
    ipython = _pv_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    preview = result["preview"] = {}
    before = _ufp_all(namespace, shell)
    code, valued = _pv_code(code, payload["source"], shell)
    sink = _PvSink(int(options.get("stdout_chars", _PV_STDOUT)))
    saved = _pv_sys.stdout, _pv_sys.stderr
    _pv_sys.stdout = _pv_sys.stderr = sink
    _pv_displays(shell, sink)
    try:
        _pv_run(code, namespace, payload.get("async_mode", False))
        value = namespace.pop(_PV_VALUE, None) if valued else None
        if value is not None:  # as IPython: a None value shows nothing
            text = _pv_text(value, shell)
            limit = int(options.get("result_chars", _PV_RESULT))
            preview["result"] = text[:limit]
            if len(text) > limit:
                preview["result_cut"] = True
    finally:
        _pv_sys.stdout, _pv_sys.stderr = saved
        preview["stdout"] = sink.text()
        if sink.cut:
            preview["stdout_cut"] = True
        namespace.pop(_PV_VALUE, None)
        try:
            preview.update(_pv_changes(before, _ufp_all(namespace, shell)))
        except Exception as exc:  # never the cell's verdict: the preview says it has no diff
            preview["error"] = f"no diff: {type(exc).__name__}: {exc}"[:300]


def _pv_code(code, source, shell):
    """``(code, valued)``: the cell compiled again (as ``code`` was: its file name, top-level await)
    with its last expression's value kept in ``_PV_VALUE``, line numbers unchanged, as IPython would
    show it; ``code`` itself when the cell ends otherwise (a statement, a ``;``) or cannot be
    compiled again. Plain Python with no blank first line is parsed as it is (IPython's transform
    would keep it, and costs seconds on a long cell); anything else (magics, ``!cmd``) is transformed
    first, as ``_sb_compile`` did."""
    try:
        text = source
        tree = None
        if shell is None or (source[:1].strip() and not getattr(shell, "input_transformers_post", None)):
            with _pv_contextlib.suppress(SyntaxError, ValueError):
                tree = _pv_ast.parse(text)
        if tree is None and shell is not None:
            text = shell.transform_cell(source)
            tree = _pv_ast.parse(text)
        last = tree.body[-1] if tree is not None and tree.body else None
        if tree is None or type(last) is not _pv_ast.Expr or text.rstrip().endswith(";"):
            return code, False
        keep = _pv_ast.Assign(targets=[_pv_ast.Name(_PV_VALUE, _pv_ast.Store())], value=last.value)
        tree.body[-1] = _pv_ast.copy_location(keep, last)
        _pv_ast.fix_missing_locations(tree)
        return compile(tree, code.co_filename, "exec", 0x2000), True  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    except Exception:
        return code, False


def _pv_text(value, shell):
    """The value as IPython would show it (its ``text/plain``), else its ``repr``."""
    try:
        formatter = getattr(shell, "display_formatter", None)
        if formatter is not None:
            data = formatter.format(value)[0]
            if "text/plain" in data:
                return str(data["text/plain"])
        return repr(value)
    except Exception as exc:
        return f"<its text failed: {type(exc).__name__}>"


def _pv_displays(shell, sink):
    """What the cell displays (``display()``, a rich value) goes to ``sink`` as its text, in order
    with what it prints (``_sb_mute_kernel`` dropped it)."""
    pub = getattr(shell, "display_pub", None)
    if pub is None:
        return

    def _publish(data=None, *args, **kwargs):
        data = data if type(data) is dict else {}
        text = data.get("text/plain")
        sink.write((str(text) if text is not None else "<" + ", ".join(sorted(data)) + ">") + "\n")

    pub.publish = _publish


def _pv_facts(fingerprint):
    """What a change is said with (type, shape, length, columns, dtype): no hash, no identity."""
    return {key: fingerprint[key] for key in _PV_FACTS if key in fingerprint}


def _pv_changes(before, after):
    """``{"changes": [{"name", "change", "before", "after"}], "more"}`` from two fingerprints."""
    diff = _ufp_diff(before, after)
    changes = []
    for kind in ("bound", "rebound", "deleted", "mutated"):
        for name in diff[kind]:
            entry = {"name": name, "change": kind}
            if name in before:
                entry["before"] = _pv_facts(before[name])
            if name in after:
                entry["after"] = _pv_facts(after[name])
            changes.append(entry)
    out: dict[str, object] = {"changes": changes[:_PV_NAMES]}
    if len(changes) > _PV_NAMES:
        out["more"] = len(changes) - _PV_NAMES
    return out
