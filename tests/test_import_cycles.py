"""No import cycle among crane_lsp's modules: every ``import`` counts, also those inside functions
and under ``TYPE_CHECKING`` (a cycle there still ties the two modules' designs together).

``kernel/agent/`` counts as one module: its files are joined into one private module when the
agent is installed in the kernel. Among themselves they import one way, in the order they are
joined (``probe_install.SOURCES``): the ``test_agent_*`` tests below.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crane_lsp"
JOINED = "crane_lsp.kernel.agent"  # one module once installed


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _node(name: str) -> str:
    return JOINED if name.startswith(JOINED + ".") else name


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:  # ``from pkg import module`` imports the module
                named.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    edges = set()
    for target in named:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and _node(target) != _node(name):
            edges.add(_node(target))
    return edges


def cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        graph.setdefault(_node(name), set()).update(_imports(name, path, known))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return groups


def test_no_import_cycle_among_crane_modules() -> None:
    assert cycles() == []


def test_the_walk_sees_a_cycle(tmp_path: Path) -> None:
    """The checker itself: two modules importing each other (one lazily) are found."""
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path / "crane_lsp"
    try:
        (PACKAGE / "sub").mkdir(parents=True)
        (PACKAGE / "__init__.py").write_text("")
        (PACKAGE / "sub" / "__init__.py").write_text("")
        (PACKAGE / "a.py").write_text("from crane_lsp.sub import b\n")
        (PACKAGE / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
        (PACKAGE / "c.py").write_text("import crane_lsp.a\n")
        assert cycles() == [["crane_lsp.a", "crane_lsp.sub.b"]]
    finally:
        PACKAGE = saved


AGENT = PACKAGE / "kernel" / "agent"
#: Circles left in the agent (none: the last, jail_answers <-> jail_semaphores, was broken by moving
#: the child-memory path reader both use into jail_seccomp, joined before both).
AGENT_CYCLES_LEFT: list[list[str]] = []


def agent_graph(folder: Path | None = None) -> dict[str, set[str]]:
    """Which agent modules each agent module imports (``TYPE_CHECKING`` imports too: in the kernel
    they are one module, so these name the modules whose names it uses)."""
    folder = folder or AGENT
    paths = {path.stem: path for path in folder.rglob("*.py") if path.stem != "__init__"}
    names = set(paths)
    graph: dict[str, set[str]] = {}
    for name in names:
        used: set[str] = set()
        for node in ast.walk(ast.parse(paths[name].read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0:  # crane_lsp.kernel.agent[.<part>].<module>
                head, _, module = (node.module or "").rpartition(".")
                used.update({module} & names if head == JOINED or head.startswith(JOINED + ".") else set())
            else:  # .<module> or from . import <module>
                used.update({node.module} & names if node.module else {a.name for a in node.names} & names)
        graph[name] = used - {name}
    return graph


def agent_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of agent modules that reach each other."""

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reached = {name: reach(name) for name in graph}
    groups = {
        tuple(sorted(n for n in graph if n == name or (n in reached[name] and name in reached[n])))
        for name in graph
    }
    return sorted(list(group) for group in groups if len(group) > 1)


def test_agent_modules_import_one_way() -> None:
    assert agent_cycles(agent_graph()) == AGENT_CYCLES_LEFT


def test_the_two_spellings_of_the_fallback_rule_class_agree() -> None:
    """jail_semaphores answers joblib's probe with the rule class jail_answers settles on: one value
    written twice (each module imports standalone), so it is checked here."""
    from crane_lsp.kernel.agent.jail.jail_answers import _JAN_FALLBACK
    from crane_lsp.kernel.agent.jail.jail_semaphores import _JSE_FALLBACK

    assert _JAN_FALLBACK == _JSE_FALLBACK


def test_agent_modules_joined_after_what_they_import() -> None:
    from crane_lsp.kernel.probe_install import SOURCES

    order = [Path(source).stem for source in SOURCES]
    graph = agent_graph()
    assert sorted(order) == sorted(graph)
    left = {name for group in AGENT_CYCLES_LEFT for name in group}
    late = [
        (name, used)
        for name in order
        for used in graph[name]
        if order.index(used) > order.index(name) and not {name, used} <= left
    ]
    assert late == []


def test_the_agent_walk_sees_a_circle_through_type_checking(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import x\n"
    )
    (tmp_path / "b.py").write_text(f"from {JOINED}.c import y\n")
    (tmp_path / "c.py").write_text(f"from {JOINED}.a import z\nimport json\n")
    (tmp_path / "d.py").write_text(f"from {JOINED}.a import z\n")
    assert agent_cycles(agent_graph(tmp_path)) == [["a", "b", "c"]]
