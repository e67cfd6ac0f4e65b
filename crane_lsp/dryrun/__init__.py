"""The dry-run layer: observe the crash in a forked copy of the kernel instead of guessing it.

The kernel side (``kernel/agent/dryrun/dryrun.py`` and the ``kernel/agent/jail/`` modules) forks,
confines the child with seccomp and Landlock, and runs the cell; this side picks the budget, in
``safe`` mode skips cells a static screen says the jail would only stop, and turns the outcome into
a ``Prediction``: ``raised`` is an *observed* crash on its exact line, ``completed`` a final "ran
clean"; a timeout, a blocked operation or a cell that ends the kernel falls through with a headline
saying so. ``prepare`` asks the kernel for a child forked and jailed ahead (the server asks when the
user starts editing), so the dry run that follows skips the fork and the jail.

The package: ``runner.py`` (the layer: ``DryRunner``), ``screen.py`` (safe mode's static screen),
``outcome.py`` (the sandbox's answer and its Prediction), ``causes.py`` and ``failure_facts.py``
(the cause of an observed crash from the facts at its line), ``shortened.py`` (the verdict of the
runs on samples beside a full run that did not finish).
"""

from crane_lsp.dryrun.outcome import DryRunOutcome, DryRunPrepared, outcome_to_prediction
from crane_lsp.dryrun.runner import DryRunner
from crane_lsp.dryrun.screen import ScreenResult, screen

__all__ = ["DryRunOutcome", "DryRunPrepared", "DryRunner", "ScreenResult", "outcome_to_prediction", "screen"]
