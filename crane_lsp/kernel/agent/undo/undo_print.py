"""Fingerprints of the user's names, and what a cell changed: STANDARD LIBRARY ONLY, joined after
``standin.py`` (a preview, ``dryrun/preview.py``, diffs with them too).

The same code runs on both sides of a cell: in the held copy (the state before the cell, a jailed
fork: ``undo_hold.py``) and in the kernel after the cell. A fingerprint is cheap and never runs user
code (types by MRO, attributes read statically, ``safe.py``): identity (``id()``: the copy shares the
kernel's addresses), type, length, shape, dtype, columns, a hash of the data (whole up to
``_UFP_WHOLE``, else evenly spaced windows: a change between two windows can be missed, docs/undo.md)
and, for containers and plain objects, a hash of the ``id()``s they hold. Comparing two gives the
names a cell bound, rebound (another object), deleted and mutated in place (same object, other
fingerprint).
"""

import contextlib as _ufp_contextlib
import sys as _ufp_sys
import zlib as _ufp_zlib
from itertools import islice as _ufp_islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.safe import _instance_dict, _isa, _lib_attr, _qualname

#: IPython's own names: never the user's state (history, output cache, helpers).
_UFP_SKIP = frozenset(
    ("_", "__", "___", "_i", "_ii", "_iii", "_oh", "_ih", "_dh", "In", "Out", "exit", "quit", "get_ipython")
)
_UFP_WHOLE = 16 * 1024 * 1024  # bytes of an array hashed whole; above, windows
_UFP_WINDOWS = 64
_UFP_WINDOW = 64 * 1024
_UFP_ITEMS = 100_000  # container items whose ids are hashed; above, a sample


def _ufp_user_names(namespace, shell=None):
    """The user's names in ``namespace``: no IPython name (``_i3``, ``_12``...), no module, nothing
    IPython hid in ``user_ns_hidden`` (its own objects), no ``__dunder__``."""
    hidden = getattr(shell, "user_ns_hidden", None) if shell is not None else None
    hidden = hidden if type(hidden) is dict else {}
    module_type = type(_ufp_sys)
    names = []
    for name, value in list(namespace.items()):
        if type(name) is not str or name in _UFP_SKIP or name.startswith("__"):
            continue
        if (name[:2] == "_i" and name[2:].isdigit()) or (name[:1] == "_" and name[1:].isdigit()):
            continue
        if type(value) is module_type or (name in hidden and hidden[name] is value):
            continue
        names.append(name)
    return names


