"""The CRANE-LLM prompt, made token-lean, and the answer schema every provider is held to.

The prompt follows the paper (executed cells in execution order, optional runtime information, the
target cell; step-by-step reasoning; a verdict that is true only when the model is confident) and
adds what an editor needs: the crashing line (the target is numbered), the exception class, the
evidence and a fix. Executed cells lose comment-only and blank lines, which never change state, so
that our whole prompt (system + user) stays below the paper's user message alone.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

if TYPE_CHECKING:
    from crane_lsp.layers import KnownCrash


#: Bump when the prompt or schema changes: it is part of every cache key.
PROMPT_VERSION = "2"  # 2: the fix is an edit (line, code, why), not prose


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def _line_number(value: Any) -> Any:
    """``"line 7"`` -> 7: local models write numbers as text."""
    if isinstance(value, str):
        m = re.search(r"\d+", value)
        return int(m.group()) if m else None
    return value


class LLMFix(BaseModel):
    """The model's fix as an edit: ``code`` replaces 1-based ``line`` of the target cell; ``why`` is the
    one sentence a user reads. An edit, not prose, so that the jail can dry-run it (crane_lsp.fixes)."""

    model_config = ConfigDict(extra="ignore")

    line: int
    code: str
    why: str = ""

    @field_validator("line", mode="before")
    @classmethod
    def _line(cls, value: Any) -> Any:
        return _line_number(value)

    @field_validator("code")
    @classmethod
    def _code(cls, value: str) -> str:
        code = value.strip("\n").rstrip()
        if not code.strip():
            raise ValueError("the fix has no code")
        return code


def read_fix(value: Any) -> tuple[LLMFix | str | None, str | None]:
    """The answer's ``fix`` and, when it cannot be used, why: an edit object; an old-style string (a
    description with no edit); null. A malformed object is dropped with the reason, never an error
    that would cost the verdict."""
    if value is None:
        return None, None
    if isinstance(value, str):
        return (value.strip() or None), None
    if not isinstance(value, dict):
        return None, f"a {type(value).__name__}, not an edit"
    try:
        return LLMFix.model_validate(value), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return None, f"{where}: {first['msg']}" if where else first["msg"]


class LLMAnswer(BaseModel):
    """One sample of the model's verdict. Reasoning comes first so the model thinks before it decides."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    reasoning: str = ""
    crash: bool  # parse_answer also accepts the paper's key, "detection"
    line: int | None = None  # 1-based within the target cell
    exception: str | None = None  # class name, e.g. "KeyError"
    evidence: list[str] = Field(default_factory=list)
    fix: LLMFix | str | None = None  # a string: an answer in the old schema (prose, no edit)
    #: why the answer's fix object was dropped (malformed); the verdict stands without it
    _fix_dropped: str | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _tolerant_fix(cls, data: Any, handler: Any) -> Any:
        dropped = None
        if isinstance(data, dict) and "fix" in data:
            fix, dropped = read_fix(data["fix"])
            data = {**data, "fix": fix}
        answer = handler(data)
        answer._fix_dropped = dropped
        return answer

    @property
    def fix_dropped(self) -> str | None:
        return self._fix_dropped

    @field_validator("crash", mode="before")
    @classmethod
    def _strict_bool(cls, value: Any) -> Any:
        # "false" as a string must never be read as a crash; only real booleans (and the obvious
        # spellings from tolerant local models) are accepted.
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ValueError("crash must be a boolean")
        return value

    @field_validator("line", mode="before")
    @classmethod
    def _line(cls, value: Any) -> Any:
        return _line_number(value)

    @field_validator("exception", mode="before")
    @classmethod
    def _exception(cls, value: Any) -> Any:
        # "builtins.KeyError" / "pandas.errors.ParserError: ..." -> the bare class name
        if isinstance(value, str):
            name = value.split(":")[0].strip().rsplit(".", 1)[-1]
            return name or None
        return value

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return [v if isinstance(v, str) else json.dumps(v) for v in value]


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


#: The fix as an edit: ``code`` (the replacement line or lines, indented as the cell) replaces 1-based
#: ``line`` of the target cell; ``why`` in one short sentence. The descriptions say so to the model
#: (OpenAI and Gemini show them; the system prompt only says "a fix edit", within its token budget).
FIX_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "line": {"type": "integer", "description": "the target line to replace"},
        "code": {"type": "string", "description": "its new code, indented as in the cell"},
        "why": {"type": "string", "description": "one short sentence"},
    },
    "required": ["line", "code", "why"],
    "additionalProperties": False,
}

