"""What the kernel holds near a wrong name: the callee's parameter a misspelt keyword meant, the
frame's column a missing label meant. Both are read from the live state by the probe, without
running the object's code, and added to the verdict's words as "did you mean ...?", which the
families already read; the dry run then decides, as for any candidate.

The parameter:

"date_range() got an unexpected keyword argument 'period'" names no parameter (a callee that takes
``**kwargs`` passes the word on, and the error comes from deeper down, in that function's words, or a
library's own: "Unrecognized keyword arguments passed to Dense"); the callee's signature does. For
each call on the failing line that passes keywords, the callee's static chain (``pd.date_range``,
``df.drop``) is summarised by the probe, which reads a signature without running the object's code;
a keyword that is not among its named parameters but close to one gets "did you mean 'periods'?" in
the verdict's words, which the families already read. A callee that is no static chain (the result
of a call) or a kernel that cannot answer leaves the verdict as it was.

An observed crash usually says it already: the crashed copy reads the callee it holds, also an object
the same cell built (``kernel/agent/dryrun/failkeywords.py``, in the cause). This reads the kernel for
the verdicts whose words do not come from a crashed copy: a check's, re-observed as Python words it.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import re
from typing import TYPE_CHECKING

from crane_lsp.analysis.origins import analyze_cached
from crane_lsp.analysis.values import dotted
from crane_lsp.fixes.lines import near_labels
from crane_lsp.kernel.agent.dryrun.failkeywords import _fkw_nearest
from crane_lsp.snapshot import ProbeQuery

if TYPE_CHECKING:
    from crane_lsp.layers import KernelReader
    from crane_lsp.prediction import Prediction
    from crane_lsp.snapshot import ObjectSummary

log = logging.getLogger(__name__)

_ASK_S = 2.0  # the probe's answer, at most (a fix is a bonus: never wait long for it)


def keyword_calls(target: str, line: int) -> dict[str, list[str]]:
    """The static chains of the calls spanning 0-based ``line`` that pass keywords -> those keywords."""
    try:
        tree = ast.parse(target)
    except SyntaxError:
        return {}
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        if node.lineno - 1 <= line <= (node.end_lineno or node.lineno) - 1:
            chain = dotted(node.func)
            if chain is not None:
                words = found.setdefault(chain, [])
                words += [k.arg for k in node.keywords if k.arg is not None and k.arg not in words]
    return found


#: a parameter in a signature's text: after "(" or ", ", not starred ("*args", "**kwargs" are no names)
_PARAMETER = re.compile(r"(?:^\(|,\s*)([A-Za-z_]\w*)\s*(?=[:=,)])")


def parameter_names(summary: ObjectSummary | None) -> list[str]:
    """The callee's named parameters: its bound ``params`` where the probe gives them (a signature no
    wrapper can widen), else read from its signature's text (a callable whose wrapper or
    ``**kwargs`` may take more still names the ones it has)."""
    if summary is None:
        return []
    if summary.params:
        return [p.name for p in summary.params if p.kind not in ("VAR_POSITIONAL", "VAR_KEYWORD")]
    return _PARAMETER.findall(summary.signature or "")


def nearest(word: str, names: list[str]) -> str | None:
    """The closest of ``names`` to ``word``, ties to the longer shared beginning (``cs`` -> ``c``): the
    crashed copy's own rule (``failkeywords._fkw_nearest``, standard library only), so both agree."""
    return _fkw_nearest(word, names)


def _from_module(chain: str, imported: dict[str, str]) -> str:
    root, _, rest = chain.partition(".")
    module = imported.get(root)
    return chain if module is None else module + ("." + rest if rest else "")


