"""One-line causes for the crashes a dry run observes, from the facts at the failing line.

Each rule reads a common library message (NumPy shape and broadcast mismatches, pandas missing
labels, text where numbers are needed, wrong dimensionality, inconsistent sample counts, feature
counts, tick labels, argument clashes, an array where a scalar belongs) and names the operands whose
facts match its numbers, in the checks' voice ("cannot multiply shapes (75, 4) (`X`) and (1, 4) (`w`):
inner dimensions differ"). A rule answers only when the facts make the cause plain; else None, and
the user reads the raw message as before (it always stays beneath, in the diagnosis).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar

from crane_lsp.dryrun.failure_facts import FailFacts, FailLoop, FailValue, evidence, operand_origins
from crane_lsp.kernel.agent.wire import Kind
from crane_lsp.prediction import Prediction
from crane_lsp.render import format_shape

Rule = Callable[[str, str, FailFacts, bool], "str | None"]
#: the operands the rule now running named, in order (``_op``): read by ``cause``, never parsed back
_NAMED: ContextVar[list[str] | None] = ContextVar("_NAMED", default=None)
#: the failing line's code while the rules run (None: unknown), for what the line could look up
_LINE: ContextVar[str | None] = ContextVar("_LINE", default=None)


def _op(value: FailValue) -> str:
    """An operand as a cause names it (`` `X` ``), recorded so that its origin comes first."""
    named = _NAMED.get()
    if named is not None and value.name not in named:
        named.append(value.name)
    return f"`{value.name}`"


_SHAPE = r"\(([\d,\s]*)\)"


def _shape(text: str) -> list[int]:
    return [int(d) for d in text.replace(" ", "").split(",") if d]


def _fmt(shape: Iterable[int | None]) -> str:
    return format_shape(list(shape))


def _arrays(facts: FailFacts) -> list[FailValue]:
    """Values with a shape, the innermost frame's first (the message comes from there)."""
    return sorted((v for v in facts.values if v.summary.shape is not None), key=lambda v: v.scope != "frame")


def _with_shape(facts: FailFacts, shape: list[int], skip: FailValue | None = None) -> FailValue | None:
    return next((v for v in _arrays(facts) if v.summary.shape == shape and v is not skip), None)


