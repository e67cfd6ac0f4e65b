"""The parameter a misspelt keyword meant, read from the callee's real signature in the kernel.

"date_range() got an unexpected keyword argument 'period'" names no parameter (a callee that takes
``**kwargs`` passes the word on, and the error comes from deeper down); the callee's signature does.
For each call on the failing line that passes the keyword, the callee's static chain (``pd.date_range``,
``df.drop``) is summarised by the probe, which reads a signature without running the object's code,
and the closest parameter name is added to the verdict's words as "did you mean 'periods'?", which
the families already read. A callee that is no static chain (the result of a call) or a kernel that
cannot answer leaves the verdict as it was.
"""

from __future__ import annotations

import ast
import difflib
import logging
import re
from typing import TYPE_CHECKING

from crane_lsp.snapshot import ProbeQuery

if TYPE_CHECKING:
    from crane_lsp.layers import KernelReader
    from crane_lsp.prediction import Prediction

log = logging.getLogger(__name__)

_UNKNOWN_KEYWORD = re.compile(r"unexpected keyword argument '(\w+)'|has no parameter '(\w+)'")
_ASK_S = 2.0  # the probe's answer, at most (a fix is a bonus: never wait long for it)


def _chain(node: ast.AST) -> str | None:
    """``pd.date_range`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def callees_passing(target: str, line: int, word: str) -> list[str]:
    """The static chains of the calls spanning 0-based ``line`` that pass keyword ``word``."""
    try:
        tree = ast.parse(target)
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not any(k.arg == word for k in node.keywords):
            continue
        if node.lineno - 1 <= line <= (node.end_lineno or node.lineno) - 1:
            chain = _chain(node.func)
            if chain is not None and chain not in found:
                found.append(chain)
    return found


async def near_keyword(link: KernelReader, target: str, prediction: Prediction) -> Prediction:
    """``prediction`` with "; did you mean 'periods'?" added to its raw message when a keyword the
    callee does not take is close to one of the callee's parameters."""
    words = f"{prediction.raw_message}\n{prediction.message}"
    found = _UNKNOWN_KEYWORD.search(words)
    if found is None or prediction.line is None or re.search(r"did you mean", words, re.IGNORECASE):
        return prediction
    word = found[1] or found[2]
    chains = callees_passing(target, prediction.line, word)
    if not chains:
        return prediction
    try:
        snap = await link.snapshot(ProbeQuery(chains=chains), timeout=_ASK_S)
    except Exception as exc:  # a busy or gone kernel: the families work from the words they have
        log.debug("no signature for %s: %s", chains, exc)
        return prediction
    for chain in chains:
        summary = snap.variables.get(chain)
        params = summary.params if summary is not None and summary.params else []
        names = [p.name for p in params if p.kind not in ("VAR_POSITIONAL", "VAR_KEYWORD")]
        close = difflib.get_close_matches(word, names, n=1)
        if close:
            said = f"{prediction.raw_message}; did you mean '{close[0]}'? ({chain} takes it)"
            return prediction.model_copy(update={"raw_message": said})
    return prediction
