"""The ``def`` of a function the user wrote, as the analysis reads it: from the cell's own tree, or from
the source text the kernel summary carries (``ObjectSummary.source``, read from linecache only).

Shared by the calls the walk follows (``userfuncs``) and the reach proof (``reach``), which must not
import each other.
"""

from __future__ import annotations

import ast
import textwrap
from collections import OrderedDict
from dataclasses import dataclass

from crane_lsp.snapshot import ObjectSummary


@dataclass(frozen=True)
class UserFunc:
    """A function the walk can read: its ``def`` node and the lines its positions refer to."""

    name: str
    node: ast.FunctionDef
    lines: tuple[str, ...]
    key: str  # identity on the call stack (recursion)


_PARSED: OrderedDict[str, UserFunc | None] = OrderedDict()


def kernel_function(name: str, summary: ObjectSummary) -> UserFunc | None:
    """The ``def`` in a kernel function's source (``ObjectSummary.source``), when it is exactly the one
    named ``name``; cached."""
    source = summary.source
    if source is None:
        return None
    key = f"{name}\0{summary.source_line}\0{source}"
    if key in _PARSED:
        return _PARSED[key]
    func: UserFunc | None = None
    try:
        text = textwrap.dedent(source)
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef):
        node = tree.body[0]
        if node.name == name:
            func = UserFunc(name, node, tuple(text.split("\n")), key)
    _PARSED[key] = func
    if len(_PARSED) > 64:
        _PARSED.popitem(last=False)
    return func
