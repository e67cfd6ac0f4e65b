"""``%timeit`` and ``%%timeit`` in the dry run's child: the statement runs once. STANDARD LIBRARY ONLY.

Joined into the probe's private module: top-level names carry the ``_dti_`` prefix.

The real magic runs the statement thousands of times to time it, so a dry run of it ran out of
budget by design. The verdict is about crashing, not timing: in the forked child (only there) the
magic's ``Timer`` runs its setup and statement once, on its first call, and answers one second to
every call, so IPython's loop that picks the number of runs stops at once and each repeat is free.
An exception of the statement propagates as in the real run (its frames are in ``<magic-timeit>``,
whose lines are those of a ``%%timeit`` cell's body).
"""

import sys as _dti_sys


def _dti_run_once():
    """In this process (the child), have the shell's ``%timeit``/``%%timeit`` run their statement
    once. IPython loads the magic's module on its first use, so the Timer is patched then."""
    ipython = _dti_sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    line_magic, cell_magic = shell.run_line_magic, shell.run_cell_magic

    def run_line_magic(magic_name, line, _stack_depth=1):
        if magic_name == "timeit":
            _dti_patch_timer()
        return line_magic(magic_name, line, _stack_depth=_stack_depth + 1)  # the caller's locals

    def run_cell_magic(magic_name, line, cell):
        if magic_name == "timeit":
            _dti_patch_timer()
        return cell_magic(magic_name, line, cell)

    shell.run_line_magic, shell.run_cell_magic = run_line_magic, run_cell_magic
    return True


def _dti_patch_timer():
    """IPython's timeit ``Timer`` runs the statement on its first call only and says 1 s."""
    import IPython.core.magics.execution as execution  # what the magic itself loads now

    timer = execution.Timer
    if getattr(timer, "_dti_once", False):
        return
    original = timer.timeit

    def timeit(self, number=1):
        if not getattr(self, "_dti_ran", False):
            self._dti_ran = True
            original(self, 1)
        return 1.0

    setattr(timer, "timeit", timeit)  # noqa: B010 - on the class, in the child only
    setattr(timer, "_dti_once", True)  # noqa: B010