def _ufp_crc_ids(items, crc=0):
    """A hash of the ids of ``items`` (a sample when there are more than ``_UFP_ITEMS``)."""
    n = len(items)
    step = max(1, n // _UFP_ITEMS)
    seq = items if step == 1 else [items[i] for i in range(0, n, step)]
    return _ufp_zlib.crc32(b"".join(id(x).to_bytes(8, "little") for x in seq), crc)


def _ufp_crc_memory(view):
    """A hash of a byte view: whole up to ``_UFP_WHOLE``, else ``_UFP_WINDOWS`` evenly spaced windows."""
    n = len(view)
    if n <= _UFP_WHOLE:
        return _ufp_zlib.crc32(view), False
    crc = 0
    stride = (n - _UFP_WINDOW) // (_UFP_WINDOWS - 1)
    for k in range(_UFP_WINDOWS):
        start = k * stride
        crc = _ufp_zlib.crc32(view[start : start + _UFP_WINDOW], crc)
    return _ufp_zlib.crc32(view[n - _UFP_WINDOW :], crc), True


def _ufp_array(value, out):
    """An ndarray: shape, dtype, the hash of its bytes (pointers for an object array: its items' ids)."""
    out["shape"] = list(value.shape)
    out["dtype"] = str(value.dtype)
    try:
        view = memoryview(value)
        if not view.contiguous:
            out["hash"] = None  # a strided view: its base is fingerprinted where it has a name
            return
        out["hash"], sampled = _ufp_crc_memory(view.cast("B"))
        if sampled:
            out["sampled"] = True
        out["data"] = value.__array_interface__["data"][0]  # where its bytes are (undo reads them there)
    except (TypeError, ValueError, BufferError):  # no buffer: datetimes as bytes, objects as their ids
        if value.dtype.hasobject:
            out["hash"] = _ufp_crc_ids(list(value.ravel()[:_UFP_ITEMS]))
        elif value.flags.c_contiguous:
            out["hash"] = _ufp_crc_memory(memoryview(value.view("u1")).cast("B"))[0]
        else:
            out["hash"] = None


def _ufp_frame(value, out):
    """A pandas DataFrame or Series: shape, columns, dtypes, and each backing array's id and hash."""
    out["shape"] = list(value.shape)
    if _isa(value, "dataframe"):
        out["columns"] = [str(c) for c in list(value.columns)[:200]]
        out["dtypes"] = [str(d) for d in list(value.dtypes)[:200]]
    else:
        out["dtype"] = str(value.dtype)
    arrays = []
    try:
        mgr = _lib_attr(value, "_mgr")
        arrays = [b.values for b in mgr.blocks]
    except Exception:
        pass
    crc = 0
    for arr in arrays:
        crc = _ufp_zlib.crc32(id(arr).to_bytes(8, "little"), crc)
        if not _isa(arr, "ndarray"):  # an extension array backed by one (datetimes, categoricals)
            with _ufp_contextlib.suppress(Exception):
                arr = _lib_attr(arr, "_ndarray")
        if _isa(arr, "ndarray"):
            sub: dict[str, object] = {}
            _ufp_array(arr, sub)
            crc = _ufp_zlib.crc32(str(sub.get("hash")).encode(), crc)
    out["hash"] = crc
    with _ufp_contextlib.suppress(Exception):  # the index: its identity (reset_index(inplace=True))
        out["index_id"] = id(_lib_attr(value, "index"))


def _ufp_print(value):
    """One value's fingerprint (JSON-able); never calls user code."""
    cls = type(value)
    out = {"id": id(value), "type": _qualname(cls)}
    try:
        if cls in (int, float, complex, bool, type(None)):
            out["hash"] = _ufp_zlib.crc32(repr(value).encode())
        elif cls in (str, bytes):
            out["len"] = len(value)
            data = value.encode("utf-8", "surrogatepass") if cls is str else value
            out["hash"] = _ufp_crc_memory(memoryview(data))[0]
        elif cls is bytearray:
            out["len"] = len(value)
            out["hash"] = _ufp_crc_memory(memoryview(value))[0]
        elif cls in (list, tuple):
            out["len"] = len(value)
            out["hash"] = _ufp_crc_ids(value)
        elif cls is dict:  # the first _UFP_ITEMS items (insertion order): a huge dict is not copied
            out["len"] = len(value)
            items = _ufp_islice(value.items(), _UFP_ITEMS)
            out["hash"] = _ufp_crc_ids([x for kv in items for x in kv])
        elif cls in (set, frozenset):
            out["len"] = len(value)
            out["hash"] = _ufp_crc_ids(sorted(id(x) for x in _ufp_islice(value, _UFP_ITEMS)))
        elif _isa(value, "ndarray"):
            _ufp_array(value, out)
        elif _isa(value, "dataframe") or _isa(value, "series"):
            _ufp_frame(value, out)
        elif _ufp_is_thread(cls):
            pass  # identity only: its state is the thread's own, and a fork marks it stopped in the copy
        else:
            attrs = _instance_dict(value)
            if attrs is not None:  # a plain object (a model...): what its attributes are bound to
                out["len"] = len(attrs)
                out["hash"] = _ufp_crc_ids([x for kv in list(attrs.items()) for x in kv])
    except Exception as exc:  # a fingerprint that cannot be taken says so; it still has an identity
        out["error"] = type(exc).__name__
    return out


def _ufp_is_thread(cls):
    """Whether ``cls`` is a ``threading.Thread``: Python's fork handler marks every thread but the
    forking one stopped in the child (``_is_stopped``, ``_tstate_lock``), so the held copy would see
    each running thread "changed" by the cell, and offer to restore it stopped."""
    threading = _ufp_sys.modules.get("threading")
    thread = getattr(threading, "Thread", None)
    return thread is not None and thread in getattr(cls, "__mro__", ())


def _ufp_all(namespace, shell=None):
    """``{name: fingerprint}`` for the user's names in ``namespace``."""
    return {
        name: _ufp_print(namespace[name]) for name in _ufp_user_names(namespace, shell) if name in namespace
    }


def _ufp_diff(before, after):
    """What a cell changed, from the fingerprints before and after it: names ``bound`` (new),
    ``rebound`` (another object), ``deleted`` and ``mutated`` (the same object, changed in place)."""
    diff: dict[str, list[str]] = {"bound": [], "rebound": [], "deleted": [], "mutated": []}
    for name, now in after.items():
        was = before.get(name)
        if was is None:
            diff["bound"].append(name)
        elif was["id"] != now["id"] or was["type"] != now["type"]:
            diff["rebound"].append(name)
        elif was != now:
            diff["mutated"].append(name)
    diff["deleted"] = [name for name in before if name not in after]
    return diff


def _ufp_shallow(fingerprint):
    """A fingerprint without the identities (what a value restored by copy keeps)."""
    return {k: v for k, v in fingerprint.items() if k not in ("id", "index_id")}
