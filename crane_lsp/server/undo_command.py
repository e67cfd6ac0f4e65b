"""``crane.undoLastCell``: undo the last cell run in a notebook's kernel (issue 37; docs/undo.md).

``crane.cellChanges`` takes the same argument and answers what the last cell bound, rebound, deleted and
mutated in place (and a sentence), changing nothing; when the kernel reported an error for that run,
also the line it raised from and one line to show on the crashed cell ("Before raising at line 7 the
cell rebound `model` ... Undo: command crane.undoLastCell.").

One argument, ``{"uri": <the notebook's or `# %%` document's URI>}``. The answer is one typed model:
``{"restored", "deleted", "kept": [{"name", "reason"}], "cell": <1-based code cell>, "executionCount"}``
or ``{"error": <one line>}`` with nothing changed. The kernel is told to hold its copies
(``undo_configure``, ``crane_lsp.undo.configure_for``) when the server binds the notebook's kernel
and when the user starts editing (where the dry run prepares its child): a cell run before that has
no copy, and undo says so.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from crane_lsp import undo
from crane_lsp.server.app import CraneServer  # pygls reads the handlers' annotations at runtime
from crane_lsp.server.command_args import BadArguments, _Args, parse
from crane_lsp.server.undo_follow import when_idle

if TYPE_CHECKING:
    from crane_lsp.server.app import NotebookState
    from crane_lsp.server.documents import CellView

log = logging.getLogger(__name__)

UNDO = "crane.undoLastCell"
CHANGES = "crane.cellChanges"


class UndoArgs(_Args):
    """The notebook (or ``# %%`` document) whose last cell is undone."""

    positional: ClassVar[tuple[str, ...]] = ("uri",)
    uri: str


class KeptRow(BaseModel):
    name: str
    reason: str


class UndoLastCellAnswer(BaseModel):
    """What the undo did, or ``error``: why it did nothing (one line)."""

    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel), extra="forbid")
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list, description="names the cell created")
    kept: list[KeptRow] = Field(default_factory=list, description="names that could not come back")
    cell: int | None = Field(default=None, description="the undone cell, 1-based among code cells")
    execution_count: int | None = None
    error: str | None = None

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


def _code_cell(nb: NotebookState, count: int | None) -> int | None:
    """The 1-based position among code cells of the cell the editor says ran as ``count``."""
    for position, cell in enumerate(nb.view.code_cells, start=1):
        if count is not None and cell.execution_order == count:
            return position
    return None


class CellChangesAnswer(BaseModel):
    """What the last cell changed in the kernel (nothing is changed by asking), or ``error``."""

    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel), extra="forbid")
    bound: list[str] = Field(default_factory=list)
    rebound: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    mutated: list[str] = Field(default_factory=list, description="the same object, changed in place")
    text: str | None = Field(default=None, description="in words: 'the cell rebound `model` and ...'")
    raised_at: int | None = Field(default=None, description="1-based line the cell raised from, if it did")
    line: str | None = Field(
        default=None, description="when it raised: 'Before raising at line 7 the cell rebound ... Undo: ...'"
    )
    cell: int | None = Field(default=None, description="1-based among code cells")
    execution_count: int | None = None
    error: str | None = None

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


def _last_run(nb: NotebookState) -> int | None:
    """The execution count of the notebook's last run cell, as the editor reports it (None when it
    reports none: then the kernel's last cell is undone, whichever client ran it)."""
    orders = [c.execution_order for c in nb.view.code_cells if c.execution_order is not None]
    return max(orders) if orders else None


def _target(server: CraneServer, arguments: tuple[Any, ...]) -> tuple[NotebookState, Any] | str:
    """The notebook named by the command's ``{uri}`` and its kernel link, or why there is none (one
    line): both commands answer the same refusals the same way."""
    try:
        args = parse(UndoArgs, arguments)
    except BadArguments as exc:
        return f"bad arguments: {exc}"
    nb = server.notebook_of(args.uri)
    if nb is None:
        return "no such notebook"
    if not server.settings.undo:
        return "undo is off (the crane.undo setting)"
    link = server.kernels.attachment(nb.uri).link
    if link is None:
        return "no kernel attached"
    return nb, link


async def undo_last_cell(server: CraneServer, arguments: tuple[Any, ...]) -> UndoLastCellAnswer:
    target = _target(server, arguments)
    if isinstance(target, str):
        return UndoLastCellAnswer(error=target)
    nb, link = target
    try:
        expect = _last_run(nb)
        answer: undo.UndoAnswer = await when_idle(lambda: undo.undo(link, expect_count=expect))
    except Exception as exc:
        return UndoLastCellAnswer(error=f"cannot undo: {exc}".splitlines()[0])
    if answer.refused is not None:
        return UndoLastCellAnswer(error=answer.refused)
    nb.undo_line = None
    server.state_changed(nb)  # the kernel's state moved back: predictions are re-checked
    return UndoLastCellAnswer(
        restored=answer.restored,
        deleted=answer.deleted,
        kept=[KeptRow(name=k.name, reason=k.reason) for k in answer.kept],
        cell=_code_cell(nb, answer.cell),
        execution_count=answer.cell,
    )


async def cell_changes(server: CraneServer, arguments: tuple[Any, ...]) -> CellChangesAnswer:
    target = _target(server, arguments)
    if isinstance(target, str):
        return CellChangesAnswer(error=target)
    nb, link = target
    expect = _last_run(nb)
    try:
        answer: undo.CellChanges = await when_idle(lambda: undo.changes(link, expect_count=expect))
    except Exception as exc:
        return CellChangesAnswer(error=f"cannot say: {exc}".splitlines()[0])
    if answer.refused is not None:
        return CellChangesAnswer(error=answer.refused)
    raised = None
    if answer.cell is not None:
        cell = answer.cell
        try:
            raised = await when_idle(lambda: undo.raised_at(link, cell))
        except Exception as exc:  # still busy: the changes are known, the line is not
            log.debug("where cell [%s] raised is unknown: %s", cell, exc)
    return CellChangesAnswer(
        raised_at=raised,
        line=undo.crash_line(answer, raised) if raised is not None else None,
        bound=answer.bound,
        rebound=answer.rebound,
        deleted=answer.deleted,
        mutated=answer.mutated,
        text=answer.sentence(),
        cell=_code_cell(nb, answer.cell),
        execution_count=answer.cell,
    )


def hover_line(nb: NotebookState, cell: CellView, line: int) -> str | None:
    """The crashed cell's undo line when ``line`` (0-based, the editor's) is the line it raised from
    and that run, the kernel's last cell, is this cell: by the execution count the editor gives a
    notebook cell, or, in a ``# %%`` script (no counts), by the text that ran."""
    shown = nb.undo_line
    if shown is None:
        return None
    if nb.view.percent:
        if not shown.code.strip() or cell.text.strip() != shown.code.strip():
            return None
    elif cell.execution_order != shown.count:
        return None
    return shown.text if line - cell.first_line == shown.raised - 1 else None


def register(ls: CraneServer) -> None:
    @ls.command(UNDO)
    async def undo_command(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        return (await undo_last_cell(server, arguments)).wire()

    @ls.command(CHANGES)
    async def changes_command(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        return (await cell_changes(server, arguments)).wire()
