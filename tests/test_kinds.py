"""One vocabulary of kinds (``crane_lsp/analysis/kinds.py``): constants and ``Literal`` types agree, and no
module of ``checks/`` or ``analysis/`` compares a kind to a bare string. No kernel: milliseconds."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from crane_lsp.analysis import kinds
from crane_lsp.analysis.kinds import Kind, constant_kind
from crane_lsp.kernel.agent import wire

PACKAGE = Path(kinds.__file__).resolve().parents[1]
SCANNED = ("checks", "analysis")


def _constants(cls: type) -> dict[str, str]:
    """Every upper-case class attribute, inherited ones too (``kinds.Kind`` extends ``wire.Kind``)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        out.update({k: v for k, v in vars(klass).items() if k.isupper()})
    return out


def _values(literal: object) -> set[str]:
    return set(typing.get_args(literal))


def test_each_constants_class_is_exactly_its_literal() -> None:
    value_and_proof = _values(kinds.ValKind) | _values(kinds.ProofKind)
    assert sorted(_constants(Kind).values()) == sorted(value_and_proof)
    assert _values(kinds.OperationKind) == set(_constants(kinds.Op).values())
    assert _values(kinds.ScopeKind) == set(_constants(kinds.ScopeKinds).values())
    for cls in (Kind, kinds.Op, kinds.ScopeKinds):
        assert all(name.lower() == value for name, value in _constants(cls).items()), cls


def test_the_clients_own_kinds_never_shadow_a_probe_kind() -> None:
    probe = _values(wire.ObjectKind)
    assert not probe & _values(kinds.WalkKind)
    assert not probe & _values(kinds.ProofOnlyKind)
    assert _values(kinds.ValKind) == probe | _values(kinds.WalkKind)


def test_named_groups_hold_value_kinds_only() -> None:
    val_kinds = _values(kinds.ValKind)
    groups = {name: v for name, v in vars(kinds).items() if name.isupper() and isinstance(v, frozenset)}
    assert {"ARRAY_LIKE", "PANDAS", "SEQUENCES"} <= set(groups)
    for name, group in groups.items():
        assert group and group <= val_kinds, name


LITERALS = [(None, Kind.NONE), (True, Kind.BOOL), (3, Kind.INT), (0.5, Kind.FLOAT), (1j, Kind.COMPLEX)]
LITERALS += [("s", Kind.STR), (b"b", Kind.BYTES), ([1], Kind.LIST), ((1,), Kind.TUPLE), ({}, Kind.DICT)]
LITERALS += [({1}, Kind.SET), (..., Kind.OTHER), (frozenset(), Kind.OTHER)]


@pytest.mark.parametrize(("value", "kind"), LITERALS)
def test_a_literal_value_gets_the_kind_the_probe_would_give_it(value: object, kind: str) -> None:
    assert constant_kind(value) == kind


# ------------------------------------------------------------------------------------------------
# No bare kind strings in checks/ and analysis/
# ------------------------------------------------------------------------------------------------


def _kindish(node: ast.AST) -> bool:
    """``v.kind``, ``fact.owner_kind``, a name ``kind``, ``self.kind(x)``, ``kinds[0]``."""
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("kind")
    if isinstance(node, ast.Name):
        return node.id.endswith("kind")
    if isinstance(node, ast.Call):
        return _kindish(node.func)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id.endswith("kinds")
    return False


def _strings(node: ast.AST) -> list[str]:
    """The string literals an operand or an argument spells: ``'a'``, ``('a', 'b')``, ``x if c else 'a'``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def bare_kind_strings(source: str) -> list[tuple[int, str]]:
    """(line, string) of each string literal compared to a kind, passed as one (``Val(kind='x')``) or bound
    to one (``kind = 'x'``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_kindish(o) for o in operands):
                found += [(node.lineno, s) for o in operands if not _kindish(o) for s in _strings(o)]
        elif isinstance(node, ast.keyword) and node.arg is not None and node.arg.endswith("kind"):
            found += [(node.value.lineno, s) for s in _strings(node.value)]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name | ast.Attribute) and _kindish(t) for t in targets):
                found += [(node.lineno, s) for s in _strings(node.value)]
    return found


def test_the_detector_finds_each_form_of_a_bare_kind() -> None:
    source = """
if v.kind == "dataframe" or base.kind in ("ndarray", "tensor") or fact.owner_kind != "none":
    pass
x = Val(kind="series" if a else "ndarray", text="t")
ok = self.kind(node) == "str" and kinds[0] not in {"int"} and kind == "module"
kind = "ndarray_subclass"
fine = v.kind == Kind.DATAFRAME and v.kind in ARRAY_LIKE and v.dtype == "float64"
"""
    strings = sorted(s for _, s in bare_kind_strings(source))
    assert strings == sorted(
        [
            "dataframe",
            "ndarray",
            "tensor",
            "none",
            "series",
            "ndarray",
            "str",
            "int",
            "module",
            "ndarray_subclass",
        ]
    )


def _scanned() -> list[Path]:
    return sorted(p for d in SCANNED for p in (PACKAGE / d).rglob("*.py"))


def test_checks_and_analysis_compare_kinds_only_through_the_vocabulary() -> None:
    assert len(_scanned()) > 30
    bare = [
        f"{p.relative_to(PACKAGE)}:{line}: {text!r}"
        for p in _scanned()
        for line, text in bare_kind_strings(p.read_text(encoding="utf-8"))
    ]
    assert bare == [], (
        "compare kinds through crane_lsp.analysis.kinds (Kind.*, Op.*, ScopeKinds.*):\n" + "\n".join(bare)
    )
