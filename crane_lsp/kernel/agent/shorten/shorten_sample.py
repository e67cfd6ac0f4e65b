"""The shortened dry run, in the jailed child: STANDARD LIBRARY ONLY, joined before ``dryrun.py``.

A slow cell is run again in a fresh jailed fork on a small, consistent sample of the large data it
names: every array-like with the same number of rows gets the SAME sorted row positions (``X`` and
``y`` stay aligned), which always hold the first and last row and members of every class of each
label-like column; a length that is also a feature dimension of another object (``len(coef)`` ==
``X.shape[1]``) is never sampled. Estimators named by the cell get fewer restarts/trees/iterations,
and ``for ... in range(n)`` loops run their first iterations and their last (the rewrite is made in
the kernel, ``shorten.py``; the helpers it calls live here). All of it happens in the child's own
copy of the state: the fork may change it freely, the kernel never sees it.

On a failure the child adds facts the client needs to judge whether the crash hinges on the
sample: for a ``KeyError``, whether its key is a row label or a value of the full data.
"""

import contextlib as _shs_contextlib
import sys as _shs_sys
import time as _shs_time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the kernel these come from the modules joined before this one
    from crane_lsp.kernel.agent.guard import _SandboxBlocked

_SHS_ROWS_MIN = 1000  # an object with fewer rows runs whole
_SHS_MAX_CLASSES = 100  # a 1-D column with more distinct values is no label
_SHS_LABEL_COLUMNS = 30  # at most this many columns of a frame are read for classes
#: iteration parameters and their cap for a shortened run with ``cap`` iterations per loop (2 or 3)
_SHS_CAPS = {
    "n_init": lambda cap: cap - 1,
    "n_estimators": lambda cap: 5 * cap,
    "max_iter": lambda cap: 50 * cap,
    "n_iter": lambda cap: 50 * cap,
    # one epoch in both runs: an epoch is the slow unit (an eager Keras epoch in the fork costs
    # seconds), and the second run differs by its sample already
    "epochs": lambda cap: 1,
    "n_epochs": lambda cap: 1,
    "num_epochs": lambda cap: 1,
    "max_epochs": lambda cap: 1,
    "nb_epoch": lambda cap: 1,
    "num_boost_round": lambda cap: 5 * cap,
    "iterations": lambda cap: 5 * cap,
}
_SHS_CONTAINER_MAX = 64  # a dict, list or tuple with at most this many items is looked into
#: type names of the data a sample shortens (with their library: numpy, pandas, polars, torch, scipy)
_SHS_DATA_TYPES = frozenset(
    {"ndarray", "DataFrame", "Series", "Tensor", "DataLoader", "csr_matrix", "csc_matrix", "coo_matrix",
     "csr_array", "csc_array", "coo_array"}
)  # fmt: skip
_SHS_RANGE = "__crane_short_range__"
_SHS_WHILE = "__crane_short_while__"
_SHS_WHILE_START = "__crane_short_while_start__"
_SHS_COMPREHENSION_MIN = 1000  # a comprehension's range shorter than this runs whole
_SHS_CAP = "__crane_short_cap__"

_shs_state: dict[str, Any] = {}  # in the child only: the full objects, for the failure facts


def _shs_code_names(code):
    """Every global name the compiled cell (and the functions/comprehensions in it) may read."""
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, type(code)))
    return names


def _shs_kind(value):
    """The row-sampling kind of ``value`` (by type name: nothing is imported), or None."""
    kind = type(value)
    module, name = kind.__module__ or "", kind.__name__
    root = module.split(".", 1)[0]
    try:
        if module == "numpy" and name == "ndarray":
            return "numpy" if value.ndim >= 1 else None
        if root == "pandas" and name in ("DataFrame", "Series"):
            return "pandas"
        if root == "polars" and name in ("DataFrame", "Series"):
            return "polars"
        if root == "torch" and name == "Tensor":
            return "torch" if value.dim() >= 1 and not value.requires_grad else None
        if module.startswith("torch.utils.data") and name == "DataLoader":
            sampler = getattr(value, "batch_sampler", None)
            return "loader" if sampler is not None and hasattr(sampler, "sampler") else None
        if module.startswith("scipy.sparse") and len(getattr(value, "shape", ())) == 2:
            return "sparse"
        if kind is list:
            return "list"
        if root == "tensorflow" and name == "EagerTensor":
            return "tf" if len(value.shape) >= 1 else None
        return _shs_kind_by_class(kind)
    except Exception:
        return None
    return None


