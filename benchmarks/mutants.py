"""Mutant benchmark: inject each bug class into every clean cell where it applies, run each mutant for real,
and measure what the built-in checks ALONE catch (no dry run, no LLM).

For every notebook of the corpora (``examples/*``, ``benchmarks/audit_notebooks/*``, the fixed notebooks of
``crane_lsp/data/junoreplay``), one fresh kernel in the notebook's folder runs the cells in order. Before a
cell runs:

- the checks look at the ORIGINAL cell against the kernel state (through the real probe); if the cell then
  runs clean, a certain finding there is a false alarm (must be 0), a warning is counted apart;
- each bug class proposes mutants of the cell (sites found from the cell's syntax and the kernel's types,
  read with a side-effect-free helper: ``type``, ``shape``, column names and dtypes); each mutant is RUN in
  a forked copy of the kernel (``os.fork`` in the kernel: the child execs the mutant on a copy-on-write
  namespace, reports the exception class and line, and exits; the kernel itself never runs it). Mutants
  that run clean are counted, not scored. For a mutant that really crashes, the checks look at it against
  the same state: caught = the first finding names the exception class the mutant really raised; certain =
  caught and no earlier line may raise (the rule ``pipeline.checks_phase`` applies).

    python benchmarks/mutants.py [--limit N] [--only NAME,...] [--per-class K] [--json out.json]

``CRANE_ROOT=/path/to/checkout`` measures the checks of another checkout (e.g. a ``git worktree`` of an
older commit); the crane_lsp actually imported is printed first.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("CRANE_ROOT", HERE)).resolve()
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

import crane_lsp  # noqa: E402
from crane_lsp.analysis.parse import analyze  # noqa: E402
from crane_lsp.analysis.reach import first_risky_line  # noqa: E402
from crane_lsp.checks.runner import run_checks  # noqa: E402
from crane_lsp.kernel.probe_install import call_expression, install_code, installed_expression  # noqa: E402
from crane_lsp.snapshot import ProbeQuery, Snapshot  # noqa: E402

#: Kernel-side helpers, kept in a module of their own (never in the user's namespace, which the probe reads).
KERNEL_HELPERS = r'''
import sys as _sys, types as _types
_m = _types.ModuleType("__crane_mutants__")
exec(compile(r"""
import json, os, select, signal, sys, time

def info(names):
    ns = get_ipython().user_ns
    out = {}
    for n in names:
        if n not in ns:
            continue
        v = ns[n]
        t = type(v)
        d = {"type": t.__module__ + "." + t.__qualname__}
        if isinstance(v, type) or callable(v) and hasattr(v, "__module__") and not hasattr(v, "shape"):
            d["module"] = str(getattr(v, "__module__", "") or "")
        if t.__name__ == "module":
            d["module"] = v.__name__
        arrays = t.__module__.split(".")[0] in ("numpy", "pandas", "torch")
        shape = getattr(v, "shape", None) if arrays else None
        if isinstance(shape, tuple):
            d["shape"] = [int(s) for s in shape]
        if t.__module__.startswith("pandas") and t.__name__ == "DataFrame":
            d["columns"] = [c for c in v.columns if isinstance(c, str)][:200]
            d["text"] = [c for c in v.columns if isinstance(c, str) and v[c].dtype.kind in "OSUT"
                         or str(v[c].dtype) in ("str", "string")][:50]
            d["numeric"] = [c for c in v.columns if isinstance(c, str) and v[c].dtype.kind in "iuf"][:50]
        if t.__module__.startswith("pandas") and t.__name__ == "Series":
            d["dtype_kind"] = v.dtype.kind
        if isinstance(v, (list, tuple)):
            d["len"] = len(v)
        if t.__module__.startswith("sklearn"):
            d["fitted_n"] = getattr(v, "n_features_in_", None) if "n_features_in_" in dir(v) else None
        out[n] = d
    return out

