"""Pause the cyclic garbage collector while one cell is parsed, scanned or walked.

A 20,000-line cell makes hundreds of thousands of AST nodes and facts, none of them in reference
cycles; the collector's generation-2 passes over them cost as much as the analysis itself. Pausing
only defers collection: it is switched back on at the end (unless someone else had it off).

Switched back on plainly, the first allocation after the pause would still run a young-generation pass
over every object made during it (a tenth of a second on that cell). ``gc.freeze()`` then ``unfreeze()``
moves them all to the oldest generation at no cost instead: full collections still look at them (and
reference counting frees them as usual). Skipped when something else keeps objects frozen, since
``unfreeze`` would release those too.
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
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
