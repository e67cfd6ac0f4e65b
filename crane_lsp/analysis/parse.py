"""``analyze(source) -> CellFacts``: magics to Python, ONE parse, the scan.

Positions are 0-based lines and columns in the ORIGINAL cell text (what the editor shows), even
though magics and ``!shell`` lines are first turned into Python by IPython's own transformer. The
parsed tree is kept on the facts (``CellFacts.tree``) so that the value walk, the reach rule and the
dry-run screen do not parse the cell again (a parse of 20,000 lines costs half a second).
"""

from __future__ import annotations

import ast
import functools
import logging

from crane_lsp.analysis.facts import UNTRUSTED_ALL, UNTRUSTED_FILES, UNTRUSTED_MODULES, CellFacts
from crane_lsp.analysis.gcpause import gc_paused
from crane_lsp.analysis.positions import PosMap, Span
from crane_lsp.analysis.scan import _Analyzer
from crane_lsp.analysis.syntax import _PYTHON_CELL_MAGICS

_log = logging.getLogger(__name__)


def _transform(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return str(TransformerManager().transform_cell(source))


def _split_cell_magic(source: str) -> tuple[str | None, int]:
    """The cell magic name and the line its body starts on (``%%time`` -> ("time", 1))."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("%%"):
            name = stripped[2:].split(maxsplit=1)[0] if len(stripped) > 2 else ""
            return name, i + 1
        return None, 0
    return None, 0


#: Lines of a cell ``analyze`` reads by default: from the first top-level statement that starts later on,
#: nothing is checked or trusted, so that a first verdict on a cell of tens of thousands of generated lines
#: comes within a second (the parse of all of it alone takes half of that). The server then reads the
#: rest in its worker process (``analyze_whole``, ``server/checkpass.finish_checks_phase``); the dry run
#: gets the whole cell.
MAX_LINES = 1000


def analyze(source: str, max_lines: int | None = MAX_LINES) -> CellFacts:
    """Parse ``source`` (magics allowed) into ``CellFacts``; never raises on bad code.

    ``max_lines``: read the cell's statements up to that line (``CellFacts.unchecked_from`` says where the
    reading stopped); None reads all of it (the dry run's safe-mode screen, which must see every call)."""
    try:
        with gc_paused():
            return _analyze(source, max_lines)
    except Exception:  # a bug here must not take the server down: no facts, and everything untrusted
        _log.exception("cell analysis failed")
        facts = CellFacts(source=source, python=source, analyzed=False)
        for key in (UNTRUSTED_ALL, UNTRUSTED_FILES, UNTRUSTED_MODULES):
            facts.untrust_from_start(key)
        return facts


@functools.lru_cache(maxsize=4)  # a 20,000-line cell's facts hold about 110 MB: few texts are kept
def analyze_whole(source: str) -> CellFacts:
    """``analyze`` of every line (no ``MAX_LINES``), once per text: what reads a long cell whole (the
    server's second read of it, the dry run's safe-mode screen, origins in executed cells) shares one
    result. Callers must not change it."""
    return analyze(source, max_lines=None)


def _analyze(source: str, max_lines: int | None) -> CellFacts:
    original_lines = source.split("\n")
    magic, body_start = _split_cell_magic(source)
    if magic is not None:
        if magic not in _PYTHON_CELL_MAGICS:
            facts = CellFacts(source=source, python=_safe_transform(source)[0], magic=magic, analyzed=False)
            facts.untrust_from_start(UNTRUSTED_FILES)
            if magic not in ("markdown", "html", "latex", "javascript", "js", "svg", "md"):
                facts.untrust_from_start(UNTRUSTED_ALL)
            return facts
        body = "\n".join(original_lines[body_start:])
        parse_text, tree = _safe_transform(body)
        python = "\n" * body_start + parse_text
        pmap = PosMap(original_lines, parse_text.split("\n"), body_start)
    else:
        parse_text, tree = _safe_transform(source)
        python = parse_text
        pmap = PosMap(original_lines, python.split("\n"))
    facts = CellFacts(source=source, python=python, magic=magic)
    try:
        if tree is None:
            tree = ast.parse(parse_text)
    except SyntaxError as exc:
        facts.syntax_error = f"{type(exc).__name__}: {exc.msg}"
        lineno = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        end_lineno = exc.end_lineno or lineno
        end_col = (
            max((exc.end_offset or 0) - 1, col + 1) if end_lineno == lineno else (exc.end_offset or 1) - 1
        )
        facts.syntax_error_span = pmap.char_span(lineno, col, end_lineno, max(end_col, 0))
        return facts
    except (ValueError, RecursionError, MemoryError) as exc:
        facts.syntax_error = f"{type(exc).__name__}: {exc}"
        facts.syntax_error_span = Span(0, 0, 0, len(original_lines[0]) if original_lines else 0)
        return facts
    if python == parse_text:  # line numbers agree: the walk can use this very tree, and this map
        tree = _within(tree, max_lines, facts, pmap)
        facts.parsed.append(tree)
        facts.posmap = pmap
    else:  # the walk parses ``python`` (the body below blank lines where the magic was)
        facts.posmap = PosMap(original_lines, python.split("\n"))
    analyzer = _Analyzer(facts, pmap, parse_text)
    analyzer.run(tree)
    return facts


def _within(tree: ast.Module, max_lines: int | None, facts: CellFacts, pmap: PosMap) -> ast.Module:
    """The top-level statements that start within ``max_lines``; past them nothing is trusted."""
    body = tree.body
    if max_lines is None or not body or body[-1].lineno <= max_lines:
        return tree
    # at least one statement (a cell that opens with comments past the budget); a statement that starts
    # within the budget is read whole, however long (linear in its size)
    cut = max(next(i for i, stmt in enumerate(body) if stmt.lineno > max_lines), 1)
    if cut == len(body):
        return tree
    first = pmap.span(body[cut])
    facts.unchecked_from = first.line
    for key in (UNTRUSTED_ALL, UNTRUSTED_FILES, UNTRUSTED_MODULES):
        facts.untrust_from(key, (first.line, first.col))
    return ast.Module(body=body[:cut], type_ignores=tree.type_ignores)


def _safe_transform(source: str) -> tuple[str, ast.Module | None]:
    """Magics -> Python, and its tree when the text already parsed. Text that already parses as Python
    is left as it is (IPython would not change it), which skips IPython's token passes: they cost
    seconds on a cell of thousands of lines."""
    try:
        return source, _parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        return _transform(source), None
    except Exception:  # IPython rejects some malformed magics; parse the text as it is
        return source, None


@functools.lru_cache(maxsize=2)
def _parsed(source: str) -> ast.Module:
    """One parse per text: the server's first read of a long cell and its whole read share the tree (a
    parse of 20,000 lines costs half a second). Nothing changes a parsed tree: the first read keeps a
    new ``Module`` over the start of its body (``_within``)."""
    return ast.parse(source)
