"""Show what crane sees in the kernel for one cell: the summaries of every variable it uses, as a table
and as the exact text an LLM prompt would carry ("what will be sent?").

By default a fresh kernel is started in the notebook's folder and the cells before the target are
replayed in their recorded execution order; ``--existing`` reads a running kernel instead.
Exit status: 0 shown, 2 the notebook, the cell or the kernel could not be used.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from crane_lsp.commands.common import replay_with_progress, report_replay_failures, say
from crane_lsp.kernel.agent.wire import Kind

if TYPE_CHECKING:
    from rich.console import Console

    from crane_lsp.kernel.replay import ReplayReport
    from crane_lsp.snapshot import ObjectSummary, Snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", help="the notebook (.ipynb, or a .py script with '# %%' cells)")
    parser.add_argument(
        "--cell", help="target code cell: 1-based position among code cells, or a cell id (default: last)"
    )
    parser.add_argument("--json", action="store_true", help="print the raw snapshot as JSON")
    parser.add_argument(
        "--max-columns", type=int, default=20, metavar="K", help="DataFrame columns with statistics"
    )
    parser.add_argument(
        "--privacy", action="store_true", help="structure only: no example values or string contents"
    )
    parser.add_argument(
        "--existing",
        nargs="?",
        const="",
        metavar="CONNECTION_FILE",
        help="read a running kernel instead of replaying (default: the notebook's Jupyter session, "
        "else the newest kernel)",
    )
    parser.add_argument("--kernel", default="python3", help="kernel name for the replay (default: python3)")
    parser.add_argument("--cell-timeout", type=float, default=600.0, help="seconds per replayed cell")
    parser.add_argument(
        "--stop-on-error", action="store_true", help="stop replaying at the first failing cell"
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    err = Console(stderr=True)
    try:
        return asyncio.run(_inspect(args, err))
    except _UsageError as exc:
        say(err, "error:", str(exc), "red")
        return 2


class _UsageError(Exception):
    pass


async def _inspect(args: argparse.Namespace, err: Console) -> int:
    from crane_lsp.analysis.parse import analyze_whole
    from crane_lsp.commands.common import read_user_notebook
    from crane_lsp.kernel.connection import ConnectionNotFound, discover
    from crane_lsp.kernel.link import KernelLink, KernelLinkError
    from crane_lsp.notebook import NotebookError
    from crane_lsp.pipeline import probe_query
    from crane_lsp.settings import Settings

    try:
        notebook = read_user_notebook(args.notebook)
        if not notebook.code_cells:
            raise _UsageError(f"{args.notebook} has no code cells")
        target = notebook.find_code_cell(args.cell) if args.cell is not None else len(notebook.code_cells) - 1
    except NotebookError as exc:
        raise _UsageError(str(exc)) from exc
    source = notebook.code_cells[target].source
    facts = analyze_whole(source)  # every line, however long the cell: the terminal waits for all of it
    query = probe_query(
        facts, Settings.model_validate({"max_columns": args.max_columns, "privacy": args.privacy})
    )

    report: ReplayReport | None = None
    try:
        if args.existing is not None:
            path = discover(args.existing or None, notebook=notebook.path)
            say(err, "reading", f"the running kernel of {path}", "dim")
            link = await KernelLink.connect(path)
        else:
            link, report = await replay_with_progress(
                notebook,
                target,
                err,
                kernel_name=args.kernel,
                stop_on_error=args.stop_on_error,
                cell_timeout=args.cell_timeout,
            )
        try:
            snapshot = await link.snapshot(query)
        finally:
            await link.close()
    except (KernelLinkError, ConnectionNotFound) as exc:
        raise _UsageError(str(exc)) from exc

    if report is not None:
        report_replay_failures(err, report)
    if facts.syntax_error:
        say(err, "the target cell does not parse:", facts.syntax_error)
    if args.json:
        sys.stdout.write(snapshot.model_dump_json(indent=2, exclude_none=True) + "\n")
    else:
        _print_human(snapshot, target, source, args)
    return 0


def _shape(obj: ObjectSummary) -> str:
    from crane_lsp.render import format_shape

    if obj.shape is not None:
        return format_shape(obj.shape)
    return "" if obj.length is None else f"len {obj.length}"


def _details(obj: ObjectSummary, privacy: bool) -> str:
    from crane_lsp.render import render_object

    # the prompt line minus its head: one renderer, so the table and the prompt cannot disagree
    first = render_object("x", obj, privacy=privacy).split("\n", 1)[0]
    parts = first.split(" | ")[1:]
    drop = ("shape ", "dtype ", "len ")
    text = " | ".join(p for p in parts if not p.startswith(drop))
    if obj.n_columns is not None:
        text = f"{obj.n_columns} columns" + (f" | {text}" if text else "")
    return text


def _print_human(snapshot: Snapshot, target: int, source: str, args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.table import Table
    from rich.text import Text

    from crane_lsp.render import render_snapshot

    out = Console()
    out.print(Panel(Syntax(source, "python", line_numbers=True), title=f"target: code cell {target + 1}"))
    table = Table(title="what the kernel holds for this cell", show_lines=False)
    for col in ("name", "kind", "type", "shape/len", "dtype"):
        table.add_column(col, overflow="fold", no_wrap=col != "type")
    table.add_column("details", overflow="fold", ratio=1)
    for name in sorted(snapshot.variables):
        obj = snapshot.variables[name]
        table.add_row(
            *map(
                Text,
                (
                    name,
                    obj.kind,
                    obj.type.rsplit(".", 1)[-1],
                    _shape(obj),
                    obj.dtype or "",
                    _details(obj, args.privacy),
                ),
            )
        )
    out.print(table)
    for name in sorted(snapshot.variables):
        cols = snapshot.variables[name].columns
        if cols:
            ct = Table(title=f"{name}: columns", show_header=True)
            for col in ("column", "dtype", "statistics"):
                ct.add_column(col, overflow="fold")
            for c in cols[: args.max_columns]:
                ct.add_row(*map(Text, (c.name, c.dtype, _details_stats(c.stats, args.privacy))))
            out.print(ct)
    facts = []
    if snapshot.undefined:
        facts.append("undefined: " + ", ".join(sorted(snapshot.undefined)))
    for chain, fact in sorted(snapshot.attributes.items()):
        facts.append(
            f"attribute {chain}: " + {True: "exists", False: "MISSING", None: "cannot tell"}[fact.exists]
        )
    for p, ok in sorted(snapshot.paths.items()):
        facts.append(f"path {p}: " + ("exists" if ok else "MISSING"))
    for m, ok in sorted(snapshot.modules.items()):
        facts.append(f"module {m}: " + ("importable" if ok else "NOT INSTALLED"))
    if facts:
        out.print(Panel(Text("\n".join(facts)), title="facts"))
    if snapshot.errors:
        out.print(Panel(Text("\n".join(snapshot.errors)), title="probe notes", style="yellow"))
    prompt = render_snapshot(snapshot, privacy=args.privacy, max_columns=args.max_columns)
    out.rule("prompt text (exactly what an LLM would be sent)")
    out.print(Text(prompt or "(nothing)"), soft_wrap=True)
    out.rule()
    meta = [
        f"generation {snapshot.generation}" if snapshot.generation is not None else None,
        f"probe {snapshot.elapsed_ms:.1f} ms" if snapshot.elapsed_ms is not None else None,
        "deadline hit" if snapshot.deadline_hit else None,
        "taken while a cell was running" if snapshot.taken_while_busy else None,
    ]
    line = ", ".join(m for m in meta if m)
    if line:
        out.print(Text(line, style="dim"))


def _details_stats(stats: Any, privacy: bool) -> str:
    from crane_lsp.render import render_object
    from crane_lsp.snapshot import ObjectSummary

    if stats is None:
        return ""
    head = render_object("x", ObjectSummary(kind=Kind.SERIES, type="", stats=stats), privacy=privacy)
    return head.split(" | ", 1)[1] if " | " in head else ""
