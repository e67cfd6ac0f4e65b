"""Where a value came from: the executed cell (and line) that last assigned a variable.

Below the pipeline and the dry run's failure facts, which both name origins, so that neither has to
import the other (the dry run is a layer the pipeline calls)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze, analyze_whole
from crane_lsp.prediction import Origin


@functools.lru_cache(maxsize=512)
def analyze_cached(source: str) -> CellFacts:
    """Executed cells are re-read on every prediction for origins; parse each text once."""
    return analyze(source)


def origins(variables: Iterable[str], executed: Sequence[str]) -> list[Origin]:
    """For each variable, the executed cell (and line) that last assigned it, newest first wins."""
    found: list[Origin] = []
    for var in dict.fromkeys(variables):
        base = var.split(".", 1)[0].split("[", 1)[0]
        for index in range(len(executed) - 1, -1, -1):
            facts = analyze_cached(executed[index])
            if facts.unchecked_from is not None:  # a long cell read in part: its last assignment may be later
                facts = analyze_whole(executed[index])
            lines = [a.span.line for a in facts.defines if a.name == base]
            if lines:
                found.append(Origin(variable=base, cell=index, line=lines[-1]))
                break
    return found