#: The strict JSON schema (OpenAI structured outputs: every property required, no extras; a nullable
#: object is an ``anyOf`` with null, which OpenAI, llama.cpp's grammars, vLLM and Ollama all take).
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "crash": {"type": "boolean"},
        "line": _nullable("integer"),
        "exception": _nullable("string"),
        "evidence": {"type": "array", "items": {"type": "string"}},
        "fix": {"anyOf": [FIX_SCHEMA, {"type": "null"}]},
    },
    "required": ["reasoning", "crash", "line", "exception", "evidence", "fix"],
    "additionalProperties": False,
}
ANSWER_SCHEMA_NAME = "crash_prediction"

SYSTEM = (
    "Will the target Jupyter cell crash? The executed cells ran without error, in this order."
    "{runtime}{facts} Target lines are numbered. Reason step by step, briefly. crash: true only if "
    'confident; then give the line, exception class, evidence (facts like "df.shape = (10, 3)") and a '
    "fix edit or null; else null."
)
_RUNTIME_CLAUSE = " Runtime info describes the target's variables now."
_FACTS_CLAUSE = " Verified facts come from exact checks."
#: When the verified fact is a crash the dry run observed (``failure_facts.py``): explain it, from its facts.
_OBSERVED_CLAUSE = (
    " Verified facts come from running the target cell in a sandboxed copy of the kernel: the crash was"
    " observed, with the values its failing line read; explain it from them."
)

#: Appended when a server cannot enforce the schema (plain instructions + tolerant parsing).
JSON_INSTRUCTIONS = (
    "Answer with one JSON object and nothing else: "
    '{"reasoning": string, "crash": boolean, "line": integer|null, "exception": string|null, '
    '"evidence": [string], "fix": {"line": integer, "code": string, "why": string}|null} '
    "(fix: code replaces that target line, indented as in the cell; why: one sentence)"
)


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai  # embeds o200k; tiktoken would download it

    return bpe_openai.get_encoding("o200k_base")


def count_tokens(text: str) -> int:
    """o200k tokens (GPT-4o / GPT-5), the tokenizer the paper's figures use."""
    return len(_encoding().encode(text, disallowed_special=()))


def _comment_or_blank_lines(code: str) -> set[int]:
    """0-based lines holding only a comment or whitespace (outside strings); empty set if untokenizable."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()
    lines = code.split("\n")
    busy: set[int] = set()
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.ENDMARKER:
            continue
        busy.update(range(tok.start[0] - 1, tok.end[0]))
    return {i for i in range(len(lines)) if i not in busy}


#: Methods that only look at data (pandas/NumPy/Python): a top-level statement made of these
#: changes nothing the target can see, so executed cells need not show it.
_PURE_METHODS = frozenset(
    (  # noqa: SIM905 - a word list reads better than 45 lines of quotes
        "head tail describe info sample value_counts unique nunique isnull isna notnull notna sum mean "
        "median min max std var count corr cov nlargest nsmallest memory_usage keys values items "
        "get_params summary summary_plot to_string round abs any all argmax argmin sort_values "
        "groupby agg size first last dtypes"
    ).split()
)
# not list()/sorted()/set(): they drain iterators
_PURE_FUNCTIONS = frozenset({"print", "display", "len", "type", "repr", "str"})


def _pure(node: ast.AST) -> bool:
    """True for an expression that only reads: names, attributes, literals, pure calls on those."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _pure(node.value)
    if isinstance(node, ast.Subscript):
        return _pure(node.value) and _pure(node.slice)
    if isinstance(node, ast.Slice):
        return all(_pure(p) for p in (node.lower, node.upper, node.step) if p is not None)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_pure(e) for e in node.elts)
    if isinstance(node, ast.JoinedStr):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _pure(node.value)
    if isinstance(node, ast.BinOp):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, ast.UnaryOp):
        return _pure(node.operand)
    if isinstance(node, ast.Compare):
        return _pure(node.left) and all(_pure(c) for c in node.comparators)
    if isinstance(node, ast.Call):
        args = [*node.args, *(k.value for k in node.keywords)]
        if any(k.arg == "inplace" for k in node.keywords) or not all(_pure(a) for a in args):
            return False
        if isinstance(node.func, ast.Name):
            return node.func.id in _PURE_FUNCTIONS
        return (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in _PURE_METHODS
            and _pure(node.func.value)
        )
    return False