def _shs_kind_by_class(kind):
    """Datasets recognised by a base class (read off the type, never the object): ``tfdata`` (a
    ``tf.data`` pipeline), ``batches`` (a Keras ``PyDataset``/``Sequence``: ImageDataGenerator's
    iterators too), ``dataset`` (a map-style torch dataset); else None."""
    for base in kind.__mro__:
        module, name = base.__module__ or "", base.__name__
        if module.startswith("tensorflow.python.data") and name == "DatasetV2":
            return "tfdata"
        if module.startswith(("keras", "tf_keras")) and name in ("PyDataset", "Sequence"):
            return "batches"
        if module == "torch.utils.data.dataset" and name == "Dataset":
            if "__getitem__" in dir(kind) and "__len__" in dir(kind) and base is not kind:
                return "dataset"
            return None
    return None


def _shs_is_data(value, depth=0):
    """Whether ``value`` is data a sample could shorten, judged by its TYPE alone (the kernel's side
    of the choice: no attribute of a user object is read; a small dict, list or tuple is looked
    into, one level)."""
    kind = type(value)
    module = kind.__module__ or ""
    root = module.split(".", 1)[0]
    if root in ("numpy", "pandas", "polars", "torch", "scipy") and kind.__name__ in _SHS_DATA_TYPES:
        return True
    if root == "tensorflow" and kind.__name__ == "EagerTensor":
        return True
    if kind in (list, tuple, dict) or (isinstance(value, tuple) and hasattr(kind, "_fields")):
        size = len(value)
        if kind is list and size >= _SHS_ROWS_MIN:
            return True
        if depth == 0 and size <= _SHS_CONTAINER_MAX:
            items = dict.values(value) if kind is dict else value
            return any(_shs_is_data(item, 1) for item in items)
        return False
    try:
        return _shs_kind_by_class(kind) is not None
    except Exception:
        return False


def _shs_rows(kind, value):
    """Rows (items of a dataset; elements of a ``tf.data`` pipeline, batches of a Keras one)."""
    if kind == "loader":
        return len(value.dataset)
    if kind in ("numpy", "torch", "sparse", "tf"):
        return int(value.shape[0])
    if kind == "tfdata":
        return int(value.cardinality())  # -1 infinite, -2 unknown: never sampled
    return len(value)


def _shs_feature_dims(kind, value):
    """Sizes of ``value`` that are not rows (a length equal to one of them is a feature axis)."""
    if kind in ("numpy", "torch", "sparse", "tf"):
        return {int(d) for d in value.shape[1:] if d is not None}
    if kind in ("pandas", "polars") and len(getattr(value, "shape", ())) == 2:
        return {int(value.shape[1])}
    return set()


def _shs_label_arrays(kind, value, np):
    """``value``'s label-like columns (integer, boolean, text or categories): 1-D NumPy arrays, or
    pandas series as they are (factorised without a copy to NumPy objects)."""
    found: list[Any] = []
    if np is None:
        return found
    try:
        if kind == "numpy" and value.ndim == 1:
            found.append(value)
        elif kind == "torch" and value.dim() == 1:
            found.append(value.numpy())
        elif kind == "pandas" and value.ndim == 1:
            found.append(value)
        elif kind == "pandas":
            for column in list(value.columns)[:_SHS_LABEL_COLUMNS]:
                found.append(value[column])
        elif kind == "polars":
            columns = [value] if not hasattr(value, "columns") else [value[c] for c in value.columns]
            found.extend(c.to_numpy() for c in columns[:_SHS_LABEL_COLUMNS] if not c.dtype.is_float())
        elif kind == "tf" and len(value.shape) == 1:
            found.append(value.numpy())
        elif kind in ("loader", "dataset"):
            dataset = value.dataset if kind == "loader" else value
            tensors = getattr(dataset, "tensors", None)
            targets = tensors[-1] if tensors else getattr(dataset, "targets", None)
            if targets is not None:
                found.append(np.asarray(targets.numpy() if hasattr(targets, "numpy") else targets))
    except Exception:
        pass
    return [a for a in found if getattr(a, "ndim", 0) == 1 and a.dtype.kind in "iubOSUc"]


