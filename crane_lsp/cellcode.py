"""Parse one notebook cell into the facts the probe and the checks need, each with its exact position.

INTERFACE (stable; the implementation below is filled in by the cellcode work):
    analyze(source: str) -> CellFacts

Positions are 0-based lines and columns in the ORIGINAL cell text (what the editor shows), even
though magics and ``!shell`` lines are first turned into Python by IPython's own transformer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Span:
    """A range in the original cell text; 0-based lines, columns in characters."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class NameUse:
    name: str
    span: Span


@dataclass(frozen=True)
class AttributeChain:
    """``np.random.rand`` -> base ``np``, attrs ``("random", "rand")``; chain text ``"np.random.rand"``."""

    base: str
    attrs: tuple[str, ...]
    span: Span  # of the whole chain expression
    attr_span: Span  # of the last attribute name only (where a missing-attribute squiggle goes)

    @property
    def text(self) -> str:
        return ".".join((self.base, *self.attrs))


@dataclass(frozen=True)
class Subscript:
    """``df['price']`` / ``d[0]`` / ``df[['a', 'b']]`` with literal keys only."""

    target: str  # the subscripted expression as text: a name or a chain ("df", "self.data")
    key: Any  # the literal value: str, int, float, tuple, or list of those
    span: Span  # of the whole subscript expression
    key_span: Span
    accessor: str | None = None  # "loc" / "iloc" / "at" / "iat" for df.loc[...]
    is_store: bool = False  # assignment target (df['new'] = ...): creates, never raises KeyError

    @property
    def text(self) -> str:
        acc = f".{self.accessor}" if self.accessor else ""
        return f"{self.target}{acc}[{self.key!r}]"


@dataclass(frozen=True)
class Argument:
    keyword: str | None  # None for positional
    text: str  # source text of the argument expression
    literal: Any = None  # the value when the argument is a literal (ast.literal_eval), else None
    is_literal: bool = False
    name: str | None = None  # when the argument is a plain name or chain ("df", "df.values")
    starred: bool = False  # *args / **kwargs
    span: Span | None = None


@dataclass(frozen=True)
class Call:
    """A call site: ``func`` as text (``"pd.read_csv"``, ``"model.fit"``, ``"len"``)."""

    func: str
    args: tuple[Argument, ...]
    span: Span
    func_span: Span
    receiver: str | None = None  # for method calls on a name/chain: "model" in model.fit(...)
    method: str | None = None  # "fit"


@dataclass(frozen=True)
class ImportUse:
    module: str  # "sklearn.model_selection"
    names: tuple[str, ...]  # from-imports: ("train_test_split",); plain import: ()
    alias: str | None
    span: Span


@dataclass(frozen=True)
class Assignment:
    """A name bound by the cell (assignment, for target, with, import, def, class, augmented)."""

    name: str
    span: Span
    value_text: str | None = None  # source of the assigned expression, when a simple assignment


@dataclass
class CellFacts:
    """Everything ``analyze`` learned about one cell."""

    source: str
    python: str  # the transformed Python source (magics -> Python), what was actually parsed
    syntax_error: str | None = None  # message when the cell does not parse
    syntax_error_span: Span | None = None
    reads: list[NameUse] = field(default_factory=list)  # names read before the cell assigns them
    defines: list[Assignment] = field(default_factory=list)  # in order of appearance
    chains: list[AttributeChain] = field(default_factory=list)
    subscripts: list[Subscript] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    paths: list[tuple[str, Span]] = field(default_factory=list)  # literal file paths given to readers
    imports: list[ImportUse] = field(default_factory=list)
    # lines (0-based) from which on the analysis can no longer vouch for a name's value, because
    # code it cannot follow (user function call, loop body, exec, del, augmented/attribute assign)
    # may have changed it: name -> first such line
    untrusted_from: dict[str, int] = field(default_factory=dict)

    def probe_query_fields(self) -> dict[str, list[str]]:
        """Names, chains, subscripts, paths and modules for a ``runtime.ProbeQuery``."""
        raise NotImplementedError


def analyze(source: str) -> CellFacts:
    """Parse ``source`` (magics allowed) into ``CellFacts``; never raises on bad code."""
    raise NotImplementedError
