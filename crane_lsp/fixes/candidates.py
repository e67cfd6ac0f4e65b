"""Candidate fixes for a predicted crash: the check's determined repair, and the standard one-line
repairs of the crash class, read from the failing line, the exception and the facts the verdict shows.

Candidates are cheap guesses; ``crane_lsp.fixes.verify`` dry-runs each one from the kernel's state
and keeps only what runs, so a family here may propose a few spellings of one repair (``X.T`` and
``X.to_numpy().reshape(-1, 1)``) and let the jail decide. Every candidate replaces one line of the
cell (the failing one), and they are ranked by how little of the cell they change.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterator

from crane_lsp.fixes.edit import changed_chars
from crane_lsp.fixes.flow import keys_from_another_frame, labels_per_tick, removed_where_present
from crane_lsp.fixes.lines import CellLine as _Line
from crane_lsp.fixes.lines import line_fix as _fix
from crane_lsp.fixes.lines import near_labels as _near
from crane_lsp.fixes.lines import operand as _operand
from crane_lsp.fixes.lines import parsed_lines as _parsed_lines
from crane_lsp.fixes.lines import verdict_text as _text
from crane_lsp.prediction import Fix, FixLayer, Prediction

#: pandas/numpy aggregation names a misspelt ``.agg('avg')`` or ``.avg()`` was meant to be
AGGREGATIONS = [
    "mean",
    "sum",
    "min",
    "max",
    "count",
    "median",
    "std",
    "var",
    "first",
    "last",
    "nunique",
    "size",
    "prod",
    "sem",
    "skew",
    "idxmin",
    "idxmax",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "any",
    "all",
    "mode",
    "quantile",
    "describe",
]
#: names from other tools (SQL, R, Excel) for an aggregation pandas spells otherwise
ALIASES = {
    "avg": "mean",
    "average": "mean",
    "total": "sum",
    "cnt": "count",
    "len": "size",
    "stdev": "std",
    "sd": "std",
    "variance": "var",
    "med": "median",
    "distinct": "nunique",
    "n_distinct": "nunique",
    "mn": "min",
    "mx": "max",
}
_MATMUL_FUNCS = frozenset({"dot", "matmul", "mm", "bmm", "inner"})
_MATMUL_WORDS = ("matmul", "not aligned", "cannot be multiplied", "size mismatch", "core dimension")
_ESTIMATOR_METHODS = frozenset(
    {"fit", "predict", "transform", "fit_transform", "predict_proba", "score", "decision_function"}
)
_REDUCTIONS = frozenset(
    {"mean", "sum", "median", "std", "var", "corr", "cov", "min", "max", "prod", "quantile"}
)
_TEXT_VALUES = (
    "could not convert string to float",
    "unsupported operand type(s)",
    "can only concatenate str",
    "agg function failed",
    "dtype->object",
    "could not convert",
    "Cannot convert",
    "can't multiply sequence",
)


# -------------------------------------------------------------- the families


def _did_you_mean(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """ "did you mean 'region'?" in the verdict: the wrong name, label or keyword replaced on its line."""
    text = _text(p)
    m = re.search(r"did you mean:? ['\"]([^'\"]+)['\"]", text, re.IGNORECASE)
    if not m:
        return
    right = m[1]
    wrong = [w for w in re.findall(r"['\"]([^'\"]+)['\"]", text[: m.start()]) if w != right]
    for node in line.nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in wrong:
            yield _fix(line, _relabel(line, node.value, right), f"Use '{right}'", layer)
            return
        if isinstance(node, ast.Name) and node.id in wrong:
            yield _fix(line, line.replace(node, right), f"Use '{right}'", layer)
            return
        if isinstance(node, ast.keyword) and node.arg in wrong:
            start, _ = line.segment(node)
            new = line.text[:start] + right + line.text[start + len(node.arg or "") :]
            yield _fix(line, new, f"Use '{right}'", layer)
            return
        if isinstance(node, ast.Attribute) and node.attr in wrong:
            start, end = line.segment(node)
            new = line.text[: end - len(node.attr)] + right + line.text[end:]
            yield _fix(line, new, f"Use '{right}'", layer)
            return


def _relabel(line: _Line, wrong: str, right: str) -> str:
    """Every string literal ``wrong`` on the line spelt ``right`` (a label missing here is missing at
    each of its uses), each in its own quotes."""
    found = [n for n in line.nodes if isinstance(n, ast.Constant) and n.value == wrong]
    out = line.text
    for node in sorted(found, key=lambda n: line.segment(n)[0], reverse=True):
        start, end = line.segment(node)
        quote = out[start] if out[start] in "'\"" else "'"
        out = out[:start] + f"{quote}{right}{quote}" + out[end:]
    return out


def _close_labels(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """A missing label observed in the dry run: the closest existing columns the evidence lists."""
    if p.exception != "KeyError":
        return
    known: list[str] = []
    for e in p.evidence:
        m = re.match(r"\s*(\[.*\])", e.value)
        if m:
            try:
                value = ast.literal_eval(m[1])
            except (ValueError, SyntaxError):
                continue
            known.extend(str(v) for v in value if isinstance(v, str))
    if not known:
        return
    missing = dict.fromkeys(
        n.value for n in line.nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )
    for label in missing:
        if label in known:
            continue
        for right in _near(label, known):
            yield _fix(line, _relabel(line, label, right), f"Use '{right}'", layer)


def _repeated_drop(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """A loop that drops a label it already dropped: ``errors="ignore"`` on that drop. Only when the
    facts say the drop repeats (a typo'd label must not be silenced: that would do less)."""
    text = _text(p)
    repeated = "looks for it again" in text or "no longer has" in text
    gone = p.exception == "KeyError" and re.search(
        r"does not exist in|is not in the index|not found in axis", text
    )
    if not repeated and (not gone or re.search(r"did you mean", text, re.IGNORECASE)):
        return  # a label that is neither repeated nor simply gone (a typo: did you mean) is not silenced
    for node in line.nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "drop"
            and not any(k.arg == "errors" for k in node.keywords)
        ):
            call = line.source(node)
            new = line.replace(
                node, call[:-1].rstrip() + (", " if node.args or node.keywords else "") + 'errors="ignore")'
            )
            why = "the loop drops it again" if repeated else "the label is already gone"
            yield _fix(
                line,
                new,
                f'Drop with errors="ignore" ({why})',
                layer,
                "drop the label only where it is still there",
            )