def fork_run(code, timeout=30.0, names=None):
    ip = get_ipython()
    src = ip.transform_cell(code)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setpgid(0, 0)
            devnull = open(os.devnull, "w")
            sys.stdout = sys.stderr = devnull
            ip.display_pub.publish = lambda *a, **k: None
            try:
                import matplotlib
                matplotlib.use("Agg", force=True)
            except Exception:
                pass
            res = {"ename": None, "line": None, "evalue": ""}
            try:
                exec(compile(src, "<mutant>", "exec"), ip.user_ns)
                if names is not None:  # what the run left (benchmarks/fixes_mutants.py compares it)
                    res["state"] = info(names)
            except BaseException as e:
                tb, line = e.__traceback__, None
                while tb is not None:
                    if tb.tb_frame.f_code.co_filename == "<mutant>":
                        line = tb.tb_lineno - 1
                    tb = tb.tb_next
                res = {"ename": type(e).__name__, "line": line, "evalue": str(e)[:160]}
            os.write(w, json.dumps(res).encode())
        finally:
            os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    data = b""
    if ready:
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
    os.close(r)
    if not data:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"ename": "<timeout>", "line": None, "evalue": ""}
""", "<crane-mutants>", "exec"), _m.__dict__)
_m.get_ipython = get_ipython
_sys.modules["__crane_mutants__"] = _m
del _m, _sys, _types
'''


class Kernel:
    """A fresh ipykernel in a folder, driven synchronously."""

    def __init__(self, cwd: Path) -> None:
        self.km = KernelManager(kernel_name="python3")
        env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", "MPLBACKEND": "Agg"}
        self.km.start_kernel(cwd=str(cwd), env=env)
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.expressions(KERNEL_HELPERS, {})
        self.probe_ready = False

    def run(self, code: str, timeout: float = 300) -> dict[str, Any]:
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
        content: dict[str, Any] = reply["content"]
        return content

    def expressions(self, code: str, exprs: dict[str, str], timeout: float = 120) -> dict[str, Any]:
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions=exprs)
        while True:
            try:
                msg = self.kc.get_shell_msg(timeout=timeout)
            except queue.Empty as exc:
                raise TimeoutError("kernel did not answer") from exc
            if msg["parent_header"].get("msg_id") == msg_id:
                if msg["content"].get("status") == "error":
                    raise RuntimeError(msg["content"].get("evalue"))
                result: dict[str, Any] = msg["content"].get("user_expressions", {})
                return result

    def value(self, expr: str, timeout: float = 120) -> Any:
        got = self.expressions("", {"v": f"__import__('json').dumps({expr})"}, timeout)["v"]
        if got.get("status") != "ok":
            raise RuntimeError(f"{got.get('ename')}: {got.get('evalue')}")
        return json.loads(ast.literal_eval(got["data"]["text/plain"]))

    def info(self, names: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = self.value(
            f"__import__('sys').modules['__crane_mutants__'].info({names!r})"
        )
        return out

    def fork_run(self, code: str, timeout: float = 30.0, names: list[str] | None = None) -> dict[str, Any]:
        """``code`` run in a forked copy of the kernel: its exception and line (and with ``names``,
        what the run left bound under them: ``state``, as ``info`` reads it)."""
        mod = "__import__('sys').modules['__crane_mutants__']"
        call = f"{mod}.fork_run({code!r}, {timeout}, {names!r})"
        out: dict[str, Any] = self.value(call, timeout=timeout + 30)
        return out

    def snapshot(self, query: ProbeQuery) -> Snapshot:
        if not self.probe_ready:
            self.expressions(install_code(), {"ok": installed_expression()})
            self.probe_ready = True
        answer = self.expressions("", {"snap": call_expression("snapshot", query.model_dump())})["snap"]
        if answer.get("status") != "ok":
            raise RuntimeError(f"probe raised {answer.get('ename')}: {answer.get('evalue')}")
        return Snapshot.model_validate(answer["data"]["application/json"])

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


# ---- the bug classes -------------------------------------------------------------------------------

Info = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Mutant:
    cls: str
    what: str
    source: str


def _replace(src: str, node: ast.AST, text: str) -> str:
    """``src`` with ``node``'s exact text replaced (positions from ``ast``: 1-based lines, utf-8 columns)."""
    lines = src.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: node.lineno - 1]) + _chars(lines[node.lineno - 1], node.col_offset)
    end_line = node.end_lineno or node.lineno
    end = sum(len(x) for x in lines[: end_line - 1]) + _chars(lines[end_line - 1], node.end_col_offset or 0)
    return src[:start] + text + src[end:]