def _matmul(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(rf"shapes {_SHAPE} and {_SHAPE} not aligned", msg)
    if not m:
        return None
    sa, sb = _shape(m[1]), _shape(m[2])
    a = _with_shape(facts, sa)
    b = _with_shape(facts, sb, skip=a)
    if a is None or b is None:
        return None
    text = f"cannot multiply shapes {_fmt(sa)} ({_op(a)}) and {_fmt(sb)} ({_op(b)}): inner dimensions differ"
    if len(sb) == 2 and sa and sa[-1] == sb[1]:
        text += f"; {_op(b)} is a row where a column was meant (`{b.name}.T` is {_fmt(sb[::-1])})"
    return text


def _gufunc(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(
        r"matmul: Input operand 1 has a mismatch in its core dimension 0"
        r".*\(size (\d+) is different from (\d+)\)",
        msg,
    )
    if not m:
        return None
    inner_b, inner_a = int(m[1]), int(m[2])
    arrays = _arrays(facts)
    for a in arrays:
        for b in arrays:
            sa, sb = a.summary.shape or [], b.summary.shape or []
            if a is b or not sa or not sb or a.scope != b.scope:
                continue
            if sa[-1] == inner_a and sb[-2 if len(sb) > 1 else 0] == inner_b:
                return (
                    f"cannot multiply shapes {_fmt(sa)} ({_op(a)}) and {_fmt(sb)} ({_op(b)}): "
                    "inner dimensions differ"
                )
    return None


def _broadcast(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    if "could not be broadcast" not in msg:
        return None
    tail = msg.split("shapes", 1)[-1].split("]:", 1)[-1]
    shapes = [_shape(found[0]) for found in re.findall(rf"{_SHAPE}(?:->{_SHAPE})?", tail)]
    if len(shapes) < 2:
        return None
    a = _with_shape(facts, shapes[0])
    b = _with_shape(facts, shapes[1], skip=a)
    if a is None or b is None:
        return None
    first, second = _fmt(shapes[0]), _fmt(shapes[1])
    return f"shapes {first} ({_op(a)}) and {second} ({_op(b)}) cannot be broadcast together"


def _label_of(exc: str, msg: str, facts: FailFacts) -> tuple[list[str], bool] | None:
    """The missing labels (as the user wrote them) and whether pandas said 'not found in axis'."""
    m = re.search(r"\[(.*)\] not found in axis", msg)
    if m:
        return [x.strip() for x in m[1].split(", ") if x.strip()], True
    if exc == "KeyError":
        text = msg.strip()
        if text.startswith('"') and text.endswith('"'):
            text = text[1:-1]
        return ([text], False) if _looked_up(text, facts) else None
    return None


def _looked_up(label: str, facts: FailFacts) -> bool:
    """Whether a KeyError's argument is a key the failing line looks up: written on the line (or on
    the user function's line that raised), or the value of a name the line reads. A library that
    words its KeyError as a sentence ("Column(s) [1, 2] do not exist") names no label."""
    code = [text for text in (_LINE.get(), facts.frame.text if facts.frame else None) if text]
    if not code:  # the line is unknown: as before, the argument is the label
        return True
    value = _literal(label)
    spellings = {label, str(value), repr(value)}
    if any(s in text for s in spellings for text in code):
        return True
    return any(v.summary.kind == Kind.STR and v.summary.value == str(value) for v in facts.values)


def _literal(label: str) -> object:
    try:
        return ast.literal_eval(label)
    except (ValueError, SyntaxError):
        return label


def _missing_label(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    got = _label_of(exc, msg, facts)
    if got is None:
        return None
    labels, in_axis = got
    shown = ", ".join(labels)
    frames = [v for v in facts.values if v.summary.kind in (Kind.DATAFRAME, Kind.SERIES)]
    dicts = [v for v in facts.values if v.summary.kind == Kind.DICT]
    loop = facts.loop("frame") or facts.loop("line")
    repeated = _repeated(loop, labels)
    if repeated:
        return repeated
    for v in frames:
        if loop is not None and v.again is not None and (loop.iteration or 2) > 1:
            when = f"iteration {loop.iteration}" if loop.iteration else "a later iteration"
            return (
                f"{_op(v)} no longer has {shown} in {when} of the loop on line {loop.line}: "
                f"line {v.again} removed it in an earlier iteration"
            )
    for v in frames:
        s = v.summary
        names = [str(c.name) for c in s.columns or []]
        if all(isinstance(_literal(x), int) for x in labels) and not any(
            _literal(x) in names for x in labels
        ):
            rows = f" (index {s.index_range[0]}…{s.index_range[1]})" if s.index_range and not privacy else ""
            return f"{_op(v)} has no row label {shown}{rows}"
        if s.kind == Kind.DATAFRAME and names and not s.columns_truncated:
            close = difflib.get_close_matches(str(_literal(labels[0])), names, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listed = ", ".join(names[:8]) + ("…" if len(names) > 8 else "")
            return f"{_op(v)} has no column {shown}; its columns: {listed}{hint}"
    if not in_axis:
        for v in dicts:
            keys = ", ".join((v.summary.keys or [])[:8])
            if keys:
                return f"{_op(v)} has no key {shown}; its keys: {keys}"
    return None


def _repeated(loop: FailLoop | None, labels: list[str]) -> str | None:
    if loop is None or len(loop.positions) < 2:
        return None
    places = " and ".join(str(p) for p in loop.positions[:3])
    return (
        f"{', '.join(labels)} occurs {len(loop.positions)} times in `{loop.iterable}` (items {places}): "
        f"the loop on line {loop.line} removes it once, then looks for it again "
        f"(iteration {loop.positions[1]})"
    )


_TEXT_DTYPES = ("object", "string", "str", "category")


def _text_columns(v: FailValue) -> list[str]:
    return [str(c.name) for c in v.summary.columns or [] if c.dtype in _TEXT_DTYPES]


def _text_values(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(
        r"could not convert string to float: (.*)$|invalid literal for int\(\) with base \d+: (.*)$", msg
    )
    if not m:
        return None
    example = (m[1] or m[2] or "").strip()
    such = "" if privacy or not example else f" such as {example}"
    named = {v.summary.value: v for v in facts.values if v.summary.kind == Kind.STR and v.summary.value}
    for v in sorted(facts.values, key=lambda v: "[" not in v.name):  # ``df['col']`` before ``df``
        cols = _text_columns(v)
        picked = [c for c in cols if c in named]  # ``df[column]`` with the loop's ``column``
        if picked:
            return (
                f"column {picked[0]!r} of {_op(v)} ({_op(named[picked[0]])}) holds text{such}: "
                "numbers are needed (encode or convert it first)"
            )
        if cols:
            listed = ", ".join(repr(c) for c in cols[:6]) + ("…" if len(cols) > 6 else "")
            return (
                f"{_op(v)} holds text{such} in column(s) {listed}: "
                "numbers are needed (encode or convert them first)"
            )
        dtype = v.summary.dtype or ""
        if v.summary.kind in (Kind.SERIES, Kind.NDARRAY, Kind.INDEX) and (
            dtype in _TEXT_DTYPES or dtype.startswith("<U")
        ):
            stats = v.summary.stats
            nan = (
                f"; NaN: {stats.nan_count}" if stats is not None and stats.has_nan and stats.nan_count else ""
            )
            return f"{_op(v)} holds text{such} (dtype {dtype}{nan}): numbers are needed (convert it first)"
    return None


def _dimensions(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"Expected (2D|1D or 2D|\w+) array, got (\d+)D array instead", msg)
    if not m:
        return None
    got = int(m[2])
    v = next((v for v in _arrays(facts) if len(v.summary.shape or []) == got), None)
    if v is None:
        return None
    shape = _fmt(v.summary.shape or [])
    if m[1] == "2D" and got == 1:
        return (
            f"a 2-D X (samples x features) is expected; {_op(v)} is 1-D (shape {shape}): "
            f"`{v.name}.reshape(-1, 1)` makes it one column"
        )
    return f"a {m[1]} array is expected; {_op(v)} has {got} dimensions (shape {shape})"


def _samples(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"inconsistent numbers of samples: \[([\d, ]+)\]", msg)
    if not m:
        return None
    parts = []
    used: set[str] = set()
    for n in _shape(m[1]):
        v = next((v for v in facts.values if _rows(v) == n and v.name not in used), None)
        if v is None:
            return None
        used.add(v.name)
        parts.append(f"{_op(v)} has {n}")
    return "inconsistent numbers of samples: " + ", ".join(parts)


def _rows(v: FailValue) -> int | None:
    s = v.summary
    if s.shape:
        return s.shape[0]
    return s.length


def _features(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"X has (\d+) features, but (\w+) is expecting (\d+) features", msg)
    if not m:
        return None
    have, want = int(m[1]), int(m[3])
    x = next(
        (
            v
            for v in _arrays(facts)
            if len(v.summary.shape or []) == 2 and (v.summary.shape or [0, 0])[1] == have
        ),
        None,
    )
    est = next(
        (
            v
            for v in facts.values
            if v.summary.estimator is not None and v.summary.estimator.n_features_in == want
        ),
        None,
    )
    if x is None:
        return None
    fitted = f"{_op(est)}" if est is not None else m[2]
    shape = _fmt(x.summary.shape or [])
    return f"{_op(x)} has {have} features (shape {shape}), but {fitted} was fitted on {want}"


def _ticks(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"FixedLocator locations \((\d+)\).*number of labels \((\d+)\)", msg, re.S)
    if not m:
        return None
    locations, labels = int(m[1]), int(m[2])
    v = next((v for v in facts.values if _rows(v) == labels and v.summary.kind != Kind.DATAFRAME), None)
    given = f"{_op(v)} gives {labels} labels" if v is not None else f"{labels} labels are given"
    return f"{given} for {locations} tick positions: one label per tick is needed (e.g. one per class)"


def _keyword_near(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    """A keyword the callee does not take and the error's own words name (whatever the exception:
    a library may raise ValueError or AttributeError for it), with the callee's nearest parameter."""
    for kw in facts.keywords:
        if f"'{kw.keyword}'" in msg or f'"{kw.keyword}"' in msg:
            if kw.via:
                return (
                    f"{kw.call}() hands '{kw.keyword}' on to {kw.via}, which does not take it; "
                    f"did you mean '{kw.near}'?"
                )
            return f"{kw.call}() has no parameter '{kw.keyword}'; did you mean '{kw.near}'?"
    return None


def _arguments(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"([\w.]+)\(\) got an unexpected keyword argument '(\w+)'", msg)
    if m:
        return f"{m[1]}() has no parameter '{m[2]}'"
    m = re.search(r"([\w.]+)\(\) got multiple values for argument '(\w+)'", msg)
    if m:
        return f"{m[1]}() gets '{m[2]}' twice: once by position and once by keyword"
    m = re.search(
        r"([\w.]+)\(\) takes (?:from \d+ to )?(\d+) positional arguments? but (\d+) (?:were|was) given", msg
    )
    if m:
        return (
            f"{m[1]}() takes at most {m[2]} positional argument(s), {m[3]} were given: "
            "pass the rest by keyword"
        )
    return None


_SCALAR_WANTED = (
    "only length-1 arrays can be converted",
    "only size-1 arrays can be converted",
    "only 0-dimensional arrays can be converted",
    "only integer scalar arrays can be converted to a scalar index",
    "unhashable type: 'numpy.ndarray'",
    "setting an array element with a sequence",
    "object cannot be interpreted as an integer",
    "truth value of an array with more than one element is ambiguous",
    "truth value of a Series is ambiguous",
)


def _array_for_scalar(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    if not any(s in msg for s in _SCALAR_WANTED):
        return None
    arrays = sorted(
        (v for v in _arrays(facts) if v.summary.shape and v.loop is None),
        key=lambda v: ("[" not in v.name, v.scope != "frame"),
    )
    holders = [v for v in facts.values if "ndarray" in (v.summary.element_types or [])]
    if "ambiguous" in msg and arrays:
        v = arrays[0]
        return (
            f"{_op(v)} is an array of shape {_fmt(v.summary.shape or [])}: `if`, `and`, `or` need one "
            "True/False (use .any() or .all())"
        )
    if arrays:
        v = arrays[0]
        each = ""
        if "[" in v.name:
            each = f" (each item of `{v.name.split('[', 1)[0]}` is an array)"
        shape = _fmt(v.summary.shape or [])
        return f"{_op(v)} is an array of shape {shape} where a single number is expected{each}"
    if holders:
        v = holders[0]
        return f"{_op(v)} holds arrays (ndarray items) where single numbers are expected"
    return None


def _empty(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    if not re.search(r"n_samples=0|Found array with 0 sample", msg):
        return None
    v = next((v for v in facts.values if _rows(v) == 0 and v.summary.kind != Kind.DICT), None)
    if v is None:
        return None
    shape = f" (shape {_fmt(v.summary.shape)})" if v.summary.shape is not None else ""
    return f"{_op(v)} is empty{shape}: there are no samples to work on" + _bound(v)


def _bound(v: FailValue) -> str:
    return f" (assigned on line {v.assigned})" if v.assigned is not None and v.scope == "line" else ""


def _feature_names(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    if "feature names should match those that were passed during fit" not in msg:
        return None
    missing = _listed(msg, "yet now missing:")
    unseen = _listed(msg, "unseen at fit time:")
    frame = next((v for v in facts.values if v.summary.kind == Kind.DATAFRAME), None)
    est = next((v for v in facts.values if v.summary.estimator is not None), None)
    if frame is None or est is None or not (missing or unseen):
        return None
    parts = []
    if missing:
        parts.append(f"lacks columns {_op(est)} was fitted on ({', '.join(missing)})")
    if unseen:
        parts.append(f"has columns it was not ({', '.join(unseen)})")
    return f"{_op(frame)} ({describe_shape(frame)}) " + " and ".join(parts)


def _listed(msg: str, head: str) -> list[str]:
    if head not in msg:
        return []
    out = []
    for line in msg.split(head, 1)[1].splitlines()[1:]:
        if not line.startswith("- "):
            break
        out.append(line[2:].strip().replace("...", "…"))
    return out[:6]


def describe_shape(v: FailValue) -> str:
    return f"{v.summary.type.rsplit('.', 1)[-1]} {_fmt(v.summary.shape or [])}"


def _image(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(rf"Invalid shape {_SHAPE} for image data", msg)
    if not m:
        return None
    shape = _shape(m[1])
    v = _with_shape(facts, shape)
    if v is None:
        return None
    text = f"{_op(v)} has shape {_fmt(shape)}: imshow needs (M, N), (M, N, 3) or (M, N, 4)"
    if len(shape) == 3 and shape[0] in (1, 3, 4):
        text += f"; the channels come first (`{v.name}.transpose(1, 2, 0)` puts them last)"
    return text


def _merge_keys(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"merge on (\S+) and (\S+) columns for key '(.+?)'", msg)
    if not m:
        return None
    key = m[3]
    typed: list[tuple[str, str, str]] = []  # (operand, what, dtype): a key column, or an index joined on
    for v in facts.values:
        dtype = next((c.dtype for c in v.summary.columns or [] if str(c.name) == key), None)
        if dtype is not None:
            typed.append((v.name, f"{_op(v)}[{key!r}]", dtype))
        if v.summary.index_dtype:
            typed.append((v.name, f"the index of {_op(v)}", v.summary.index_dtype))
    left = next((t for t in typed if t[2] == m[1] and "index" not in t[1]), None)
    right = next((t for t in typed if t[2] == m[2] and left is not None and t[0] != left[0]), None)
    if left is None or right is None:
        return None
    return f"{left[1]} is {left[2]} but {right[1]} is {right[2]}: the keys must have one dtype"


def _inhomogeneous(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    if "inhomogeneous" not in msg:
        return None
    v = next((v for v in facts.values if v.summary.kind in (Kind.LIST, Kind.TUPLE)), None)
    if v is None:
        return None
    items = "/".join(v.summary.element_types or [])
    return (
        f"{_op(v)} is a {v.summary.kind} of {v.summary.length} items ({items}) whose shapes differ: "
        "NumPy cannot make one array of them"
    )


def _no_attribute(exc: str, msg: str, facts: FailFacts, privacy: bool) -> str | None:
    m = re.search(r"'(\w+)' object (has no attribute '(\w+)'|is not (subscriptable|iterable|callable))", msg)
    if not m:
        return None
    owner = m[1]
    v = next((v for v in facts.values if v.summary.type.rsplit(".", 1)[-1] == owner), None)
    if v is None:
        return None
    what = "None" if owner == "NoneType" else f"a {v.summary.type}"
    return f"{_op(v)} is {what}, which {m[2]}" + _bound(v)


#: First match wins; each rule names the operands only when the facts say which they are.
RULES: tuple[Rule, ...] = (
    _keyword_near,
    _image,
    _matmul,
    _gufunc,
    _broadcast,
    _dimensions,
    _samples,
    _features,
    _feature_names,
    _empty,
    _ticks,
    _text_values,
    _inhomogeneous,
    _array_for_scalar,
    _merge_keys,
    _no_attribute,
    _missing_label,
    _arguments,
)


def cause(exception: str, message: str, facts: FailFacts, privacy: bool = False) -> str | None:
    """The one-line cause of an observed ``exception: message`` from ``facts``, or None."""
    return cause_and_operands(exception, message, facts, privacy)[0]


def cause_and_operands(
    exception: str, message: str, facts: FailFacts, privacy: bool = False, line_text: str | None = None
) -> tuple[str | None, list[str]]:
    """The cause (or None) and the variables it names, as the rule that wrote it recorded them;
    ``line_text``: the failing line's code, where known."""
    for rule in RULES:
        named: list[str] = []
        token, line = _NAMED.set(named), _LINE.set(line_text)
        try:
            found = rule(exception, message, facts, privacy)
        except (ValueError, IndexError, TypeError):  # a message that looks alike but is not: no cause
            found = None
        finally:
            _NAMED.reset(token)
            _LINE.reset(line)
        if found:
            return found, named
    return None, []


def with_failure_facts(
    prediction: Prediction,
    facts: FailFacts | None,
    executed: Sequence[str] = (),
    privacy: bool = False,
    line_text: str | None = None,
) -> Prediction:
    """The observed verdict with its facts: a cause sentence as the message where the facts make it
    plain (the raw message stays in the diagnosis), evidence rows and origins. ``line_text``: the
    failing line's code."""
    if facts is None or not prediction.crash:
        return prediction
    privacy = privacy or facts.privacy
    exception, raw = prediction.exception or "", prediction.raw_message
    sentence, named = cause_and_operands(exception, raw, facts, privacy, line_text)
    if sentence:  # the raw message stays in the diagnosis, shown beneath
        prediction.cause = sentence
        prediction.message = f"{prediction.exception}: {sentence}"
        prediction.operands = named
    prediction.evidence = evidence(facts, privacy) + prediction.evidence
    if not prediction.origin:
        prediction.origin = operand_origins(facts, executed, prediction.operands)
    if facts.error:
        prediction.notes.append(f"facts at the failing line unavailable: {facts.error}")
    return prediction
