"""Adding a probe kind fails loudly wherever a step is forgotten (the recipe:
``kernel/agent/probe/summaries.py``).

Every ``ObjectKind`` must be recognised by one of the agent's tables, and the library behind it must be
trusted (``safe._TRUSTED``: its properties and dunders may run) or read from its schema only
(``frames._FRM_LIBS``). A library left out of both does not fail anywhere at run time: a kind whose class
must be the library's own is then never given (``_classify`` checks trust first) and its objects come back
as ``other``. Read from the joined agent module (``probe_install.PROBE_SOURCE``), no kernel: milliseconds.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest

from crane_lsp.kernel import probe_install
from crane_lsp.kernel.agent.wire import Kind, ObjectKind

#: Kinds ``_classify`` gives by a class's name rather than through a table: their libraries.
BY_NAME = {
    Kind.TF_TENSOR: ("tensorflow",),
    Kind.TF_DATASET: ("tensorflow",),
    Kind.KERAS_MODEL: ("keras", "tf_keras", "tensorflow"),  # summaries._KERAS_TOPS
    Kind.KERAS_ITERATOR: ("keras", "tf_keras", "tensorflow"),
}
#: Kinds of any object, of no library: what the probe says when no table recognises the object.
ANY_OBJECT = (Kind.MODULE, Kind.CLASS, Kind.GENERATOR, Kind.OTHER, Kind.ERROR)


@pytest.fixture(scope="module")
def agent() -> types.ModuleType:
    module = types.ModuleType("_crane_probe_kinds_test")
    exec(compile(probe_install.PROBE_SOURCE, "<crane-probe>", "exec"), module.__dict__)
    return module


def kind_libraries(agent: Any) -> dict[str, set[str]]:
    """kind -> the top-level packages whose classes the agent gives that kind (``builtins`` for Python's)."""
    out: dict[str, set[str]] = {}
    for kind in agent._EXACT_KINDS.values():
        out.setdefault(kind, set()).add("builtins")
    for _base, kind in agent._BUILTIN_BASES:
        out.setdefault(kind, set()).add("builtins")
    for key, kind, _own in agent._LIBRARY_KINDS:
        out.setdefault(kind, set()).update(m.split(".")[0] for m, _ in agent._KNOWN_CLASSES.get(key, ()))
    for kind, places in agent._FRM_CLASSES.items():
        out.setdefault(kind, set()).update(m.split(".")[0] for m, _ in places)
    for kind, libs in BY_NAME.items():
        out.setdefault(kind, set()).update(libs)
    for kind in ANY_OBJECT:
        out.setdefault(kind, set())
    return out


def untrusted(agent: Any) -> list[str]:
    """``kind: library`` for each library behind a kind that is neither trusted nor read schema-only."""
    allowed = set(agent._TRUSTED) | set(agent._FRM_LIBS)
    return sorted(
        f"{k}: {lib}" for k, libs in kind_libraries(agent).items() for lib in libs if lib not in allowed
    )


def test_every_probe_kind_is_recognised_by_a_table(agent: Any) -> None:
    kinds = set(typing.get_args(ObjectKind))
    missing = kinds - set(kind_libraries(agent))
    assert not missing, (
        f"{sorted(missing)}: no table gives these kinds. Name the class in safe._KNOWN_CLASSES and give it a "
        "line in summaries._LIBRARY_KINDS (or frames._FRM_CLASSES for a schema-only frame)"
    )
    assert set(kind_libraries(agent)) <= kinds


def test_each_library_kind_names_classes_the_agent_can_find(agent: Any) -> None:
    lost = [key for key, _kind, _own in agent._LIBRARY_KINDS if not agent._KNOWN_CLASSES.get(key)]
    assert lost == [], f"summaries._LIBRARY_KINDS keys with no class in safe._KNOWN_CLASSES: {lost}"


def test_the_library_behind_every_kind_is_trusted_or_read_schema_only(agent: Any) -> None:
    assert untrusted(agent) == [], (
        "add the library to safe._TRUSTED_TEXT (its properties and dunders may then run in the kernel), "
        "or read it from its schema only as frames.py does (frames._FRM_LIBS)"
    )


def test_a_library_left_out_of_the_trusted_list_is_caught(agent: Any) -> None:
    """What the newcomer's silent slip looks like to the check above: numpy not trusted."""
    shadow = types.SimpleNamespace(**vars(agent))
    shadow._TRUSTED = agent._TRUSTED - {"numpy"}
    assert untrusted(shadow) == ["ndarray: numpy"]
    shadow._FRM_LIBS = ()
    assert "polars_dataframe: polars" in untrusted(shadow)