def _chars(line: str, byte_col: int) -> int:
    return len(line.encode()[:byte_col].decode(errors="ignore"))


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _typo(name: str) -> str:
    """A realistic misspelling: the last letter doubled (``Age`` -> ``Agee``)."""
    return name + name[-1] if name else name


def _kw_typo(name: str) -> str:
    """A keyword misspelt as people do: a plural dropped or added (``n_estimators`` -> ``n_estimator``)."""
    return name[:-1] if name.endswith("s") and len(name) > 2 else name + "s"


def _is(info: Info, name: str | None, prefix: str) -> bool:
    return name is not None and info.get(name, {}).get("type", "").startswith(prefix)


def _frame(info: Info, name: str | None) -> dict[str, Any] | None:
    d = info.get(name or "")
    return d if d is not None and d.get("type") == "pandas.DataFrame" else None


_USE = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score")
_SNS_COLUMN_KWS = ("x", "y", "hue", "size", "style", "col", "row")
_NUMERIC_REDUCE = ("mean", "median", "std", "var", "corr", "cov")


def _use_calls(tree: ast.AST, info: Info) -> Iterator[tuple[ast.Call, str, ast.Name]]:
    """``est.predict(X)`` with ``est`` a kernel scikit-learn object and ``X`` a kernel name."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _USE
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            est = _root(node.func.value)
            if _is(info, est, "sklearn.") and info[est or ""].get("fitted_n"):
                yield node, info[est or ""]["type"], node.args[0]


def m_predict_1d(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for _call, _est, x in _use_calls(tree, info):
        d = info.get(x.id, {})
        if d.get("type") == "numpy.ndarray" and len(d.get("shape", [])) == 2:
            yield Mutant("predict-1d", f"{x.id} -> {x.id}[0]", _replace(src, x, f"{x.id}[0]"))
        elif d.get("type") == "pandas.DataFrame":
            yield Mutant("predict-1d", f"{x.id} -> {x.id}.iloc[0]", _replace(src, x, f"{x.id}.iloc[0]"))


def m_predict_reshape(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for _call, _est, x in _use_calls(tree, info):
        d = info.get(x.id, {})
        shape = d.get("shape", [])
        if len(shape) != 2 or shape[0] < 2:
            continue
        text = (
            f"{x.id}.reshape(1, -1)" if d.get("type") == "numpy.ndarray" else f"{x.id}.values.reshape(1, -1)"
        )
        if d.get("type") in ("numpy.ndarray", "pandas.DataFrame"):
            yield Mutant("predict-reshape", f"{x.id} -> {text}", _replace(src, x, text))


def m_fewer_features(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for _call, est, x in _use_calls(tree, info):
        d = info.get(x.id, {})
        shape = d.get("shape", [])
        if len(shape) != 2 or shape[1] < 2:
            continue
        cls = "pipeline-fewer-features" if est.startswith("sklearn.pipeline.") else "fewer-features"
        if d.get("type") == "numpy.ndarray":
            yield Mutant(cls, f"{x.id} -> {x.id}[:, 1:]", _replace(src, x, f"{x.id}[:, 1:]"))
        elif d.get("type") == "pandas.DataFrame":
            yield Mutant(cls, f"{x.id} -> {x.id}.iloc[:, 1:]", _replace(src, x, f"{x.id}.iloc[:, 1:]"))


def _str_list(node: ast.AST) -> list[str] | None:
    if (
        isinstance(node, ast.List)
        and node.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    ):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return None


def m_text_column(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    """A text column put among the numeric ones given to a numeric consumer: ``fit``/``transform`` of an
    estimator, or a reduction (``mean``...); or a reduction's ``numeric_only=True`` dropped."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr = node.func.attr
        targets: list[ast.AST] = []
        if attr in ("fit", "fit_transform", "transform") and node.args:
            targets.append(node.args[0])
        if attr in _NUMERIC_REDUCE:
            targets.append(node.func.value)
            for kw in node.keywords:
                if kw.arg == "numeric_only" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    f = _frame(info, _root(node.func.value))
                    if f and f.get("text") and isinstance(node.func.value, ast.Name):
                        keep = [k for k in node.keywords if k is not kw]
                        new = ast.Call(node.func, node.args, keep)
                        yield Mutant(
                            "text-column", "numeric_only=True dropped", _replace(src, node, ast.unparse(new))
                        )
        for t in targets:
            if isinstance(t, ast.Subscript):
                f = _frame(info, t.value.id if isinstance(t.value, ast.Name) else None)
                if f is None or not f.get("text"):
                    continue
                cols = _str_list(t.slice)
                text_col = f["text"][0]
                if cols is not None and text_col not in cols:
                    new = ast.unparse(t.slice)[:-1] + f", {text_col!r}]"
                    yield Mutant("text-column", f"+ {text_col!r}", _replace(src, t.slice, new))
                elif (
                    isinstance(t.slice, ast.Constant)
                    and t.slice.value in f.get("numeric", [])
                    and attr in _NUMERIC_REDUCE
                ):
                    yield Mutant(
                        "text-column",
                        f"{t.slice.value!r} -> {text_col!r}",
                        _replace(src, t.slice, repr(text_col)),
                    )
            elif isinstance(t, ast.Name) and attr in ("fit", "fit_transform"):
                # ``scaler.fit(X)`` with X a numeric selection of a frame the kernel holds with text columns
                pass


