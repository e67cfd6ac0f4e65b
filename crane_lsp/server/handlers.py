"""The LSP surface: which messages the server answers, each a thin call into ``CraneServer``."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from crane_lsp.server import presentation
from crane_lsp.server.app import (
    ATTACH_NOTIFICATION,
    CraneServer,
    NotebookState,
    lsp_view,
)
from crane_lsp.server.config import plain, section
from crane_lsp.server.documents import CellView, wants_percent
from crane_lsp.server.jupyter_documents import is_virtual_notebook, view_for_text
from crane_lsp.server.jupyter_sessions import with_connection_file
from crane_lsp.server.kernel_target import shown

if TYPE_CHECKING:
    from crane_lsp.kernel.transport_relay import RelayTarget

log = logging.getLogger(__name__)
CLOSE_LIMIT_S = 10.0  # shutdown's answer waits this long at most for the kernels' links to close


def _cell(server: CraneServer, arguments: tuple[Any, ...]) -> tuple[NotebookState, CellView] | str:
    """The cell a command names, or why there is none."""
    from crane_lsp.server.command_args import BadArguments, CellArgs, parse

    try:
        args = parse(CellArgs, arguments)
    except BadArguments as exc:
        return f"bad arguments: {exc}"
    return server.find_cell(args.uri, args.line, args.cell) or "no such cell"


def register(ls: CraneServer) -> None:
    from crane_lsp.server import preview_command, undo_command  # crane.previewCell, crane.undoLastCell...

    @ls.feature(types.INITIALIZE)
    def initialize(server: CraneServer, params: types.InitializeParams) -> None:
        options = plain(params.initialization_options)
        server.init_options = options if isinstance(options, dict) else {}

    @ls.feature(types.INITIALIZED)
    async def initialized(server: CraneServer, params: types.InitializedParams) -> None:
        server.warm_up()
        pulled = await server.pull_configuration()
        server.apply_settings(pulled, base=section(server.init_options))
        server.send_status()
        server.start_watching()

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        server: CraneServer, params: types.DidChangeConfigurationParams
    ) -> None:
        pushed = plain(params.settings)
        if isinstance(pushed, dict) and isinstance(pushed.get("crane"), dict):
            # a push names what changed: initializationOptions (e.g. the connection file) still hold
            server.apply_settings(pushed["crane"], base=section(server.init_options))
        else:
            server.apply_settings(await server.pull_configuration(), base=section(server.init_options))

    # -------------------------------------------------------------- notebooks

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(server: CraneServer, params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = server.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if notebook is None:
            return
        view = lsp_view(server, notebook)
        view.uri = params.notebook_document.uri
        pending = {c.key for c in view.code_cells if c.execution_order is None}
        nb = server.open_notebook(view, pending)
        server.state_changed(nb, bump=False)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(server: CraneServer, params: types.DidChangeNotebookDocumentParams) -> None:
        nb = server.notebook_of(params.notebook_document.uri)
        if nb is None:
            return
        before = {c.key: c for c in nb.view.cells}
        server.refresh_view(nb)
        cells = params.change.cells
        if cells is None:
            return
        edited = [t.document.uri for t in cells.text_content or []]
        ran_at: int | None = None
        for data in cells.data or []:
            key = data.document
            old = before.get(key)
            order = data.execution_summary.execution_order if data.execution_summary else None
            if order is not None and (old is None or old.execution_order != order):
                nb.pending.discard(key)
                cell = nb.view.cell(key)
                ran_at = cell.index if cell else ran_at
        if cells.structure:
            removed = {c.uri for c in cells.structure.did_close or []}
            for key in removed:
                nb.results.pop(key, None)
                nb.pending.discard(key)
                server.cells.cancel(key)
                server.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=key, diagnostics=[])
                )
            for opened in cells.structure.did_open or []:
                key = opened.uri
                nb.pending.add(key)
                if opened.text.strip():
                    edited.append(key)
        server.edited(nb, edited)
        if ran_at is not None:
            server.state_changed(nb, anchor=ran_at)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(server: CraneServer, params: types.DidSaveNotebookDocumentParams) -> None:
        """Saving changes neither the cells nor the kernel: nothing to re-check."""

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def nb_close(server: CraneServer, params: types.DidCloseNotebookDocumentParams) -> None:
        await server.close_notebook(params.notebook_document.uri)

    # -------------------------------------------------------------- percent-format scripts

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def doc_open(server: CraneServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        uri = doc.uri
        followed = wants_percent(uri, doc.language_id, doc.text) or is_virtual_notebook(uri, doc.language_id)
        if server.notebook_of(uri) is not None or not followed:
            return
        nb = server.open_notebook(view_for_text(uri, doc.text), set())
        server.state_changed(nb, bump=False)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def doc_change(server: CraneServer, params: types.DidChangeTextDocumentParams) -> None:
        nb = server.notebook_of(params.text_document.uri)
        if nb is None or not nb.view.percent:
            return
        old_texts = {c.text for c in nb.view.cells}
        server.refresh_view(nb)
        edited = [c.key for c in nb.view.code_cells if c.text not in old_texts]
        server.edited(nb, edited)  # first: an edited cell keeps its squiggle (stale) while re-checked
        server.publish(nb)  # lines may have moved: every squiggle of the script is placed again

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def doc_close(server: CraneServer, params: types.DidCloseTextDocumentParams) -> None:
        nb = server.notebook_of(params.text_document.uri)
        if nb is not None and nb.view.percent:
            await server.close_notebook(nb.uri)

    # -------------------------------------------------------------- kernels

    @ls.feature(ATTACH_NOTIFICATION)
    async def attach_notification(server: CraneServer, params: Any) -> None:
        await attach(server, (params,))

    async def attach(server: CraneServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
        from crane_lsp.server.command_args import AttachArgs, BadArguments, parse, raw

        # JupyterLab names kernels by id; a server in gateway mode has no file for it (reads runtime files)
        named = await asyncio.to_thread(with_connection_file, raw(arguments, AttachArgs.positional))
        needs = "crane.attachKernel needs {notebookUri, connectionFile or kernelUrl}"
        try:
            args = parse(AttachArgs, named)
        except BadArguments as exc:
            return {"attached": False, "error": f"{needs} ({exc})"}
        if not args.notebook_uri or not (args.connection_file or args.relay):
            return {"attached": False, "error": needs}
        uri, path = args.notebook_uri, args.connection_file
        nb = server.notebook_of(uri)
        uri = nb.uri if nb is not None else uri
        target: str | RelayTarget = path
        if args.relay:  # the editor's own kernel connection, relayed over LSP (kernel/transport_relay.py)
            from crane_lsp.kernel.transport_relay import RelayTarget

            # the RAW notebookUri the editor sent: the extension looks its kernel up by it
            target = RelayTarget(server.protocol.send_request_async, args.notebook_uri)
        error = await server.kernels.attach(uri, target)
        if error is not None:
            att = server.kernels.attachment(uri)
            where = target.label if not isinstance(target, str) else shown(target)
            server.notices.attach_failed(uri, where, error, att.connection_file if att.link else None)
        else:  # a new kernel: everything shown was computed from another state
            server.forget_pipeline(uri)
            if nb is not None:
                server.state_changed(nb)
        server.send_status(uri)
        return {"attached": error is None, "error": error}

    # -------------------------------------------------------------- hover and code actions

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(server: CraneServer, params: types.HoverParams) -> types.Hover | None:
        found = server.find_cell(params.text_document.uri, params.position.line)
        if found is None:
            return None
        nb, cell = found
        undone = undo_command.hover_line(nb, cell, params.position.line)  # the last run raised here
        result = nb.results.get(cell.key)
        if result is None or result.stamp.text != cell.text:
            return _undo_hover(undone)
        if not result.prediction.crash and not result.prediction.says_why_not():
            return _undo_hover(undone)
        rng = presentation.prediction_range(result.prediction, cell, server.encoding)
        if not rng.start.line <= params.position.line <= rng.end.line:
            return _undo_hover(undone)
        text = presentation.hover_markdown(result.prediction, result.executed, cell)
        if undone is not None:
            text += "\n\n" + undone
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=rng
        )

    def _undo_hover(line: str | None) -> types.Hover | None:
        """A crashed run's "Before raising at line 7 ..." alone, where no verdict has a hover."""
        if line is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=line))

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source]
        ),
    )
    def code_action(server: CraneServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        found = server.find_cell(params.text_document.uri, params.range.start.line)
        if found is None:
            return None
        nb, cell = found
        result = nb.results.get(cell.key)
        prediction = result.prediction if result and result.stamp.text == cell.text else None
        ours = [d for d in params.context.diagnostics if d.source == presentation.SOURCE]
        return presentation.code_actions(prediction, cell, ours[0] if ours else None, server.encoding)

    # -------------------------------------------------------------- commands

    @ls.command(presentation.RECHECK)
    async def recheck(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        found = _cell(server, arguments)
        if isinstance(found, str):
            return {"checked": False, "error": found}
        nb, cell = found
        await server.recheck(cell.key)
        result = nb.results.get(cell.key)
        return {"checked": True, "prediction": result.prediction.model_dump() if result else None}

    @ls.command(presentation.ATTACH)
    async def attach_command(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        return await attach(server, arguments)

    @ls.command(presentation.SHOW_PROMPT)
    async def show_prompt(server: CraneServer, *arguments: Any) -> dict[str, Any] | None:
        found = _cell(server, arguments)
        if isinstance(found, str):
            return None
        nb, cell = found
        pipeline = await server.pipeline(nb)
        exchange = pipeline.last_exchange(cell.text)
        if not exchange:
            return None
        prompt, answer = exchange
        return {"prompt": prompt, "answer": answer}

    @ls.command(presentation.IGNORE)
    def ignore(server: CraneServer, *arguments: Any) -> dict[str, Any]:
        found = _cell(server, arguments)  # the prediction id is informative: the cell's text is ignored
        if isinstance(found, str):
            return {"ignored": False, "error": found}
        nb, cell = found
        nb.ignored[cell.key] = cell.text
        server.publish(nb, cell.uri)
        return {"ignored": True}

    undo_command.register(ls)  # crane.undoLastCell (docs/undo.md)
    preview_command.register(ls)  # crane.previewCell: a cell tried in the sandbox (docs/undo.md)

    @ls.feature(types.SHUTDOWN)
    async def shutdown(server: CraneServer, params: Any) -> None:
        """Close the kernels' links, but answer within CLOSE_LIMIT_S: the editor waits for this answer
        before it sends ``exit``, and a link to a server that stopped answering must not hold it."""
        closing = asyncio.ensure_future(server.close())
        done, _ = await asyncio.wait({closing}, timeout=CLOSE_LIMIT_S)
        if not done:
            log.warning("shutdown: links still closing after %.0f s; exit ends them", CLOSE_LIMIT_S)