async def near_keyword(link: KernelReader, target: str, prediction: Prediction) -> Prediction:
    """``prediction`` with "'period' is not a parameter of pd.date_range: did you mean 'periods'?"
    added to its raw message when a call on the failing line passes a keyword that is not among the
    callee's named parameters and is close to one of them (the words of the error are not needed: a
    callee's ``**kwargs`` may pass the keyword on to a function that words it otherwise)."""
    words = f"{prediction.raw_message}\n{prediction.message}"
    if prediction.line is None or re.search(r"did you mean", words, re.IGNORECASE):
        return prediction
    calls = await asyncio.to_thread(keyword_calls, target, prediction.line)  # a parse: off the event loop
    if not calls:
        return prediction
    # a root the cell itself imports (``import pandas as pd`` above the call) is read from the module
    # the kernel has loaded (``@pandas.read_csv``), as the checks read it; never imported for this
    imported = (await asyncio.to_thread(analyze_cached, target)).imported_names()
    asked = {c: _from_module(c, imported) for c in calls}
    try:
        bare = [c for c in asked.values() if "." not in c]  # a name alone is summarised as a variable
        query = ProbeQuery(names=bare, chains=[c for c in asked.values() if c not in bare])
        snap = await link.snapshot(query, timeout=_ASK_S)
    except Exception as exc:  # a busy or gone kernel: the families work from the words they have
        log.debug("no signature for %s: %s", list(asked), exc)
        return prediction
    for chain, probed in asked.items():
        summary = snap.variables.get(probed)
        names = parameter_names(summary)
        for word in calls[chain]:
            close = nearest(word, names) if names and word not in names else None
            if close is not None:
                hint = f"'{word}' is not a parameter of {chain}: did you mean '{close}'?"
                said = f"{prediction.raw_message}; {hint}"
                return prediction.model_copy(update={"raw_message": said})
    return prediction


_COLUMNS_ASKED = 500  # column names the probe returns for a frame a missing label is looked for in


def _subscripted_with(target: str, line: int, labels: set[str]) -> list[str]:
    """Static chains subscripted on 0-based ``line`` by one of ``labels`` (alone or in a list)."""
    try:
        tree = ast.parse(target)
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript) or node.lineno - 1 != line:
            continue
        keys = node.slice.elts if isinstance(node.slice, ast.List | ast.Tuple) else [node.slice]
        used = {k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        chain = dotted(node.value)
        if used & labels and chain is not None and chain not in found:
            found.append(chain)
    return found


async def near_label(link: KernelReader, target: str, prediction: Prediction) -> Prediction:
    """``prediction`` with "'num11' is not a column of df: did you mean 'num1'?" added to its raw
    message when a ``KeyError``'s label, subscripted on the failing line of a frame the kernel
    holds (``df[['num11', 'b']]``), is near one of that frame's columns."""
    words = f"{prediction.raw_message}\n{prediction.message}"
    if prediction.exception != "KeyError" or prediction.line is None:
        return prediction
    if re.search(r"did you mean", words, re.IGNORECASE):
        return prediction
    labels = set(re.findall(r"'([^']+)'", words))
    frames = await asyncio.to_thread(_subscripted_with, target, prediction.line, labels)  # off the loop
    if not frames:
        return prediction
    bare = [c for c in frames if "." not in c]
    query = ProbeQuery(names=bare, chains=[c for c in frames if c not in bare], max_columns=_COLUMNS_ASKED)
    try:
        snap = await link.snapshot(query, timeout=_ASK_S)
    except Exception as exc:  # a busy or gone kernel: the families work from the words they have
        log.debug("no columns for %s: %s", frames, exc)
        return prediction
    for frame in frames:
        summary = snap.variables.get(frame)
        known = [str(c.name) for c in (summary.columns or [])] if summary is not None else []
        for label in sorted(labels):
            if label in known:
                continue
            near = near_labels(label, known) if known else []
            if near:
                hint = f"'{label}' is not a column of {frame}: did you mean '{near[0]}'?"
                return prediction.model_copy(update={"raw_message": f"{prediction.raw_message}; {hint}"})
    return prediction
