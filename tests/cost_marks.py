"""What a test costs, read from its code: the markers ``kernel``, ``server``, ``browser``, ``editor``,
``llm_server``, else ``unit``.

Most of the suite waits on real programs (an ipykernel, the language server, Chromium, Neovim or
Emacs), and a developer needs a door that opens in seconds. Marking tests by hand drifts, so the
markers are inferred at collection (``pytest_collection_modifyitems`` in conftest.py) from two
sources, both read statically:

1. the fixtures in the test's closure: a fixture made by ``pytest_lsp.fixture`` drives the server;
   a fixture written in tests/ costs what its body costs (rule 2);
2. the body of the test function and of every fixture or helper it names, followed through the
   same module and through the helper modules it imports from tests/ (``check_util``,
   ``jail_util``, ...), until one of the SEEDS below is found: ``start_test_kernel`` or
   ``KernelManager`` (a kernel), ``SERVER_COMMAND`` (the server), ``sync_playwright`` (a browser),
   the strings ``"nvim"``/``"emacs"`` (an editor), ``"llama_cpp.server"`` (a real LLM server), and so on.

What a static reading cannot see (crane's own code starting a kernel in-process, as ``crane-lsp
check`` does) is caught at run time: while a ``unit`` test runs, starting a kernel, the server, a
browser, an editor or an LLM server raises :class:`CostGuardError` and fails the test, naming the
program, so an unmarked newcomer cannot slow the unit subset down unnoticed. The cure is an explicit marker
(``pytestmark = pytest.mark.kernel`` or ``@pytest.mark.kernel``), or a seed added here.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import itertools
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent

COSTS = ("kernel", "server", "browser", "editor", "llm_server")
"""The cost markers (registered in pyproject.toml); a test with none (and not ``live``) is ``unit``."""

SEEDS: dict[str, str] = {
    # a real kernel, in this process's children or behind a Jupyter server
    "start_test_kernel": "kernel",
    "KernelManager": "kernel",
    "AsyncKernelManager": "kernel",
    "MultiKernelManager": "kernel",
    "start_new_kernel": "kernel",
    "start_new_async_kernel": "kernel",
    "launch_kernel": "kernel",
    "JupyterProc": "kernel",
    "RemoteServer": "kernel",
    "EnterpriseGateway": "kernel",
    # the language server as a process
    "SERVER_COMMAND": "server",
    "SERVE": "server",
    "RawServer": "server",
    # a browser
    "sync_playwright": "browser",
    "async_playwright": "browser",
    "CHROMIUM": "browser",
}
"""Identifiers (names or attributes) whose mere use in a test's code means the cost."""

STRING_SEEDS: dict[str, str] = {
    "nvim": "editor",
    "emacs": "editor",
    "code-server": "browser",
    "ipykernel_launcher": "kernel",
    "llama_cpp.server": "llm_server",
    "crane_lsp.cli": "kernel",  # `python -m crane_lsp.cli check|inspect|bench`: a replay on a fresh kernel
}
"""String constants (a program's name in an argv) whose use means the cost."""

CRANE_SEEDS: dict[str, str] = {
    "crane_lsp.cli.main": "kernel",
    "crane_lsp.bench.cli.main": "kernel",
    "crane_lsp.bench.cli.run": "kernel",
    "crane_lsp.kernel.link.KernelLink.start": "kernel",
    "crane_lsp.kernel.replay": "kernel",
}
"""crane's own doors that start a kernel in-process, by dotted name (a prefix covers a whole module):
the CLI's commands replay a notebook on a fresh kernel (its argument errors are counted too: a
static reading cannot tell them apart, and over-marking only shrinks the unit subset)."""

PLUGIN_FIXTURES: dict[str, str] = {"pytest_lsp.plugin": "server"}
"""Fixtures made outside tests/, by the module that makes them: ``pytest_lsp.fixture`` starts the server."""


