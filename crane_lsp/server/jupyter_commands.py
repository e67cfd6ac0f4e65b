"""Commands for editors that draw their own verdict: the structured verdict of a cell and the run guard.

JupyterLab shows the verdict as a box under the cell (exception, message, runtime facts, origin
cells) instead of a hover, and asks before running a cell known to crash; both need the prediction
itself, not its Markdown. ``crane.cellVerdict`` answers for the cell's *current* text only: a result
computed for an older text is returned as stale, never as the cell's verdict; an editor that
sends ``text`` (the cell as it shows it) also gets stale for a verdict on any other text, such as
an edit the server has not received yet. The same answer's ``blockRun`` is the run-guard decision
any editor can use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crane_lsp.server.app import CraneServer  # pygls reads the handlers' annotations at runtime
from crane_lsp.server.verdict_answer import CellVerdictAnswer, EvidenceRow, FixRow, OriginRow

if TYPE_CHECKING:
    from crane_lsp.server.command_args import CellArgs

VERDICT = "crane.cellVerdict"
BLOCKING = ("certain", "observed")


def cell_verdict(server: CraneServer, args: CellArgs) -> CellVerdictAnswer:
    """The cell's verdict as data; ``found`` False for an unknown cell."""
    from crane_lsp import words
    from crane_lsp.server.presentation import in_script

    found = server.find_cell(args.uri, args.line, args.cell)
    if found is None:
        return CellVerdictAnswer(found=False)
    nb, cell = found
    result = nb.results.get(cell.key)
    if result is None:
        return CellVerdictAnswer(found=True, checked=False, stale=False)
    p = result.prediction
    stale = result.stamp.text != cell.text or (args.text is not None and args.text != result.stamp.text)
    ignored = nb.ignored.get(cell.key) == cell.text
    origins = []
    for o in p.origin:
        src = result.executed[o.cell] if o.cell is not None and 0 <= o.cell < len(result.executed) else None
        origins.append(
            OriginRow(
                variable=o.variable,
                execution_count=o.execution_count,
                line=o.line,
                uri=src.uri if src is not None else None,
                index=src.index if src is not None else None,
            )
        )
    shown = None if p.line is None else p.line + 1 + (cell.first_line if in_script(cell) else 0)
    return CellVerdictAnswer(
        found=True,
        checked=True,
        stale=stale,
        ignored=ignored,
        crash=p.crash,
        certainty=p.certainty,
        verdict=p.verdict,
        no_verdict=p.no_verdict,
        label=words.label(p.certainty) if p.crash else p.message,
        question=words.guard_question(p.certainty, p.exception, shown, p.message) if p.crash else None,
        exception=p.exception,
        line=p.line,
        message=p.message,
        diagnosis=p.diagnosis,
        evidence=[EvidenceRow(fact=e.fact, value=e.value) for e in p.evidence],
        origin=origins,
        fix=p.fix.description if p.fix is not None else None,
        fixes=[
            FixRow(
                title=f.title or f.description,
                status=f.status(),
                verified=f.verified(),
                start_line=f.start_line,
                end_line=f.end_line if f.end_line is not None else f.start_line + 1,
                new_text=f.new_text,
            )
            for f in p.fixes
            if f.verification is not None and f.new_text is not None and f.start_line is not None
        ],
        source=p.source.label(),
        prediction_id=p.id,
        block_run=bool(p.crash and p.certainty in BLOCKING and not stale and not ignored),
    )


def register(ls: CraneServer) -> None:
    @ls.command(VERDICT)
    def verdict(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        from crane_lsp.server.command_args import BadArguments, CellArgs, parse

        try:
            args = parse(CellArgs, arguments)
        except BadArguments as exc:
            answer = CellVerdictAnswer(found=False, error=f"bad arguments: {exc}")
        else:
            answer = cell_verdict(server, args)
        return answer.wire()
