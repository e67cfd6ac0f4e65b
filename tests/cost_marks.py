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

crane's own doors that start a kernel in-process (``crane_lsp.cli.main``, ``KernelLink.start``) are
seeds too (CRANE_SEEDS). What a static reading still misses is caught at run time: while a ``unit``
test runs, starting a kernel, the server, a browser, an editor or an LLM server raises
:class:`CostGuardError` and fails the test, naming the program, so an unmarked newcomer cannot slow
the unit subset down unnoticed. The cure is an explicit marker (``pytestmark = pytest.mark.kernel``
or ``@pytest.mark.kernel``), or a seed added here.

The same walk reads which optional libraries (torch, polars, tensorflow, ...) the code strings a
test sends to its kernel import, and its parameters' (a check table's setup, an example notebook),
so that conftest.py skips, with the reason, a ``kernel`` test whose library is not installed.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib.util
import inspect
import itertools
import json
import os
import re
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

OPTIONAL_LIBRARIES = frozenset(
    {"torch", "tensorflow", "keras", "polars", "dask", "distributed", "pyspark", "sklearn", "scipy"}
    | {"statsmodels", "seaborn", "matplotlib"}
)
"""Libraries of the ``ml`` and ``test`` extras a check table's kernel may import: a ``kernel`` test
whose code strings import one that is not installed is skipped with the reason, never failed
(conftest.py). A test without a kernel only reads such strings, so it runs either way."""

LIBRARY = "lib:"  # a fact's prefix: an optional library, not a cost

_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", re.M)


def imported_libraries(text: str) -> set[str]:
    """The optional libraries a code string imports (parsed when it parses, else read line by line)."""
    if "import" not in text:
        return set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        names = set(_IMPORT_LINE.findall(text))
    else:
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names & OPTIONAL_LIBRARIES


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
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            if sub.value in STRING_SEEDS:
                found.add(STRING_SEEDS[sub.value])
            found |= {LIBRARY + name for name in imported_libraries(sub.value)}
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


def _function_facts(mod: _Module, node: ast.AST, seen: set[tuple[Path, str]]) -> set[str]:
    """A function's own facts: its decorators count for costs only (a parametrize list names every
    case's setup, while one case needs only its own libraries: those are read from its parameters)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _node_costs(mod, node, seen)
    found: set[str] = set()
    for part in [*node.body, node.args]:
        found |= _node_costs(mod, part, seen)
    for decorator in node.decorator_list:
        found |= {f for f in _node_costs(mod, decorator, seen) if not f.startswith(LIBRARY)}
    return found


@cache
def _facts_of_definition(path: Path, qualname: str) -> frozenset[str]:
    mod = _module(path)
    head, _, rest = qualname.partition(".")
    if rest and "<locals>" not in qualname:
        for node in mod.defs.get(head, []):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == rest:
                        return frozenset(_function_facts(mod, item, {(path, head)}))
    # a top-level function, or one made inside a factory (the factory's code is what we can read)
    if rest or len(mod.defs.get(head, [])) != 1:
        return frozenset(_costs(path, head, set()))
    return frozenset(_function_facts(mod, mod.defs[head][0], {(path, head)}))


def costs_of_definition(path: Path, qualname: str) -> frozenset[str]:
    """The costs of a function of tests/ (``name`` or ``Class.method``), followed through its helpers."""
    return frozenset(f for f in _facts_of_definition(path, qualname) if not f.startswith(LIBRARY))


def libraries_of_definition(path: Path, qualname: str) -> frozenset[str]:
    """The optional libraries that code strings reachable from a function of tests/ import."""
    facts = _facts_of_definition(path, qualname)
    return frozenset(f.removeprefix(LIBRARY) for f in facts if f.startswith(LIBRARY))


def _function_costs(func: Callable[..., Any]) -> frozenset[str]:
    """The facts (costs, ``lib:`` names) of a test or fixture function, wherever it was defined."""
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
    return _facts_of_definition(path, inspect.unwrap(func).__qualname__)


def _item_facts(item: Any) -> set[str]:
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


def item_costs(item: Any) -> set[str]:
    """The inferred costs of one collected test: its own code and its fixtures' (see the module doc)."""
    return {f for f in _item_facts(item) if not f.startswith(LIBRARY)}


def item_libraries(item: Any) -> set[str]:
    """The optional libraries one collected test needs: imported by code strings its code, its
    fixtures' or its parameters carry (a check table's setup, a kernel cell)."""
    found = {f.removeprefix(LIBRARY) for f in _item_facts(item) if f.startswith(LIBRARY)}
    callspec = getattr(item, "callspec", None)
    for value in getattr(callspec, "params", {}).values():
        for text in _strings(value):
            found |= imported_libraries(text)
    return found


def _strings(value: Any) -> Iterator[str]:
    """The strings a test parameter carries: itself, its items, a dataclass's fields (one level), and
    the code of a notebook it names (``torch_classifier/classifier.ipynb``, under examples/)."""
    if isinstance(value, (str, Path)) and str(value).endswith(".ipynb"):
        yield from _notebook_code(str(value))
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        yield from (v for v in value if isinstance(v, str))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            inner = getattr(value, f.name)
            if isinstance(inner, str):
                yield inner


@cache
def _notebook_code(name: str) -> tuple[str, ...]:
    for path in (Path(name), TESTS.parent / name, TESTS.parent / "examples" / name):
        if path.is_file():
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            code = [c for c in cells if c.get("cell_type") == "code"]
            return tuple("".join(c.get("source", "")) for c in code)
    return ()


def missing_libraries(item: Any) -> list[str]:
    """The optional libraries a ``kernel`` test needs that are not installed (by spec, not imported)."""
    if "kernel" not in item_costs(item) and item.get_closest_marker("kernel") is None:
        return []
    return sorted(lib for lib in item_libraries(item) if _missing(lib))


@cache
def _missing(library: str) -> bool:
    return importlib.util.find_spec(library) is None


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