def _display_lines(code: str) -> set[int]:
    """0-based lines of top-level statements that only display (``df.head()``, ``print(x.shape)``)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    lines: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and _pure(stmt.value) and stmt.end_lineno is not None:
            lines.update(range(stmt.lineno - 1, stmt.end_lineno))
    return lines


def compact_code(code: str) -> str:
    """An executed cell without what cannot change kernel state: comment-only and blank lines, and
    top-level statements that only display.

    Cells with IPython syntax that ``tokenize`` cannot read (``%magic``, ``!shell``) are handled
    line by line: only blank lines and lines starting with ``#`` go.
    """
    lines = [ln.rstrip() for ln in code.split("\n")]
    text = "\n".join(lines)
    drop = _comment_or_blank_lines(text) | _display_lines(text)
    if not drop:
        drop = {i for i, ln in enumerate(lines) if not ln.strip() or ln.lstrip().startswith("#")}
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop)


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except SyntaxError:
        pass
    try:  # IPython syntax (magics, !shell, ?help) -> Python, as the kernel itself does
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(code))
    except Exception:  # unparseable even for IPython: the caller keeps the cell
        return None


@dataclass
class _Names:
    """What one cell does with names: ``reads`` the names it reads when it runs and ``deferred`` those
    its function bodies read (at call time, so later cells can feed them); ``touches`` the names whose
    object it may change (binds, ``del``, item/attribute stores, method-call receivers, call
    arguments); ``modules`` the names it binds with ``import x [as y]``."""

    reads: set[str]
    deferred: set[str]
    touches: set[str]
    binds: set[str]
    modules: set[str]


def _deferred_names(tree: ast.AST) -> set[str]:
    """Names read inside function and lambda bodies."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = node.body if isinstance(node.body, list) else [node.body]
            out.update(n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name))
    return out


