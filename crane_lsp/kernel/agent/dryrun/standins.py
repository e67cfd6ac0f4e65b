"""The shape-level run's parts together: torch's stand-ins (standin.py) and TensorFlow's (standin_tf.py).
STANDARD LIBRARY ONLY.

Joined after both and before ``dryrun.py``, which calls ``_sta_begin`` in the jailed child before the
cell and ``_sta_fences_devices`` in the kernel and in the child (the jail's device mappings).
"""

import contextlib as _sta_contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from standin.py and standin_tf.py, joined before
    from crane_lsp.kernel.agent.dryrun.standin import _sti_begin, _sti_note, _sti_wanted
    from crane_lsp.kernel.agent.dryrun.standin_tf import _stf_begin, _stf_gpu, _stf_note


def _sta_begin(namespace, code, payload):
    """Before the cell: ``(standin, notes, mode)`` for the verdict's ``standin`` field, its notes and
    the context entered around the cell; None when neither path is wanted. Raises when a stand-in
    cannot be made (the dry run then answers ``unavailable``)."""
    torch_part = _sti_begin(namespace, code, payload)
    tf_part = _stf_begin(namespace, code, payload)
    found = [part for part in (torch_part, tf_part) if part]
    if not found:
        return None
    standin = {
        "why": found[0]["why"],
        "names": sorted({name for part in found for name in part["names"]}),
        "devices": sorted({device for part in found for device in part["devices"]}),
        "how": [part.get("how", "meta") for part in found],
    }
    notes = ([_sti_note(torch_part)] if torch_part else []) + ([_stf_note(tf_part)] if tf_part else [])
    return standin, notes, _sta_modes([part["mode"] for part in found])


@_sta_contextlib.contextmanager
def _sta_modes(modes):
    with _sta_contextlib.ExitStack() as stack:
        for mode in modes:
            stack.enter_context(mode)
        yield


def _sta_fences_devices():
    """Whether a dry run of this kernel is a shape-level one whose child makes no call into a GPU
    (torch's CUDA or TensorFlow's GPU initialised): its device mappings are then fenced, not refused."""
    return _sti_wanted({}) == "cuda" or _stf_gpu()
