"""Pause the cyclic garbage collector while one cell is parsed, scanned or walked.

A 20,000-line cell makes hundreds of thousands of AST nodes and facts, none of them in reference
cycles; the collector's generation-2 passes over them cost as much as the analysis itself. Pausing
only defers collection: it is switched back on at the end (unless someone else had it off).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