def _base(node: ast.AST) -> str | None:
    """``df`` for ``df``, ``df.a.b``, ``df['x'].y``; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _names(code: str) -> _Names | None:
    """None when the names cannot be known (syntax, ``import *``, ``%run``, ``exec``): always relevant."""
    tree = _parse(code)
    if tree is None:
        return None
    n = _Names(set(), _deferred_names(tree), set(), set(), set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            n.reads.add(node.id)
            if not isinstance(node.ctx, ast.Load):
                n.binds.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            n.binds.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                name = alias.asname or alias.name.split(".")[0]
                n.binds.add(name)
                if isinstance(node, ast.Import):
                    n.modules.add(name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            n.binds.update(node.names)
        elif isinstance(node, ast.Call):
            receivers = [node.func.value] if isinstance(node.func, ast.Attribute) else []
            for expr in [*receivers, *node.args, *(k.value for k in node.keywords)]:
                base = _base(expr.value if isinstance(expr, ast.Starred) else expr)
                if base:
                    n.touches.add(base)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            base = _base(node)
            if base:
                n.touches.add(base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _OPAQUE_MAGICS:
            return None  # get_ipython().run_line_magic('run', ...) and friends define unknown names
    if n.reads & {"exec", "globals"}:  # may bind any name
        return None
    n.touches |= n.binds
    return n


#: Magics after which any name may exist.
_OPAQUE_MAGICS = frozenset({"run", "load", "store", "restore", "load_ext", "autoreload"})


def relevant_cells(executed: Sequence[str], target: str) -> list[int]:
    """Indexes of the executed cells the target may depend on: a backward slice at cell granularity.

    A cell is kept when it may change a name the target (or a kept later cell) reads: it binds it,
    stores into it, calls a method on it or passes it to a function; keeping it adds every name it
    reads, and the globals its function bodies read are looked for in EVERY cell (bodies run at call
    time, after later cells). Calls on imported modules (``pd.read_csv``)
    do not count as changing ``pd``. Cells whose names cannot be known are always kept. Aliasing
    through a name the slice never sees (``a = df`` then ``a.drop(inplace=True)``) is the known gap.
    """
    target_names = _names(target)
    cells = [_names(code) for code in executed]
    if target_names is None:
        return list(range(len(executed)))
    modules = set().union(*(c.modules for c in cells if c is not None))
    keep: set[int] = set()
    deferred = set(target_names.reads)  # the target runs after every executed cell
    while True:
        wanted = set(deferred)
        found = set(deferred)
        for i in range(len(executed) - 1, -1, -1):
            c = cells[i]
            if i in keep or c is None or (c.binds | (c.touches - modules)) & wanted:
                keep.add(i)
                if c is not None:
                    wanted |= c.reads
                    found |= c.deferred
        if found == deferred:
            break
        deferred = found  # function bodies read at call time: look again, later cells included
    return sorted(keep)


def number_lines(code: str) -> str:
    """``12 x = 1``: each non-blank line prefixed by its 1-based number in the cell (one token each)."""
    return "\n".join(f"{i} {ln.rstrip()}" for i, ln in enumerate(code.split("\n"), 1) if ln.strip())


def render_known(known: Iterable[KnownCrash]) -> str:
    """One line per known crash with its facts; an observed crash (the dry run's) also keeps what
    the run showed, the raw message included, so the explanation starts from what was seen."""
    out = []
    for k in known:
        facts = "; ".join(f"{fact} = {value}" for fact, value in k.evidence)
        seen = f" [observed: {k.seen}]" if k.observed and k.seen not in ("", k.message) else ""
        out.append(
            f"- line {k.line + 1}: {k.exception}: {k.message}" + seen + (f" ({facts})" if facts else "")
        )
    return "\n".join(out)


def build_messages(
    executed: Sequence[str],
    target: str,
    runtime_text: str | None,
    known: Sequence[KnownCrash] = (),
    *,
    slice_cells: bool = True,
    max_executed_tokens: int | None = None,
) -> list[Message]:
    """System + user message. ``runtime_text`` None is the paper's -RT setting (no runtime section).

    ``slice_cells`` keeps only the executed cells the target may depend on (``relevant_cells``);
    cells keep their execution-order number either way. ``max_executed_tokens`` then drops the
    OLDEST kept cells beyond that budget, saying so; None keeps them all, as the paper did.
    """
    compacted = [compact_code(code) for code in executed]
    order = relevant_cells(compacted, target) if slice_cells else range(len(executed))
    cells = [(i + 1, redact_secrets(compacted[i])) for i in order]
    cells = [(n, code) for n, code in cells if code.strip()]
    omitted = 0
    if max_executed_tokens is not None:
        total = sum(count_tokens(code) for _, code in cells)
        while cells and total > max_executed_tokens:
            total -= count_tokens(cells.pop(0)[1])
            omitted += 1
    parts = ["# Executed Cells:"]
    if omitted:
        parts.append(f"({omitted} earlier cells omitted)")
    parts.extend(f"## Cell {n}\n{code}" for n, code in cells)
    if runtime_text is not None:
        parts.append(
            "# Runtime information:\n" + (redact_secrets(runtime_text.strip()) or "(nothing recorded)")
        )
    if known:
        parts.append("# Verified facts:\n" + render_known(known))
    parts.append("# Target Cell:\n" + number_lines(redact_secrets(target)))
    system = SYSTEM.format(
        runtime=_RUNTIME_CLAUSE if runtime_text is not None else "",
        facts=(_OBSERVED_CLAUSE if any(k.observed for k in known) else _FACTS_CLAUSE) if known else "",
    )
    return [Message("system", system), Message("user", "\n".join(parts))]


#: API keys of the usual providers (OpenAI/OpenRouter ``sk-``, Groq ``gsk_``, Google ``AIza``, Anthropic).
_KEY_LITERAL = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{16,}|gsk_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_\-]{30,})")


def redact_secrets(text: str) -> str:
    """Key-shaped literals in user code never reach a provider (the same length keeps line numbers)."""
    return _KEY_LITERAL.sub("[REDACTED]", text)


def prompt_tokens(messages: Sequence[Message]) -> int:
    return sum(count_tokens(m.content) for m in messages)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)  # reasoning models served locally (Qwen, DeepSeek)
_ALIASES = {"detection": "crash", "crashes": "crash", "will_crash": "crash", "crash_line": "line"}


class MalformedAnswer(ValueError):
    """The model's text holds no JSON object that fits ``LLMAnswer``."""


def _json_objects(text: str) -> Iterable[Any]:
    """Every JSON object in ``text``: fenced blocks first, then each ``{`` that starts a valid one."""
    decoder = json.JSONDecoder(strict=False)  # raw newlines in strings: grammar-bound local models
    for chunk in [*_FENCE.findall(text), text]:
        for start in (m.start() for m in re.finditer(r"\{", chunk)):
            try:
                obj, _ = decoder.raw_decode(chunk, start)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                yield obj


def parse_answer(text: str) -> LLMAnswer:
    """The answer in ``text``, tolerating code fences, prose around the JSON and the paper's keys."""
    for obj in _json_objects(_THINK.sub("", text)):
        data = {_ALIASES.get(k, k): v for k, v in obj.items()}
        if "crash" not in data:
            continue
        try:
            return LLMAnswer.model_validate(data)
        except ValueError:
            continue
    raise MalformedAnswer(f"no valid answer object in {len(text)} characters of model output")
