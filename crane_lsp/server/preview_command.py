"""``crane.previewCell``: try a notebook cell in the sandbox (issue 37; docs/undo.md, "Preview").

The cell runs in a jailed copy of the notebook's kernel, as the dry run does (``crane_lsp.preview``);
the kernel itself runs nothing. Arguments ``{"uri", "cell"}``: the notebook's (or ``# %%``
document's) URI and the cell, 1-based among its code cells, whose text is the server's (the editor's
current text, run or not). The answer is one typed model, ``{"stdout", "result", "diff": [{"name",
"change"}], "verdict"}`` (and a few more facts), or ``{"error": <one line>}`` with nothing changed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from crane_lsp import preview
from crane_lsp.server.app import CraneServer  # pygls reads the handlers' annotations at runtime
from crane_lsp.server.command_args import BadArguments, _Args, parse
from crane_lsp.server.undo_follow import when_idle

if TYPE_CHECKING:
    from crane_lsp.server.app import NotebookState

log = logging.getLogger(__name__)

PREVIEW = "crane.previewCell"


class PreviewArgs(_Args):
    """The notebook (or ``# %%`` document) and its code cell, 1-based; without ``cell``, the cell
    ``uri`` names (a notebook cell's URI) or holds ``line`` (0-based, a ``# %%`` document's), as the
    editors' "cell under the cursor" commands send it."""

    positional: ClassVar[tuple[str, ...]] = ("uri", "cell")
    uri: str
    cell: int | None = Field(default=None, ge=1)
    line: int | None = Field(default=None, ge=0)


class DiffRow(BaseModel):
    name: str
    change: str = Field(description="in words: 'adds column `ratio` to `df`', 'creates `model`'")


class PreviewCellAnswer(BaseModel):
    """What the cell would print, show and leave (seen in a jailed copy), or ``error`` (one line)."""

    model_config = ConfigDict(alias_generator=AliasGenerator(serialization_alias=to_camel), extra="forbid")
    stdout: str | None = Field(default=None, description="what it prints and displays (first 20,000)")
    result: str | None = Field(default=None, description="its last expression's value, as IPython shows it")
    diff: list[DiffRow] | None = None
    verdict: str | None = Field(
        default=None, description="'ran clean', 'raised X at line N: ...', 'no verdict: why'"
    )
    outcome: str | None = Field(default=None, description="the dry run's outcome (completed, raised...)")
    line: int | None = Field(default=None, description="1-based line within the cell it raised from")
    stdout_cut: bool | None = None
    result_cut: bool | None = None
    more: int | None = Field(default=None, description="changed names beyond those listed")
    note: str | None = Field(default=None, description="why what is shown is partial or missing")
    cell: int | None = Field(default=None, description="1-based among code cells")
    error: str | None = None

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


async def preview_cell(server: CraneServer, arguments: tuple[Any, ...]) -> PreviewCellAnswer:
    try:
        args = parse(PreviewArgs, arguments)
    except BadArguments as exc:
        return PreviewCellAnswer(error=f"bad arguments: {exc}")
    nb = server.notebook_of(args.uri)
    if nb is None:
        return PreviewCellAnswer(error="no such notebook")
    cells = nb.view.code_cells
    position = args.cell if args.cell is not None else _position(server, args)
    if position is None:
        return PreviewCellAnswer(error="no code cell there: name it (cell, 1-based among code cells)")
    if position > len(cells):
        return PreviewCellAnswer(error=f"no code cell {position} (the notebook has {len(cells)})")
    if server.settings.dry_run == "off":
        return PreviewCellAnswer(error="the dry run is off (the crane.dryRun setting)")
    link = server.kernels.attachment(nb.uri).link
    if link is None:
        return PreviewCellAnswer(error="no kernel attached")
    source = cells[position - 1].text
    try:
        answer: preview.Preview = await when_idle(lambda: preview.preview(link, source, server.settings))
    except Exception as exc:
        return PreviewCellAnswer(error=f"cannot preview: {exc}".splitlines()[0])
    finally:
        await _forget_prepared(server, nb)
    if answer.refused is not None:
        return PreviewCellAnswer(error=answer.refused)
    return PreviewCellAnswer(
        stdout=answer.stdout,
        result=answer.result,
        diff=[DiffRow(name=row.name, change=row.change) for row in answer.diff],
        verdict=answer.verdict,
        outcome=answer.outcome,
        line=answer.line,
        stdout_cut=answer.stdout_cut or None,
        result_cut=answer.result_cut or None,
        more=answer.more or None,
        note=answer.note,
        cell=position,
    )


async def _forget_prepared(server: CraneServer, nb: NotebookState) -> None:
    """The preview used (or dropped) the kernel's prepared child: the next edit prepares again."""
    from crane_lsp.dryrun import DryRunner

    try:
        runner = (await server.pipeline(nb)).dryrun
    except Exception:  # no pipeline to tell
        return
    if isinstance(runner, DryRunner):
        runner.forget_prepared()


def _position(server: CraneServer, args: PreviewArgs) -> int | None:
    """The 1-based position among code cells of the cell ``args.uri`` names or holds ``args.line``."""
    found = server.find_cell(args.uri, args.line or 0, args.uri)
    if found is None or found[1].kind != "code":
        return None
    nb, cell = found
    keys = [c.key for c in nb.view.code_cells]
    return keys.index(cell.key) + 1 if cell.key in keys else None


def register(ls: CraneServer) -> None:
    @ls.command(PREVIEW)
    async def preview_command(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        return (await preview_cell(server, arguments)).wire()