@dataclass
class _Module:
    """One file of tests/ parsed once: its top-level definitions and what it imports from tests/."""

    path: Path
    defs: dict[str, list[ast.AST]] = field(default_factory=dict)
    imports: dict[str, tuple[Path, str]] = field(default_factory=dict)
    modules: dict[str, Path] = field(default_factory=dict)
    dotted: dict[str, str] = field(default_factory=dict)  # other imports: local name -> dotted name


def _helper_path(dotted: str | None, level: int) -> Path | None:
    """The file in tests/ that an import names (``tests.x``, ``x`` or ``.x``), if it is one."""
    if not dotted:
        return None
    parts = dotted.split(".")
    if parts[0] == "tests" and level == 0:
        parts = parts[1:]
    candidate = TESTS.joinpath(*parts).with_suffix(".py") if parts else None
    return candidate if candidate is not None and candidate.is_file() else None


@cache
def _module(path: Path) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    mod = _Module(path)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            mod.defs.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and node.value is not None:
                        mod.defs.setdefault(name.id, []).append(node.value)
        elif isinstance(node, ast.ImportFrom):
            source = _helper_path(node.module, node.level)
            for alias in node.names:
                if node.level == 0 and node.module:
                    mod.dotted[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if source is not None:
                    mod.imports[alias.asname or alias.name] = (source, alias.name)
                else:  # `from tests import jail_util`
                    sub = _helper_path(f"{node.module or ''}.{alias.name}".lstrip("."), node.level)
                    if sub is not None:
                        mod.modules[alias.asname or alias.name] = sub
        elif isinstance(node, ast.Import):
            for alias in node.names:
                source = _helper_path(alias.name, 0)
                if source is not None and alias.asname:
                    mod.modules[alias.asname] = source
                mod.dotted[alias.asname or alias.name] = alias.name
    return mod


def _crane_cost(dotted: str) -> str | None:
    for seed, cost in CRANE_SEEDS.items():
        if dotted == seed or dotted.startswith(seed + "."):
            return cost
    return None


def _node_costs(mod: _Module, node: ast.AST, seen: set[tuple[Path, str]]) -> set[str]:
    """The costs of one piece of code: its seeds, and the costs of the definitions it names."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found |= _name_costs(mod, sub.id, seen)
        elif isinstance(sub, ast.Attribute):
            if sub.attr in SEEDS:
                found.add(SEEDS[sub.attr])
            if isinstance(sub.value, ast.Name) and sub.value.id in mod.modules:
                found |= _costs(mod.modules[sub.value.id], sub.attr, seen)
            if isinstance(sub.value, ast.Name) and sub.value.id in mod.dotted:
                cost = _crane_cost(f"{mod.dotted[sub.value.id]}.{sub.attr}")
                found |= {cost} if cost else set()
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):  # an import inside a function
            for alias in sub.names:
                base = sub.module if isinstance(sub, ast.ImportFrom) else None
                cost = _crane_cost(f"{base}.{alias.name}" if base else alias.name)
                found |= {cost} if cost else set()
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in STRING_SEEDS:
            found.add(STRING_SEEDS[sub.value])
    return found


def _name_costs(mod: _Module, name: str, seen: set[tuple[Path, str]]) -> set[str]:
    if name in SEEDS:
        return {SEEDS[name]}
    if name in mod.dotted and _crane_cost(mod.dotted[name]):
        return {_crane_cost(mod.dotted[name]) or ""}
    if name in mod.defs:
        return _costs(mod.path, name, seen)
    if name in mod.imports:
        return _costs(*mod.imports[name], seen)
    return set()


def _costs(path: Path, name: str, seen: set[tuple[Path, str]]) -> set[str]:
    """The costs of a top-level definition of a tests/ module (a cycle adds nothing)."""
    if (path, name) in seen:
        return set()
    seen.add((path, name))
    mod = _module(path)
    if name in mod.imports and name not in mod.defs:  # re-exported from another helper
        return _costs(*mod.imports[name], seen)
    found: set[str] = set()
    for node in mod.defs.get(name, []):
        found |= _node_costs(mod, node, seen)
    return found


@cache
def costs_of_definition(path: Path, qualname: str) -> frozenset[str]:
    """The costs of a function of tests/ (``name`` or ``Class.method``), followed through its helpers."""
    mod = _module(path)
    head, _, rest = qualname.partition(".")
    if not rest:
        return frozenset(_costs(path, head, set()))
    if "<locals>" in qualname:  # made inside a factory: the factory's code is what we can read
        return frozenset(_costs(path, head, set()))
    for node in mod.defs.get(head, []):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == rest:
                    return frozenset(_node_costs(mod, item, {(path, head)}))
    return frozenset(_costs(path, head, set()))


def _function_costs(func: Callable[..., Any]) -> frozenset[str]:
    """The costs of a test or fixture function, wherever it was defined."""
    module = getattr(func, "__module__", "") or ""
    if module in PLUGIN_FIXTURES:
        return frozenset({PLUGIN_FIXTURES[module]})
    try:
        source = inspect.getsourcefile(inspect.unwrap(func))
    except TypeError:
        return frozenset()
    if source is None:
        return frozenset()
    path = Path(source).resolve()
    if path.parent != TESTS:
        return frozenset()
    return costs_of_definition(path, inspect.unwrap(func).__qualname__)


def item_costs(item: Any) -> set[str]:
    """The inferred costs of one collected test: its own code and its fixtures' (see the module doc)."""
    found: set[str] = set()
    function = getattr(item, "function", None)
    if function is not None:
        found |= _function_costs(function)
    info = getattr(item, "_fixtureinfo", None)
    name2defs = getattr(info, "name2fixturedefs", {}) or {}
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in name2defs.get(name, ()):
            found |= _function_costs(fixturedef.func)
    return found


# -- the run-time guard of the unit subset ---------------------------------------------------------


class CostGuardError(RuntimeError):
    """A ``unit`` test started a kernel, the server, a browser, an editor or an LLM server."""


def program_cost(argv: Any) -> str | None:
    """The cost of starting this program, judged from its argv, or None for a cheap one (git, bash -n)."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        words = [os.fsdecode(argv)]
    else:
        words = [os.fsdecode(a) for a in argv]
    program = os.path.basename(words[0]) if words else ""
    module = next((b for a, b in itertools.pairwise(words) if a == "-m"), "")  # python -m MODULE
    if module.startswith("ipykernel") or "ipykernel_launcher" in words:
        return "kernel"
    if program in ("nvim", "emacs", "vim"):
        return "editor"
    if "chrom" in program or program == "code-server" or "run-driver" in words:  # Playwright's driver
        return "browser"
    if module.startswith("llama_cpp"):
        return "llm_server"
    if program.startswith("jupyter") or module.startswith(("jupyter", "jupyterlab", "notebook")):
        return "kernel"
    if (program == "crane-lsp" or module.startswith("crane_lsp")) and "serve" in words:
        return "server"  # crane's other commands start their kernel in a grandchild, out of sight
    return None


class _Guard:
    """Which test the guard watches now (any thread: a test's helpers may start programs off its thread)."""

    label: str | None = None
    violations: list[str] = []


_guarded = _Guard()
_original_execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]


def _execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
    label = _guarded.label
    if label is not None:
        cost = program_cost(args)
        if cost is not None:
            why = (
                f"{label} is marked `unit` but starts a {cost} ({args!r}): mark it "
                f"(pytestmark = pytest.mark.{cost}) or add the helper to SEEDS in tests/cost_marks.py"
            )
            _guarded.violations.append(why)
            raise CostGuardError(why)
    return _original_execute_child(self, args, *rest, **kwargs)


def install_guard() -> None:
    """Route every process start through the guard (it acts only inside :func:`guarding`)."""
    subprocess.Popen._execute_child = _execute_child  # type: ignore[attr-defined]


@contextlib.contextmanager
def guarding(label: str) -> Iterator[list[str]]:
    """While inside, a costly program start (from any thread) raises; yields the violations seen."""
    violations: list[str] = []
    outer = _guarded.label, _guarded.violations
    _guarded.label, _guarded.violations = label, violations
    try:
        yield violations
    finally:
        _guarded.label, _guarded.violations = outer