def _shs_class_members(values, np, wanted, from_end):
    """Positions of a few members of each class of ``values`` (enough for a stratified split or a
    classifier; the last ones in the second sample); None if ``values`` are no labels."""
    pandas = _shs_sys.modules.get("pandas")
    try:
        if pandas is not None and len(pandas.unique(values[:5000])) > _SHS_MAX_CLASSES:
            return None  # an identifier, not a label: no need to read it all
        if pandas is not None and (values.dtype.kind in "OSU" or not hasattr(values, "ravel")):
            inverse, classes = pandas.factorize(values)  # hashing: sorting text is slow
            inverse = np.asarray(inverse)
        else:
            classes, inverse = np.unique(values, return_inverse=True)
    except Exception:  # unorderable or unhashable objects: no classes read
        return None
    count = len(classes)
    if count > _SHS_MAX_CLASSES or count < 2:
        return None
    if inverse.size and inverse.min() < 0:  # factorize's missing values: a class of their own
        inverse = np.where(inverse < 0, count, inverse)
        count += 1
    per_class = max(2, min(10, wanted // (2 * count)))
    return _shs_first_members(inverse, count, per_class, from_end, np)


def _shs_first_members(inverse, count, per_class, from_end, np):
    """The first (or last) ``per_class`` positions of each class, read in blocks from that end: the
    common classes are found in the first block, only the rare ones need a longer look."""
    need = dict.fromkeys(range(count), per_class)
    kept: list[int] = []
    size, step = len(inverse), 1 << 16
    for start in range(0, size, step):
        if not need:
            break
        low, high = (max(0, size - start - step), size - start) if from_end else (start, start + step)
        block = inverse[low:high]
        for label in list(need):
            hits = np.flatnonzero(block == label)
            hits = hits[-need[label] :] if from_end else hits[: need[label]]
            kept.extend((hits + low).tolist())
            need[label] -= len(hits)
            if need[label] <= 0:
                del need[label]
    return kept


def _shs_positions(rows, wanted, seed, labels, np):
    """Sorted row positions: the first and last row, members of every class, then a seeded fill."""
    import random

    chosen = {0, rows - 1}
    deadline = _shs_time.perf_counter() + 0.3  # reading classes is a bonus: bounded
    for values in labels:
        if _shs_time.perf_counter() > deadline:
            break
        members = _shs_class_members(values, np, wanted, from_end=seed % 2 == 1)
        if members is not None:
            chosen.update(members)
    fill = random.Random(seed).sample(range(rows), min(rows, max(0, wanted - len(chosen)) + 8))
    for position in fill:
        if len(chosen) >= wanted:
            break
        chosen.add(position)
    return sorted(chosen)


def _shs_take(kind, value, positions, np, seed):
    """``value`` with only the rows at ``positions`` (a new object; the kernel's stays as it was)."""
    if kind == "numpy":
        return value[np.asarray(positions, dtype=np.intp)]
    if kind == "pandas":
        return value.iloc[positions]
    if kind == "polars":
        return value[positions]
    if kind == "torch":
        torch = _shs_sys.modules["torch"]
        return value.index_select(0, torch.as_tensor(positions, dtype=torch.long))
    if kind == "sparse":
        return value.tocsr()[positions].asformat(value.format)
    if kind == "tf":  # through NumPy: a TensorFlow op on the full tensor would need the kernel's pools
        tf = _shs_sys.modules["tensorflow"]
        return tf.convert_to_tensor(value.numpy()[np.asarray(positions, dtype=np.intp)])
    if kind == "dataset":
        return _shs_dataset_subset(value, positions)
    if kind == "list":
        return [value[i] for i in positions]
    if kind == "loader":  # the loader reads only the sampled items, shuffled if it shuffled
        order = list(positions)
        if type(value.batch_sampler.sampler).__name__ == "RandomSampler":
            import random

            random.Random(seed).shuffle(order)
        value.batch_sampler.sampler = order
        return value
    return value


def _shs_dataset_subset(value, positions):
    """A map-style torch dataset reading only the items at ``positions`` (as a ``Subset`` of them
    would), kept the same object of a subclass of its class: its attributes (``classes``,
    ``transform``) and ``isinstance`` stay as they were, so no AttributeError is invented."""
    import operator

    cls = type(value)

    def __len__(self):
        return len(positions)

    def __getitem__(self, index):
        with _shs_contextlib.suppress(TypeError):  # beyond the sample: IndexError, as at the end
            index = positions[operator.index(index)]
        return cls.__getitem__(self, index)

    members = {"__len__": __len__, "__getitem__": __getitem__, "__module__": cls.__module__}
    value.__class__ = type(cls.__name__, (cls,), {**members, "__qualname__": cls.__qualname__})
    return value


def _shs_cap_estimators(namespace, names, cap, record):
    """Fewer restarts/trees/iterations on the estimators the cell names (their copies in the fork)."""
    for name in sorted(names):
        value = namespace.get(name)
        get_params = getattr(type(value), "get_params", None)
        if get_params is None or not hasattr(type(value), "set_params"):
            continue
        try:
            params = value.get_params(deep=True)
        except Exception:
            continue
        changes = {}
        for key, setting in params.items():
            rule = _SHS_CAPS.get(key.rsplit("__", 1)[-1])
            if rule is not None and type(setting) is int and setting > rule(cap):
                changes[key] = rule(cap)
                record.append({"what": f"{name}.{key}", "param": key, "kept": rule(cap), "of": setting})
        if changes:
            with _shs_contextlib.suppress(Exception):
                value.set_params(**changes)


def _shs_sample(namespace, code, plan, state):
    """Replace the large data the cell names by samples in ``namespace`` (the child's copy).

    ``plan``: ``{"rows": wanted rows, "seed": int, "cap": iterations per shortened loop}``.
    Returns what was shortened: ``{"rows": [...], "params": [...], "loops": {}}``. A sample that
    cannot be made (half the names replaced would invent crashes) stops the run: nothing of the
    cell runs, the verdict is ``blocked`` with the reason."""
    try:
        return _shs_sample_names(namespace, code, plan)
    except Exception as exc:
        state["blocked"] = f"the sample could not be made: {type(exc).__name__}: {exc}"[:300]
        raise _SandboxBlocked(state["blocked"]) from None


class _ShsPlace:
    """Where a sample goes in the child's copy: ``target[key] = new`` (the namespace, a dict or a
    list, changed in place), then for a tuple's items the tuple rebuilt under its name."""

    def __init__(self, target, key, rebuild=None):
        self.target, self.key, self.rebuild = target, key, rebuild

    def __call__(self, new):
        self.target[self.key] = new
        if self.rebuild is not None:
            self.rebuild()


def _shs_candidates(namespace, names):
    """``(what, kind, value, place)`` for each sampleable object the cell names, also the items of
    a small dict, list or tuple it names (``data['train']``)."""
    found = []
    for name in sorted(names):
        value = namespace.get(name)
        if value is None:
            continue
        kind = _shs_kind(value)
        if kind is not None:
            found.append((name, kind, value, _ShsPlace(namespace, name)))
            continue
        container = type(value)
        tuple_like = isinstance(value, tuple) and (container is tuple or hasattr(container, "_fields"))
        if not (container in (dict, list) or tuple_like) or len(value) > _SHS_CONTAINER_MAX:
            continue
        rebuild = None
        if tuple_like:
            items: Any = list(value)
            keys: Any = range(len(items))

            def rebuild(items=items, name=name, make=container):
                namespace[name] = make(*items) if hasattr(make, "_fields") else make(items)
        else:
            items = value
            keys = list(dict.keys(value)) if container is dict else range(len(value))
        for key in keys:
            item = items[key]
            kind = _shs_kind(item) if item is not None else None
            if kind is not None and kind != "list":
                found.append((f"{name}[{key!r}]", kind, item, _ShsPlace(items, key, rebuild)))
    return found


def _shs_batched(value):
    """Whether a ``tf.data`` pipeline yields batches (its elements' first axis is free, or a batch
    step lies upstream)."""
    tf = _shs_sys.modules.get("tensorflow")
    try:
        leaves = tf.nest.flatten(value.element_spec) if tf is not None else []
        if leaves and leaves[0].shape.rank and leaves[0].shape[0] is None:
            return True
    except Exception:
        pass
    current = value
    for _step in range(30):
        if "Batch" in type(current).__name__:
            return True
        current = getattr(current, "_input_dataset", None)
        if current is None:
            break
    return False


def _shs_take_first(kind, value, cap, wanted):
    """A pipeline's first elements (``ds.take(n)``) or a Keras dataset's first batches: their own
    order is their meaning (no positions to choose). ``(new, kept, unit)`` or None to run it whole."""
    if kind == "tfdata":
        batched = _shs_batched(value)
        kept, unit = (cap + 2, "batches") if batched else (wanted, "elements")
        return (value.take(kept), kept, unit) if _shs_rows(kind, value) >= 2 * kept else None
    kept = cap + 2  # batches of a Keras PyDataset/Sequence: the same object, fewer batches
    if len(value) < 2 * kept:
        return None
    cls = type(value)
    shorter = {"__len__": lambda self: kept, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    if isinstance(getattr(cls, "num_batches", None), property):
        shorter["num_batches"] = property(lambda self: kept)
    value.__class__ = type(cls.__name__, (cls,), shorter)
    return value, kept, "batches"


def _shs_tf_eager(namespace, names):
    """TensorFlow in a fork: its thread pools stayed in the kernel, so a compiled function (a Keras
    ``fit``) would wait for them forever. In the child, functions run eagerly, op by op, and ops on
    a sample are small enough to run in the calling thread."""
    tf = _shs_sys.modules.get("tensorflow")
    if tf is None:
        return False
    with _shs_contextlib.suppress(Exception):
        tf.config.run_functions_eagerly(True)
    for name in names:
        value = namespace.get(name)
        keras = (type(value).__module__ or "").startswith(("keras", "tf_keras"))
        if keras and hasattr(type(value), "run_eagerly"):
            with _shs_contextlib.suppress(Exception):
                value.run_eagerly = True
    return True


def _shs_sample_names(namespace, code, plan):
    started = _shs_time.perf_counter()
    np = _shs_sys.modules.get("numpy")
    wanted, seed, cap = int(plan["rows"]), int(plan["seed"]), int(plan["cap"])
    names = _shs_code_names(code)
    found, feature_dims = [], set()
    shortened: dict[str, Any] = {"rows": [], "params": [], "loops": {}, "sizes": []}
    # where the full run spent its time (shorten.py): inside a loop the rewrite can cut, only that
    # loop is cut and the data stays whole; data sampled for no reason only adds ways to invent a crash
    where = plan.get("where") or {}
    loops_only = where.get("mode") == "loops"
    _shs_state["span"] = where.get("span") if loops_only else None
    if where:
        shortened["where"] = where
    slow_names = _shs_slow_names(namespace, where)  # None: every large object may be sampled
    loaders = {id(v.dataset) for _w, kind, v, _p in _shs_candidates(namespace, names) if kind == "loader"}
    for what, kind, value, place in _shs_candidates(namespace, names):
        if kind in ("tfdata", "batches"):
            if slow_names is not None and what.split("[", 1)[0] not in slow_names:
                shortened.setdefault("whole", []).append(what)
                continue
            try:
                of = _shs_rows(kind, value)
                taken = _shs_take_first(kind, value, cap, wanted)
            except Exception:
                continue  # an unknown or infinite length: it runs whole
            if taken is not None:
                place(taken[0])
                shortened["rows"].append({"what": what, "kept": taken[1], "of": of, "unit": taken[2]})
            continue
        if kind == "dataset" and id(value) in loaders:
            continue  # a loader reading it is sampled: its positions are the dataset's own
        try:
            rows = _shs_rows(kind, value)
            feature_dims |= _shs_feature_dims(kind, value)
        except Exception:
            continue
        found.append((what, kind, value, rows, place))
    by_rows: dict[int, list[Any]] = {}
    slow_rows = _shs_slow_rows(found, slow_names, loops_only)
    for what, kind, value, rows, place in found:
        if rows >= max(_SHS_ROWS_MIN, 2 * wanted) and rows not in feature_dims:
            if slow_rows is None or rows in slow_rows:
                by_rows.setdefault(rows, []).append((what, kind, value, place))
            else:
                shortened.setdefault("whole", []).append(what)
    originals = _shs_state.setdefault("originals", [])
    for rows, members in by_rows.items():
        labels = [a for _w, kind, value, _p in members for a in _shs_label_arrays(kind, value, np)]
        positions = _shs_positions(rows, wanted, seed, labels, np)
        done: dict[int, Any] = {}
        for what, kind, value, place in members:
            if id(value) not in done:
                originals.append((kind, value))
                done[id(value)] = _shs_take(kind, value, positions, np, seed)
            place(done[id(value)])
            shortened["rows"].append({"what": what, "kept": len(positions), "of": rows})
        shortened["sizes"].append(len(positions))
    if not loops_only:
        _shs_cap_estimators(namespace, names, cap, shortened["params"])
    shortened["calls"] = _shs_calls(namespace, names)
    shortened["modules"] = sorted(n for n in names if type(namespace.get(n)).__name__ == "module")[:200]
    if _shs_tf_eager(namespace, names):
        shortened["eager"] = True
    _shs_state["shortened"] = shortened
    _shs_state["cap"] = cap
    _shs_state["features"] = feature_dims
    namespace[_SHS_RANGE] = _shs_range
    namespace[_SHS_CAP] = _shs_cap
    namespace[_SHS_WHILE] = _shs_while
    namespace[_SHS_WHILE_START] = _shs_while_start
    shortened["sample_s"] = round(_shs_time.perf_counter() - started, 4)
    return shortened


def _shs_slow_names(namespace, where):
    """The names the slow part of the cell reads (``where["reads"]``: what the slow statement or loop
    reads, the cell's names it is computed from), with the globals of the functions it calls; None
    when the slow part is unknown (every large object may be sampled)."""
    reads = where.get("reads")
    if reads is None or where.get("mode") not in ("sample", "loops"):
        return None
    names = set(reads)
    for name in reads:
        value = namespace.get(name)
        with _shs_contextlib.suppress(Exception):
            if type(value).__name__ == "function" and value.__globals__ is namespace:
                names |= _shs_code_names(value.__code__)
    return names


def _shs_slow_rows(found, slow_names, loops_only):
    """Row counts of the data the slow part reads: only objects with those row counts are sampled
    (all of them, so that ``X`` and ``y`` stay aligned). None: sample every large object (the slow
    statement is unknown, or, outside a loop, reads no data found here); inside a loop that reads no
    data, nothing is sampled (the loop alone is cut)."""
    if slow_names is None:
        return None
    rows = {r for what, _kind, _value, r, _place in found if what.split("[", 1)[0] in slow_names}
    return rows if rows or loops_only else None


def _shs_calls(namespace, names):
    """The namespace's globals each of the kernel's own functions (and user objects' methods) that the
    cell names may read when called: the data flow of the verdict (``shorten_flow.py``) follows calls
    through them. Read off code objects only; nothing is called."""
    calls: dict[str, list[str]] = {}
    for name in sorted(names)[:200]:
        value = namespace.get(name)
        codes = []
        with _shs_contextlib.suppress(Exception):
            if type(value).__name__ == "function" and value.__globals__ is namespace:
                codes.append(value.__code__)
            else:
                kind = value if isinstance(value, type) else type(value)
                if kind.__module__ == "__main__":
                    codes += [f.__code__ for f in vars(kind).values() if type(f).__name__ == "function"]
        found: set[str] = set()
        for code in codes:
            found |= _shs_code_names(code)
        found = {n for n in found if n in namespace and n != name}
        if found:
            calls[name] = sorted(found)[:64]
    return calls


def _shs_range(iterable, line, nested=False, comprehension=False):
    """A ``for`` loop's ``range`` with its first ``cap - 1`` iterations and its last; a range as
    long as a sample (a loop over the sampled rows) runs whole unless it is nested in another, and
    so does one as long as a feature axis of the data (a loop over columns builds one per column),
    and a comprehension's range shorter than ``_SHS_COMPREHENSION_MIN``."""
    shortened = _shs_state.get("shortened")
    cap = _shs_state.get("cap", 2)
    if type(iterable) is not range or shortened is None or not _shs_in_span(line):
        return iterable
    size = len(iterable)
    if size <= cap or (size in shortened["sizes"] and not nested) or size in _shs_state.get("features", ()):
        return iterable
    if comprehension and size < _SHS_COMPREHENSION_MIN:
        return iterable
    loops = shortened["loops"]
    kept, of = loops.get(str(line), (0, 0))
    loops[str(line)] = (kept + cap, of + size)
    return [*iterable[: cap - 1], iterable[-1]]


def _shs_in_span(line):
    """Whether the loop or keyword on ``line`` is in the part of the cell being shortened (all of it,
    unless only the loop the full run was found in is cut)."""
    span = _shs_state.get("span")
    return not span or span[0] <= int(line) <= span[1]


def _shs_while_start(line):
    """Just before a counted ``while`` loop: its iterations are counted from here."""
    _shs_state.setdefault("whiles", {})[line] = 0


def _shs_while(test, line):
    """A counted ``while`` loop's test: as it is for the loop's first ``cap`` iterations, then
    false (the loop stops; how many iterations it would have run is unknown: ``of`` 0)."""
    shortened = _shs_state.get("shortened")
    if not test or shortened is None or not _shs_in_span(line):
        return test
    counts = _shs_state.setdefault("whiles", {})
    counts[line] = counts.get(line, 0) + 1
    cap = _shs_state.get("cap", 2)
    if counts[line] <= cap:
        return test
    kept, _of = shortened["loops"].get(str(line), (0, 0))
    shortened["loops"][str(line)] = (kept + cap, 0)
    counts[line] = 0
    return False


def _shs_cap(value, name, line):
    """An iteration keyword (``n_init=50``, ``epochs=25``) capped for the shortened run."""
    rule = _SHS_CAPS.get(name)
    shortened = _shs_state.get("shortened")
    if rule is None or shortened is None or type(value) is not int or not _shs_in_span(line):
        return value
    cap = rule(_shs_state.get("cap", 2))
    if value <= cap:
        return value
    shortened["params"].append({"what": f"{name} on line {line}", "param": name, "kept": cap, "of": value})
    return cap


def _shs_failure_facts(exc):
    """Facts about a failure that say whether it hinges on the sample (a KeyError's key in the full
    data's row labels or values); read within a short deadline, else ``unknown``."""
    if not isinstance(exc, KeyError) or not exc.args:
        return {}
    keys = _shs_missing_labels(exc.args[0])
    key = keys[0] if len(keys) == 1 else exc.args[0]
    facts: dict[str, Any] = {"key_type": type(key).__name__, "key": repr(key)[:200], "key_in_full": False}
    deadline = _shs_time.perf_counter() + 0.5
    for kind, value in _shs_state.get("originals", ()):
        if _shs_time.perf_counter() > deadline:
            facts["key_in_full"] = None  # unknown: read out of time
            break
        try:
            if any(_shs_holds(kind, value, k) for k in keys):
                facts["key_in_full"] = True
                break
        except Exception:
            facts["key_in_full"] = None
    return facts


def _shs_missing_labels(key):
    """The labels a KeyError is about: its key, or those pandas names in its message when it reports
    several at once (``drop([10472])``: ``"[10472] not found in axis"``), which are the real keys."""
    if type(key) is str and key.endswith("] not found in axis") and key.startswith("["):
        import ast  # IPython imported it: a lookup in sys.modules

        with _shs_contextlib.suppress(Exception):
            labels = ast.literal_eval(key[: -len(" not found in axis")])
            if isinstance(labels, list) and labels:
                return labels
    return [key]


def _shs_holds(kind, value, key):
    """Whether ``key`` is a row label or a value (in a text column) of the full object."""
    if kind == "pandas":
        if key in value.index:
            return True
        columns = [value] if value.ndim == 1 else [value[c] for c in value.columns]
        return any(bool((c == key).any()) for c in columns if c.dtype.kind in "OSU")
    if kind == "list":
        return key in value
    if kind == "numpy" and value.dtype.kind in "OUS":
        return bool((value == key).any())
    return False