def _transpose(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """Shapes that do not fit a product or a broadcast: transpose one operand."""
    text = _text(p)
    product = any(w in text for w in _MATMUL_WORDS)
    broadcast = "could not be broadcast" in text
    if not product and not broadcast:
        return
    for node in line.nodes:
        operands: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and (isinstance(node.op, ast.MatMult) or broadcast):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and product:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _MATMUL_FUNCS:
                operands = list(node.args[:2])
                if isinstance(node.func, ast.Attribute) and len(node.args) == 1:
                    operands.insert(0, node.func.value)  # a.dot(b)
        for operand in operands:
            if isinstance(operand, ast.Constant):
                continue
            shown = _operand(line, operand, ".T")
            yield _fix(
                line, line.replace(operand, shown), f"Transpose {line.source(operand)} ({shown})", layer
            )


def _two_d(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """ "Expected 2D array, got 1D array": the estimator's argument as one column."""
    if not re.search(r"Expected 2D array|Expected a 2-dimensional|expects a 2-D", _text(p)):
        return
    for node in line.nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _ESTIMATOR_METHODS:
            continue
        for arg in node.args[:1]:
            if isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Constant):
                key = line.source(arg.slice)
                frame = line.source(arg.value)
                shown = f"{frame}[[{key}]]"
                rows = isinstance(arg.value, ast.Attribute) and arg.value.attr in ("iloc", "loc")
                what = "one row" if rows else "one column"  # df.iloc[[0]] is a row; df[['c']] a column
                yield _fix(line, line.replace(arg, shown), f"Select {what} as a frame ({shown})", layer)
            for suffix in (".reshape(-1, 1)", ".to_numpy().reshape(-1, 1)"):
                shown = _operand(line, arg, suffix)
                yield _fix(line, line.replace(arg, shown), f"Reshape to one column ({shown})", layer)


def _flattened(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """An array of more dimensions than the callee takes (``np.savetxt`` of images, an estimator fed
    3-D data: the message states 3 or more dimensions): each array argument of the call kept as
    rows, the other axes flattened into columns (``x.reshape(len(x), -1)``); the jail finds the one
    that was meant."""
    if max(_dimension_counts(_text(p)), default=0) < 3:
        return
    for node in line.nodes:
        if not isinstance(node, ast.Call):
            continue
        for arg in node.args:
            if isinstance(arg, ast.Name | ast.Attribute | ast.Subscript):
                source = line.source(arg)
                shown = _operand(line, arg, f".reshape(len({source}), -1)")
                yield _fix(line, line.replace(arg, shown), f"Flatten {source} to rows ({shown})", layer)


def _dimension_counts(text: str) -> list[int]:
    """The numbers of dimensions a message states, whatever the library's wording: ``5D``, ``3-D``,
    ``dim 3``, ``ndim=4``, ``has 5 dimensions``, ``4-dimensional``."""
    found = re.findall(r"\b(\d+)-?D\b|\bn?dim\s*=?\s*(\d+)|\b(\d+)[ -]dim(?:ension(?:s|al)?)?\b", text)
    return [int(n) for group in found for n in group if n]


def _text_values(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """Text where numbers are needed: ``numeric_only=True`` on a reduction, ``pd.to_numeric(...,
    errors="coerce")`` on a column operand, ``.to_numpy()`` on a frame fed to an estimator."""
    text = _text(p)
    if not any(w in text for w in _TEXT_VALUES):
        return
    for node in line.nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _REDUCTIONS
            and not any(k.arg == "numeric_only" for k in node.keywords)
        ):
            call = line.source(node)
            sep = ", " if node.args or node.keywords else ""
            new = line.replace(node, call[:-1].rstrip() + sep + "numeric_only=True)")
            yield _fix(line, new, "Use only the numeric columns (numeric_only=True)", layer)
    for node in line.nodes:
        if isinstance(node, ast.BinOp):
            for operand in (node.left, node.right):
                if isinstance(operand, ast.Subscript) and isinstance(operand.slice, ast.Constant):
                    shown = f'pd.to_numeric({line.source(operand)}, errors="coerce")'
                    new = line.replace(operand, shown)
                    yield _fix(line, new, f"Convert {line.source(operand)} to numbers ({shown})", layer)


def _features(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """A model fed other features than it was fitted on: select the ones it was fitted on."""
    text = _text(p)
    if "features, but" not in text and "feature names" not in text.lower():
        return
    for node in line.nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _ESTIMATOR_METHODS - {"fit", "fit_transform"}
            and node.args
        ):
            model = line.source(node.func.value)
            arg = node.args[0]
            shown = _operand(line, arg, f"[{model}.feature_names_in_]")
            yield _fix(line, line.replace(arg, shown), f"Select the features {model} was fitted on", layer)
            root = _derived_from(arg)
            if root is not None:  # ``X.iloc[:, 1:]``, ``X.values.reshape(1, -1)``: from X itself
                shown = f"{root}[{model}.feature_names_in_]"
                title = f"Select the features {model} was fitted on from {root}"
                yield _fix(line, line.replace(arg, shown), title, layer)


def _derived_from(node: ast.AST) -> str | None:
    """The name an operand was derived from by selections, attributes and method calls on it
    (``X.iloc[:, 1:]``, ``X.values.reshape(1, -1)`` -> ``X``); None for a bare name or anything else."""
    inner = node
    while isinstance(inner, ast.Subscript | ast.Attribute | ast.Call):
        inner = inner.func if isinstance(inner, ast.Call) else inner.value
    return inner.id if isinstance(inner, ast.Name) and inner is not node else None


def _channels_last(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """``imshow`` of a channels-first image: move the channels last."""
    if "for image data" not in _text(p):
        return
    for node in line.nodes:
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "imshow"
        ):
            for arg in node.args[:1]:
                for suffix in (".transpose(1, 2, 0)", ".permute(1, 2, 0)"):
                    shown = _operand(line, arg, suffix)
                    yield _fix(line, line.replace(arg, shown), f"Move the channels last ({shown})", layer)


def _aggregation(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """A misspelt aggregation (``.avg()``, ``agg('average')``): the closest one that exists."""
    text = _text(p)
    m = re.search(r"has no attribute '(\w+)'", text) or re.search(r"'(\w+)' is not a valid function", text)
    if not m:
        return
    wrong = m[1]
    close = [ALIASES[wrong.lower()]] if wrong.lower() in ALIASES else []
    close = close or difflib.get_close_matches(wrong.lower(), AGGREGATIONS, n=1, cutoff=0.6)
    if not close:
        return
    right = close[0]
    for node in line.nodes:
        if isinstance(node, ast.Attribute) and node.attr == wrong:
            _, end = line.segment(node)
            new = line.text[: end - len(wrong)] + right + line.text[end:]
            yield _fix(line, new, f"Use '{right}'", layer)
        elif isinstance(node, ast.Constant) and node.value == wrong:
            quote = line.source(node)[:1] if line.source(node)[:1] in "'\"" else "'"
            yield _fix(line, line.replace(node, f"{quote}{right}{quote}"), f"Use '{right}'", layer)


def _named_in_cause(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """The cause names the repair itself ("`w.T` is (4, 1)", "`adv.transpose(1, 2, 0)` puts them
    last"): the operand on the failing line replaced by that expression."""
    for code in re.findall(r"`([^`]+)`", _text(p)):
        m = re.fullmatch(r"([A-Za-z_][\w.]*?)((?:\.T)|(?:\.\w+\([^()]*\)))", code)
        if not m:
            continue
        base = m[1]
        for node in line.nodes:
            if isinstance(node, ast.Name | ast.Attribute) and line.source(node) == base:
                yield _fix(line, line.replace(node, code), f"Use {code}", layer)
                break


def _accessor(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """``.cat``/``.str``/``.dt`` on an object that has the methods itself (a ``Categorical``, an
    ``Index``): the accessor dropped."""
    m = re.search(r"has no attribute '(cat|str|dt)'", _text(p))
    if not m:
        return
    for node in line.nodes:
        if isinstance(node, ast.Attribute) and node.attr == m[1]:
            inner = line.source(node.value)
            yield _fix(line, line.replace(node, inner), f"Call it on {inner} directly (no .{m[1]})", layer)
            return


def _int_of_text(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """``.astype(int)`` of text like '46.0' or 'nan': through float, or ``pd.to_numeric(...,
    errors="coerce")`` into pandas' nullable ``Int64``."""
    if "invalid literal for int()" not in _text(p):
        return
    for node in line.nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "astype"
            and len(node.args) == 1
            and line.source(node.args[0]).strip("'\"") == "int"
        ):
            inner = line.source(node.func.value)
            shown = f"{inner}.astype(float).astype(int)"
            yield _fix(line, line.replace(node, shown), f"Convert through float ({shown})", layer)
            shown = f'pd.to_numeric({inner}, errors="coerce").astype("Int64")'
            yield _fix(
                line, line.replace(node, shown), "Convert text to numbers, missing where not a number", layer
            )


def _by_keyword(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """A plotting call given by position what it takes by keyword only (seaborn's ``x``, ``y``,
    ``hue``): the positional arguments passed as ``x=``, ``y=``, ``hue=``."""
    m = re.search(r"(\w+)\(\) takes (?:from \d+ to |at most )?(\d+) positional", _text(p))
    if not m:
        return
    for node in line.nodes:
        name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else ""
        if not isinstance(node, ast.Call) or name != m[1] or not 2 <= len(node.args) <= 3:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue
        named = ", ".join(f"{k}={line.source(a)}" for k, a in zip(("x", "y", "hue"), node.args, strict=False))
        rest = [line.source(k) for k in node.keywords]
        call = f"{line.source(node.func)}({', '.join([named, *rest])})"
        yield _fix(line, line.replace(node, call), "Pass x, y by keyword", layer)


def _single_number(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """An array of one item where a single number is expected (``labels[i]`` is ``array([3])``):
    its ``.item()``."""
    text = _text(p)
    if "where a single number is expected" not in text and "only integer scalar arrays" not in text:
        return
    named = set(re.findall(r"`([^`]+)` is an array", text)) | set(re.findall(r"(\S+) has shape \(1,\)", text))
    for node in line.nodes:  # an index inside an index: ``names[labels[i]]``
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Subscript | ast.Name):
            named.add(line.source(node.slice))
    for node in line.nodes:
        if isinstance(node, ast.Subscript | ast.Name | ast.Attribute) and line.source(node) in named:
            shown = f"{line.source(node)}.item()"
            yield _fix(line, line.replace(node, shown), f"Take the one number ({shown})", layer)


def _saga(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """``LogisticRegression(penalty='elasticnet')`` fitted with a solver that lacks it: ``solver='saga'``
    (and an ``l1_ratio``) where the model is built in this cell, on that line."""
    text = _text(p)
    if "elasticnet" not in text or "saga" not in text or line.cell is None:
        return
    for node in ast.walk(line.cell):
        if not (isinstance(node, ast.Call) and node.lineno == node.end_lineno):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name != "LogisticRegression":
            continue
        built = _Line(node.lineno - 1, line.lines[node.lineno - 1], (node,), line.cell, line.lines)
        kept = [built.source(k) for k in node.keywords if k.arg not in ("solver",)]
        extra = [] if any(k.arg == "l1_ratio" for k in node.keywords) else ["l1_ratio=0.5"]
        args = [built.source(a) for a in node.args] + kept + ["solver='saga'", *extra]
        call = f"{built.source(node.func)}({', '.join(args)})"
        yield _fix(built, built.replace(node, call), "Use the 'saga' solver (the one with elasticnet)", layer)


def llm_line(p: Prediction, line: _Line) -> Iterator[Fix]:
    """The LLM's fix when it is prose: an answer in the old schema, whose ``fix`` was a string. The
    LLM's edit (the schema's ``{line, code, why}``, see crane_lsp.llm.prompt) is the verdict's own
    fix and ``candidates`` takes it as it is; only prose is read here: where it quotes a line of code
    that parses and shares a name with the failing line, that line replaces it (indentation kept)."""
    fix = p.fix
    if fix is None or fix.new_text is not None:  # an edit (the checks', the LLM's) is taken as it is
        return
    quoted = re.findall(r"`{1,3}(?:python\n)?([^`]+)`{1,3}", fix.description) or [fix.description]
    names = {n.id for n in line.nodes if isinstance(n, ast.Name)}
    indent = line.text[: len(line.text) - len(line.text.lstrip())]
    for code in quoted:
        code = code.strip()
        if "\n" in code or not code:
            continue
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        if not names & {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}:
            continue
        yield _fix(line, indent + code, one_line_title(code), "llm", fix.description)


def one_line_title(code: str) -> str:
    return f"Use {code}" if len(code) <= 60 else f"Use {code[:57]}..."


def _option_as_text(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """ "45 option for line not understood": an option given as a number where the library takes its
    name as text (``qqplot(x, line=45)`` -> ``line='45'``)."""
    m = re.search(r"(\S+) option for (\w+) not understood", _text(p))
    if not m:
        return
    for node in line.nodes:
        value = node.value if isinstance(node, ast.keyword) and node.arg == m[2] else None
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, int | float)
            and str(value.value) == m[1]
        ):
            shown = f"'{m[1]}'"
            yield _fix(line, line.replace(value, shown), f"Pass {m[2]}={shown} as text", layer)


def _twice(p: Prediction, line: _Line, layer: FixLayer) -> Iterator[Fix]:
    """``f(x, y, z, s=200)`` where a positional argument lands on the parameter also passed by
    keyword ("got multiple values for argument 's'"): Python's own binding rule says one of them is
    too many. The keyword says what the writer meant; positionals bind in order, so the one that
    reached the keyword's parameter is the last: it goes. The dry run says whether that runs."""
    m = re.search(r"(\w+)\(\) got multiple values for (?:keyword )?argument '(\w+)'", _text(p))
    if not m:
        return
    function, parameter = m[1], m[2]
    for node in line.nodes:
        if not isinstance(node, ast.Call) or not node.args or isinstance(node.args[-1], ast.Starred):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == function and any(k.arg == parameter for k in node.keywords):
            last = node.args[-1]
            yield _fix(line, line.without(last, node), f"Drop the argument {line.source(last)}", layer)
            return


_Family = Callable[[Prediction, _Line, FixLayer], Iterator[Fix]]
#: the families, in the order a tie in size is broken
FAMILIES: tuple[_Family, ...] = (
    _did_you_mean,
    _twice,
    _named_in_cause,
    _accessor,
    _int_of_text,
    _by_keyword,
    _single_number,
    _saga,
    _option_as_text,
    _close_labels,
    _aggregation,
    _repeated_drop,
    removed_where_present,
    labels_per_tick,
    keys_from_another_frame,
    _features,
    _two_d,
    _flattened,
    _transpose,
    _channels_last,
    _text_values,
)


def candidates(prediction: Prediction, target: str) -> list[Fix]:
    """Every candidate fix for a crashing ``prediction`` of ``target``, the smallest change first.

    The verdict's own fix comes first in its layer (a check's determined repair, or the LLM's edit);
    the LLM's prose (an old-style answer) is read by ``llm_line``; the families add what the
    exception, message and evidence at the failing line make standard."""
    if not prediction.crash:
        return []
    found: list[Fix] = []
    own = prediction.fix
    if own is not None and own.new_text is not None and own.start_line is not None:
        layer: FixLayer = own.layer or ("check" if prediction.source.layer == "checks" else "llm")
        title = own.title or _title(own.description)
        found.append(own.model_copy(update={"layer": layer, "title": title, "verification": None}))
    lines = _parsed_lines(target)
    if prediction.line is not None and 0 <= prediction.line < len(lines):
        line = lines[prediction.line]
        found.extend(llm_line(prediction, line))
        layer = "check" if prediction.source.layer == "checks" else "dryrun-facts"
        for family in FAMILIES:
            here = list(family(prediction, line, layer))
            found.extend(here)
            if here:
                found.extend(_on_every_line(family, prediction, line, here[0], lines, layer))
    unique: dict[str, Fix] = {}
    original = target.split("\n")
    for fix in found:
        same = original[fix.start_line or 0 : fix.end_line or 0] == (fix.new_text or "").split("\n")
        if not same:
            unique.setdefault(f"{fix.start_line}:{fix.end_line}:{fix.new_text}", fix)
    own_first = [f for f in unique.values() if own is not None and f.new_text == own.new_text]
    rest = sorted((f for f in unique.values() if f not in own_first), key=lambda f: changed_chars(target, f))
    return own_first + rest


def _on_every_line(
    family: _Family, prediction: Prediction, failing: _Line, first: Fix, lines: list[_Line], layer: FixLayer
) -> Iterator[Fix]:
    """The same repair wherever the cell repeats the construct: when the family that repaired the
    failing line also applies to other lines (``x_train[c].astype('int')`` then ``x_test[c]...``,
    a misspelt label used again below), one candidate edits them all. A cell that repeats a mistake
    crashes on the next copy once the first is mended; the dry run shows whether all were meant."""
    if (first.start_line, first.end_line) != (failing.number, failing.number + 1):
        return  # a repair where the value was built (another line, several lines): made once
    edits = {failing.number: first.new_text or failing.text}
    for other in lines:
        if other.number != failing.number and other.nodes:
            repaired = next(iter(family(prediction, other, layer)), None)
            if (
                repaired is not None
                and repaired.new_text is not None
                and (repaired.start_line, repaired.end_line) == (other.number, other.number + 1)
            ):
                edits[other.number] = repaired.new_text
    if len(edits) < 2:
        return
    start, end = min(edits), max(edits) + 1
    new_text = "\n".join(edits.get(i, lines[i].text) for i in range(start, end))
    also = ", ".join(str(n + 1) for n in sorted(edits) if n != failing.number)
    title = f"{first.title} (also on line {also})"
    yield Fix(description=title, start_line=start, end_line=end, new_text=new_text, title=title, layer=layer)


def _title(description: str) -> str:
    """ "did you mean 'region'?" -> "Use 'region'"; other descriptions as they are."""
    m = re.fullmatch(r"did you mean (.+)\?", description.strip())
    return f"Use {m[1]}" if m else description.strip()
