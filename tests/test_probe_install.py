"""The modules joined into the kernel's private module: no clash, no gap, standard library only."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
import types
import typing
from pathlib import Path

from crane_lsp.kernel import probe_install
from crane_lsp.kernel.agent import wire

KERNEL = Path(probe_install.__file__).parent


def _top_level(path: Path) -> dict[str, str]:
    """name -> how the module binds it (what an import names, so two imports of one thing do not clash)."""
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = "import " + alias.name
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = f"import {node.module}.{alias.name}"
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            out[node.name] = "definition"
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        out[name.id] = "definition"
    return out


def test_no_two_joined_modules_define_the_same_top_level_name() -> None:
    seen: dict[str, tuple[str, str]] = {}
    clashes = []
    for rel in probe_install.SOURCES:
        for name, how in _top_level(KERNEL / rel).items():
            if name in seen and (how == "definition" or seen[name][1] != how):
                clashes.append(f"{name}: {seen[name][0]} and {rel}")
            seen.setdefault(name, (rel, how))
    assert clashes == []


def test_every_agent_module_is_joined_and_none_uses_future_imports() -> None:
    agent = {str(p.relative_to(KERNEL)) for p in (KERNEL / "agent").rglob("*.py") if p.name != "__init__.py"}
    assert agent <= set(probe_install.SOURCES)
    for rel in probe_install.SOURCES:
        tree = ast.parse((KERNEL / rel).read_text(encoding="utf-8"))
        future = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        assert future == [], rel  # legal only at the top of a module, so not in a join


def test_every_global_a_joined_function_reads_is_defined_somewhere_in_the_join() -> None:
    tree = ast.parse(probe_install.PROBE_SOURCE)
    defined = set(dir(builtins))
    for rel in probe_install.SOURCES:
        defined |= set(_top_level(KERNEL / rel))
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = node.args
            local |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            local.add(node.name)
            inner = [n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)]
            local |= {alias.asname or alias.name.split(".")[0] for n in inner for alias in n.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert sorted(read - defined - local) == []


def test_the_joined_module_imports_only_the_standard_library() -> None:
    code = (
        "import sys, types\n"
        "before = set(sys.modules)\n"
        "from crane_lsp.kernel.probe_install import PROBE_SOURCE\n"
        "after_client = set(sys.modules)\n"
        "m = types.ModuleType('_crane_probe_test')\n"
        "exec(compile(PROBE_SOURCE, '<crane-probe>', 'exec'), m.__dict__)\n"
        "new = {n.split('.')[0] for n in set(sys.modules) - after_client}\n"
        "print(sorted(n for n in new if n not in sys.stdlib_module_names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_kind_but_none_and_error_has_a_summariser() -> None:
    module = types.ModuleType("_crane_probe_table_test")
    exec(compile(probe_install.PROBE_SOURCE, "<crane-probe>", "exec"), module.__dict__)
    kinds = set(typing.get_args(wire.ObjectKind))
    assert set(module._SUMMARISERS) == kinds - {wire.Kind.NONE, wire.Kind.ERROR}