def _column_sites(tree: ast.AST, info: Info) -> Iterator[tuple[str, ast.Constant]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            f = _frame(info, node.value.id)
            if f is None:
                continue
            consts = (
                [node.slice]
                if isinstance(node.slice, ast.Constant)
                else (node.slice.elts if isinstance(node.slice, ast.List) else [])
            )
            for c in consts:
                if isinstance(c, ast.Constant) and c.value in f["columns"]:
                    yield "column-subscript", c
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            data_kw = next((k for k in node.keywords if k.arg == "data"), None)
            owner = _root(node.func.value)
            if (
                data_kw is not None
                and _is(info, owner, "builtins.module")
                and (info[owner or ""].get("module", "").startswith("seaborn"))
            ):
                f = _frame(info, data_kw.value.id if isinstance(data_kw.value, ast.Name) else None)
                if f is None:
                    continue
                for k in node.keywords:
                    if (
                        k.arg in _SNS_COLUMN_KWS
                        and isinstance(k.value, ast.Constant)
                        and k.value.value in f["columns"]
                    ):
                        yield "seaborn-column", k.value
            elif node.func.attr == "plot" or (
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "plot"
            ):
                base = node.func.value if node.func.attr == "plot" else node.func.value.value
                f = _frame(info, base.id if isinstance(base, ast.Name) else None)
                if f is None:
                    continue
                for k in node.keywords:
                    if (
                        k.arg in ("x", "y")
                        and isinstance(k.value, ast.Constant)
                        and k.value.value in f["columns"]
                    ):
                        yield "plot-column", k.value


def m_columns(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for cls, const in _column_sites(tree, info):
        yield Mutant(
            cls, f"{const.value!r} -> {_typo(const.value)!r}", _replace(src, const, repr(_typo(const.value)))
        )


def _library(info: Info, call: ast.Call) -> str:
    name = _root(call.func)
    d = info.get(name or "", {})
    if "module" in d:
        return str(d["module"]).split(".")[0] or "?"
    return str(d.get("type", "cell")).split(".")[0]


def m_keywords(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.keywords and all(k.arg for k in node.keywords):
            kw = node.keywords[0]
            new = ast.Call(
                node.func, node.args, [ast.keyword(_kw_typo(kw.arg or ""), kw.value), *node.keywords[1:]]
            )
            lib = _library(info, node)
            try:
                text = _replace(src, node, ast.unparse(new))
            except Exception:
                continue
            yield Mutant(f"wrong-keyword:{lib}", f"{kw.arg}= -> {_kw_typo(kw.arg or '')}=", text)


def m_index(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        iloc = (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "iloc"
            and isinstance(node.value.value, ast.Name)
        )
        if not (isinstance(node, ast.Subscript) and (isinstance(node.value, ast.Name) or iloc)):
            continue
        owner = node.value.value if iloc and isinstance(node.value, ast.Attribute) else node.value
        d = info.get(owner.id if isinstance(owner, ast.Name) else "", {})
        if d.get("type") == "numpy.ndarray" or (
            iloc and d.get("type") in ("pandas.DataFrame", "pandas.Series")
        ):
            shape = d.get("shape", [])
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for axis, p in enumerate(parts):
                if (
                    axis < len(shape)
                    and isinstance(p, ast.Constant)
                    and type(p.value) is int
                    and p.value >= 0
                ):
                    yield Mutant(
                        "index-past-end", f"{p.value} -> {shape[axis]}", _replace(src, p, str(shape[axis]))
                    )
        elif (
            d.get("type") in ("builtins.list", "builtins.tuple")
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
            and node.slice.value >= 0
        ):
            yield Mutant(
                "index-past-end",
                f"{node.slice.value} -> {d['len']}",
                _replace(src, node.slice, str(d["len"])),
            )


_PLOT_XY = ("bar", "barh", "plot", "scatter", "fill_between", "stem", "step")


def m_plot_lengths(src: str, tree: ast.AST, info: Info) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = _root(node.func.value)
        d = info.get(owner or "", {})
        is_mpl = str(d.get("module", "")).startswith("matplotlib") or str(d.get("type", "")).startswith(
            "matplotlib"
        )
        if not is_mpl:
            continue
        if (
            node.func.attr in _PLOT_XY
            and len(node.args) >= 2
            and not isinstance(node.args[1], (ast.Constant, ast.Starred))
        ):
            y = node.args[1]
            yield Mutant(
                "plot-lengths", f"{ast.unparse(y)} -> [:-1]", _replace(src, y, f"{ast.unparse(y)}[:-1]")
            )
        if node.func.attr in ("set_xticklabels", "set_yticklabels") and node.args:
            lab = node.args[0]
            yield Mutant(
                "plot-lengths",
                f"{ast.unparse(lab)} -> [:-1]",
                _replace(src, lab, f"list({ast.unparse(lab)})[:-1]"),
            )


MUTATORS: tuple[Callable[[str, ast.AST, Info], Iterator[Mutant]], ...] = (
    m_predict_1d,
    m_predict_reshape,
    m_fewer_features,
    m_text_column,
    m_columns,
    m_keywords,
    m_index,
    m_plot_lengths,
)


def mutants(src: str, info: Info, per_class: int) -> list[Mutant]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []  # a cell with magics: its text is not Python, positions would not match
    out: list[Mutant] = []
    seen: Counter[str] = Counter()
    for mutate in MUTATORS:
        try:
            for m in mutate(src, tree, info):
                if seen[m.cls] < per_class and m.source != src:
                    seen[m.cls] += 1
                    out.append(m)
        except Exception as exc:  # a mutator's own bug must not end the run
            print(f"  mutator {mutate.__name__} raised {exc!r}", file=sys.stderr)
    return out


# ---- running ---------------------------------------------------------------------------------------


@dataclass
class Result:
    notebook: str
    cell: int
    cls: str
    what: str
    truth: str | None
    truth_line: int | None
    predicted: str | None = None
    check_id: str | None = None
    certain: bool = False


@dataclass
class CleanCell:
    notebook: str
    cell: int
    certain: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def verdict(k: Kernel, source: str) -> tuple[str | None, str | None, bool]:
    """The checks' first finding on ``source`` in the kernel's state: (exception, check id, certain)."""
    facts = analyze(source)
    snap = k.snapshot(ProbeQuery(**facts.probe_query_fields()))
    findings = run_checks(facts, snap)
    if not findings:
        return None, None, False
    first = findings[0]
    certain = (
        first_risky_line(facts, snap, first.span.line, first.span.col) is None and not first.unproven_reach
    )
    return first.exception, first.check_id, certain


def corpora(only: set[str] | None) -> list[tuple[str, Path]]:
    notebooks = sorted(HERE.glob("examples/*/*.ipynb")) + sorted(
        HERE.glob("benchmarks/audit_notebooks/*.ipynb")
    )
    notebooks += sorted(HERE.glob("crane_lsp/data/junoreplay/*/fixed.ipynb"))
    out = []
    for nb in notebooks:
        name = str(nb.relative_to(HERE))
        if only and not any(o in name for o in only):
            continue
        out.append((name, nb))
    return out


_NAME = re.compile(r"[A-Za-z_]\w*")


def walk_notebook(
    name: str, path: Path, args: argparse.Namespace, budget: dict[str, int]
) -> tuple[list[Result], list[CleanCell], int]:
    nb = nbformat.read(path, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    k = Kernel(path.parent)
    results: list[Result] = []
    clean: list[CleanCell] = []
    ran_clean_mutants = 0
    try:
        for i, src in enumerate(cells):
            names = sorted(set(_NAME.findall(src)))
            info = k.info(names) if names else {}
            try:
                exc, check_id, certain = verdict(k, src)
            except Exception as e:  # the probe could not read this state: no verdict for the cell
                print(f"  {name}[{i}] probe: {e}", file=sys.stderr)
                exc, check_id, certain = None, None, False
            cands = mutants(src, info, args.per_class) if budget["left"] > 0 else []
            for m in cands:
                if budget["left"] <= 0:
                    break
                budget["left"] -= 1
                truth = k.fork_run(m.source, timeout=args.timeout)
                if truth["ename"] is None or truth["ename"] == "<timeout>":
                    ran_clean_mutants += 1
                    continue
                try:
                    p, cid, cert = verdict(k, m.source)
                except Exception:
                    p, cid, cert = None, None, False
                r = Result(
                    name,
                    i,
                    m.cls,
                    m.what,
                    truth["ename"],
                    truth["line"],
                    p,
                    cid,
                    cert and p == truth["ename"],
                )
                results.append(r)
                if args.verbose:
                    print(
                        f"  {name}[{i}] {m.cls:<26} {m.what[:40]:<40} {truth['ename']:<18} "
                        f"-> {p or '-'} {cid or ''}"
                    )
            content = k.run(src)
            if content["status"] == "ok":
                cc = CleanCell(name, i)
                if exc is not None:
                    (cc.certain if certain else cc.warnings).append(f"{exc} {check_id}")
                    print(
                        f"  FALSE ALARM {'certain' if certain else 'warning'} {name}[{i}]: {exc} {check_id}"
                    )
                clean.append(cc)
    finally:
        k.close()
    return results, clean, ran_clean_mutants


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="stop after this many notebooks (0: all)")
    ap.add_argument("--only", help="comma-separated substrings of notebook paths")
    ap.add_argument("--per-class", type=int, default=2, help="mutants per bug class per cell")
    ap.add_argument("--max-mutants", type=int, default=2000)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a mutant may run")
    ap.add_argument("--json", type=Path, help="write every result here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    print(f"checks from {Path(crane_lsp.__file__).parent}")
    books = corpora(set(args.only.split(",")) if args.only else None)
    if args.limit:
        books = books[: args.limit]
    start = time.perf_counter()
    results: list[Result] = []
    clean: list[CleanCell] = []
    no_crash = 0
    budget = {"left": args.max_mutants}
    for name, path in books:
        t0 = time.perf_counter()
        r, c, n = walk_notebook(name, path, args, budget)
        results += r
        clean += c
        no_crash += n
        print(
            f"{name}: {len(c)} clean cells, {len(r)} crashing mutants, {n} ran clean "
            f"({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    by: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by[r.cls].append(r)
    print()
    print(f"{'class':<30} {'mutants':>7} {'caught':>7} {'certain':>7} {'recall':>7}")
    for cls in sorted(by):
        rs = by[cls]
        caught = sum(r.predicted == r.truth for r in rs)
        print(f"{cls:<30} {len(rs):>7} {caught:>7} {sum(r.certain for r in rs):>7} {caught / len(rs):>7.0%}")
    total = len(results)
    caught = sum(r.predicted == r.truth for r in results)
    print(
        f"{'ALL':<30} {total:>7} {caught:>7} {sum(r.certain for r in results):>7} "
        f"{caught / max(total, 1):>7.0%}"
    )
    wrong = [r for r in results if r.predicted is not None and r.predicted != r.truth]
    print(f"mutants flagged with another exception class: {len(wrong)}")
    print(f"mutants that ran clean (not scored): {no_crash}")
    fa_certain = [c for c in clean if c.certain]
    fa_warn = [c for c in clean if c.warnings]
    print(
        f"clean cells: {len(clean)}; certain false alarms (must be 0): {len(fa_certain)}; "
        f"warnings: {len(fa_warn)}"
    )
    print(f"wall: {time.perf_counter() - start:.0f} s")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "results": [asdict(r) for r in results],
                    "clean": [asdict(c) for c in clean],
                    "no_crash": no_crash,
                },
                indent=1,
            )
        )
    return 0 if not fa_certain else 1


if __name__ == "__main__":
    raise SystemExit(main())
