"""The pygls language server: notebook state, checking cells, publishing what was found.

Handlers stay thin: they update a ``NotebookState`` and ask the ``Debouncer`` to check cells. The
check job predicts in two phases (the built-in checks, published at once; then the dry run / LLM,
which replaces them later) and publishes only while its ``Stamp`` (cell text, kernel generation,
settings) still holds, so an outdated answer never reaches the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from crane_lsp import __version__
from crane_lsp.server import presentation
from crane_lsp.server.checkpass import (
    PROCESS_MIN_LINES,
    finish_checks_phase,
    run_checks_phase,
    run_slow_phase,
)
from crane_lsp.server.config import parse_settings, plain
from crane_lsp.server.documents import (
    CellView,
    NotebookView,
    from_lsp_notebook,
    notebook_sync_options,
)
from crane_lsp.server.fixing import FixVerifier
from crane_lsp.server.jupyter_documents import view_for_text
from crane_lsp.server.kernel_port import KernelPort, KernelsFactory, remote_settings, where_payload
from crane_lsp.server.kernels import Kernels
from crane_lsp.server.notices import Notices
from crane_lsp.server.offload import Offload
from crane_lsp.server.probing import CountedLink, Stats
from crane_lsp.server.protocol import CraneProtocol, strict_converter
from crane_lsp.server.scheduler import Debouncer, Stamp, cells_to_check
from crane_lsp.server.textdoc import for_python
from crane_lsp.server.workerproc import ProcessOffload

if TYPE_CHECKING:  # pydantic models: imported once the first settings or check need them
    from crane_lsp.kernel.link import KernelEvent, KernelLink
    from crane_lsp.llm.predictor import LLMPredictor
    from crane_lsp.pipeline import Pipeline, Run
    from crane_lsp.prediction import Prediction
    from crane_lsp.server.undo_follow import UndoLine
    from crane_lsp.settings import Settings

log = logging.getLogger(__name__)

STATUS = "crane/status"
ATTACH_NOTIFICATION = "crane/attachKernel"
CERTAIN = ("certain", "observed")
HISTORY_TIMEOUT_S = 3.0
SLOW_CHECK_MS = 1000.0  # checks slower than this are logged with where the time went
WATCH_S = 2.0  # how often idle kernels are asked whether their state moved (restarts, unseen cells)
HEARTBEAT_S = 2.0  # a kernel that does not answer its control channel this long is "unresponsive"
STATE_DELAY_S = 0.05  # coalesce a burst of execution summaries / kernel events into one re-check


def norm(uri: str) -> str:
    return unquote(uri)


@dataclass
class CellResult:
    prediction: Prediction
    stamp: Stamp
    executed: list[CellView | None]  # view cells of the executed sources, for origins


@dataclass
class NotebookState:
    uri: str
    view: NotebookView
    generation: int = 0
    pending: set[str] = field(default_factory=set)  # cell keys edited and not run since
    results: dict[str, CellResult] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)  # cell key -> text it was ignored for
    executed_texts: set[str] = field(default_factory=set)  # percent scripts: what the kernel ran
    anchor: int | None = None  # the cell edited or run last: checking starts near it
    backlog: list[str] = field(default_factory=list)  # cells to re-check after the ones in flight
    kernel_generation: int | None = None  # the kernel's execution count when last looked at
    # the last run when it raised, undo on ("Before raising at line 7 the cell rebound ...") for the
    # crashed cell's hover; gone when the next cell runs (issue 37)
    undo_line: UndoLine | None = None


@dataclass
class _Bound:
    """A notebook's pipeline and the link it was built on (rebuilt when either or the settings move)."""

    pipeline: Pipeline
    link: CountedLink | None  # what the server asks of the kernel (history, heartbeat, generation)
    raw: KernelLink | None
    settings_rev: int


class CraneServer(LanguageServer):
    """The server; ``kernels`` builds what it reads kernels through (``Kernels`` unless a test
    hands in a fake: ``create_server(kernels=...)``)."""

    def __init__(self, kernels: KernelsFactory | None = None) -> None:
        super().__init__(
            "crane-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebook_sync_options(),
            protocol_cls=CraneProtocol,
            converter_factory=strict_converter,
        )
        self._settings: Settings | None = None  # the defaults, built when first read
        self.settings_rev = 0
        self.init_options: dict[str, Any] = {}
        self.notebooks: dict[str, NotebookState] = {}
        self.owner: dict[str, str] = {}  # cell key / document uri -> notebook uri
        self.kernels: KernelPort = (kernels or Kernels)(self._on_kernel_event)
        self.cells = Debouncer(self._check_job)
        self.fixes = FixVerifier()  # a crash's candidate fixes, dry-run after its verdict is published
        self.states = Debouncer(self._state_job)
        self.stats = Stats()
        self.offload = Offload()  # the dry run / LLM CPU work: a thread, interrupted when superseded
        self.procs = ProcessOffload()  # the built-in checks: a worker process (a parse holds the GIL)
        self.notices = Notices(self._show_message)
        self._bypass: set[str] = set()
        self._pipelines: dict[str, _Bound] = {}  # notebook uri -> its pipeline
        self._llm: LLMPredictor | None = None
        self._llm_error: str | None = None  # why the LLM could not be set up (crane/status)
        self._llm_slots = asyncio.Semaphore(1)  # replaced by the settings' llmConcurrency
        self._watcher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ settings

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from crane_lsp.settings import Settings

            self._settings = Settings()
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._settings = value

    def warm_up(self) -> None:
        """Import what the first check needs in the background, once ``initialize`` is answered."""
        import importlib

        def load() -> None:
            # the kernel link too: imported on the loop by the first attach, it stalled it 1-2 s
            heavy = ("settings", "pipeline", "checks.runner", "kernel.link")
            for name in (f"crane_lsp.{module}" for module in heavy):
                try:
                    importlib.import_module(name)
                except Exception as exc:  # the check that needs it will say what is wrong
                    log.info("warming up %s: %s", name, exc)

        self._background(asyncio.to_thread(load))
        self.procs.start()

    @property
    def encoding(self) -> str:
        enc = getattr(self.workspace, "position_encoding", None)
        return str(enc) if enc else types.PositionEncodingKind.Utf16

    def apply_settings(self, options: Any, *, base: dict[str, Any] | None = None) -> None:
        pushed = plain(options)
        merged = {**(base or {}), **(pushed if isinstance(pushed, dict) else {})}
        settings, problem = parse_settings(merged)
        if problem:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=problem))
        previous, self.settings = self.settings, settings
        self.settings_rev += 1
        old_llm, self._llm = self._llm, self._make_llm(settings)
        if old_llm is not None:
            self._background(old_llm.aclose())
        self._llm_slots = asyncio.Semaphore(settings.llm_concurrency)
        self._pipelines.clear()
        self.kernels.default_connection_file = settings.connection_file
        moved = remote_settings(self.kernels, settings)  # jupyterServerUrl, the token
        if settings.connection_file != previous.connection_file or moved:
            for uri in self.notebooks:  # a new kernel named in the settings: attach it on the next check
                att = self.kernels.attachment(uri)
                if att.explicit is None and att.link is not None:
                    self._background(self.kernels.lost(uri, "connectionFile changed", backoff=False))
                elif att.link is None:  # e.g. a refused token, now changed: try again at once
                    att.last_try, att.failures = 0.0, 0
        from crane_lsp.undo import configure_for  # undo turned on or off: told now, not at the next check

        for nb in self.notebooks.values():
            link = self.kernels.attachment(nb.uri).link
            configure_for(nb.uri, link, settings, self.settings_rev, self._background)
            self.state_changed(nb, bump=False)

    def _background(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Fire and forget, keeping a reference so the task is not collected mid-way."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _make_llm(self, settings: Settings) -> LLMPredictor | None:
        self._llm_error = None
        if settings.provider == "none":
            return None
        try:
            from crane_lsp.llm.predictor import LLMPredictor

            llm = LLMPredictor(settings)
            llm.on_state = self._llm_state
            return llm
        except Exception as exc:  # a missing key or package: say so, keep the built-in checks
            self._llm_error = str(exc)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=f"crane: LLM disabled: {exc}")
            )
            return None

    async def pull_configuration(self) -> dict[str, Any]:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return {}
        try:
            result = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="crane")])
            )
        except Exception as exc:
            log.info("workspace/configuration failed: %s", exc)
            return {}
        value = plain(result[0]) if result else None
        return value if isinstance(value, dict) else {}

    # ------------------------------------------------------------------ notebooks

    def open_notebook(self, view: NotebookView, pending: set[str]) -> NotebookState:
        nb = NotebookState(uri=view.uri, view=view, pending=pending)
        self.notebooks[view.uri] = nb
        self._own(nb)
        return nb

    def _own(self, nb: NotebookState) -> None:
        for cell in nb.view.cells:
            for name in (cell.key, cell.uri, norm(cell.key), norm(cell.uri)):
                self.owner[name] = nb.uri

    def refresh_view(self, nb: NotebookState) -> None:
        """Re-read the notebook's cells from the workspace after a change."""
        if nb.view.percent:
            old = nb.view
            doc = self.workspace.get_text_document(nb.uri)
            nb.view = view_for_text(nb.uri, doc.source)  # a `# %%` script or jupyter-lsp's notebook
            _follow_text(nb, old)
        else:
            notebook = self.workspace.get_notebook_document(notebook_uri=nb.uri)
            if notebook is None:
                return
            nb.view = lsp_view(self, notebook)
        self._own(nb)

    async def close_notebook(self, uri: str) -> None:
        nb = self.notebook_of(uri)
        if nb is None:
            return
        del self.notebooks[nb.uri]
        self.cells.cancel_all(c.key for c in nb.view.cells)
        for c in nb.view.cells:
            self.fixes.cancel(c.key)
        self.states.cancel(uri)
        for target in nb.view.target_uris():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=target, diagnostics=[]))
        for cell in nb.view.cells:
            self.owner.pop(cell.key, None)
            self.owner.pop(cell.uri, None)
        self._pipelines.pop(nb.uri, None)

    def notebook_of(self, key_or_uri: str) -> NotebookState | None:
        """The notebook a cell key, cell URI or notebook URI belongs to (percent-encoding tolerated)."""
        for candidate in (key_or_uri, norm(key_or_uri)):
            uri = self.owner.get(candidate, candidate)
            if uri in self.notebooks:
                return self.notebooks[uri]
        return None

    def find_cell(
        self, uri: str, line: int = 0, key: str | None = None
    ) -> tuple[NotebookState, CellView] | None:
        nb = self.notebook_of(key or uri)
        if nb is None:
            return None
        if key and (cell := nb.view.cell(key)) is not None:
            return nb, cell
        target = next((c.uri for c in nb.view.cells if norm(c.uri) == norm(uri)), uri)
        found = nb.view.cell_at(target, line)
        return (nb, found[0]) if found else None

    # ------------------------------------------------------------------ scheduling

    def edited(self, nb: NotebookState, keys: Sequence[str]) -> None:
        code = False
        for key in keys:
            cell = nb.view.cell(key)
            if cell is None or cell.kind != "code":
                continue
            nb.pending.add(key)
            nb.anchor = cell.index
            self.cells.schedule(key, self.settings.debounce_ms / 1000)
            code = True
        if code:
            self._prepare_dry_run(nb)

    def _prepare_dry_run(self, nb: NotebookState) -> None:
        """The user started editing: the kernel forks and jails the next dry run's child now, in the
        background (never awaited by a prediction), when its kernel is attached and idle and no check
        is in flight; at most once per kernel generation per window (``DryRunner.wants_prepare``)."""
        bound = self._pipelines.get(nb.uri)
        if bound is None or bound.settings_rev != self.settings_rev or bound.raw is None:
            return
        if self.stats.checking or self.kernels.state(nb.uri) != "attached":
            return
        if self.kernels.attachment(nb.uri).link is not bound.raw:
            return
        from crane_lsp.undo import configure_for  # undo: the kernel holds a copy from each cell's start

        configure_for(nb.uri, bound.raw, self.settings, self.settings_rev, self._background)
        from crane_lsp.dryrun import DryRunner

        runner = bound.pipeline.dryrun
        generation = (nb.generation, nb.kernel_generation)
        if isinstance(runner, DryRunner) and runner.wants_prepare(generation):
            self._background(runner.prepare(generation))

    def state_changed(self, nb: NotebookState, *, bump: bool = True, anchor: int | None = None) -> None:
        """The kernel state (or the settings) changed: re-check pending cells, withdraw the rest."""
        if bump:
            nb.generation += 1
        if anchor is not None:
            nb.anchor = anchor
        self.states.schedule(nb.uri, STATE_DELAY_S)

    async def recheck(self, key: str) -> None:
        """Check one cell now, bypassing the LLM cache (``crane.recheckCell``); returns when done."""
        self._bypass.add(key)
        await asyncio.wait({self.cells.schedule(key, 0)})  # an edit may cancel it: that is no error

    def forget_pipeline(self, notebook_uri: str) -> None:
        self._pipelines.pop(notebook_uri, None)

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        self.cells.cancel_all()
        self.states.cancel_all()
        self.fixes.cancel_all()
        await self.kernels.close()
        self.procs.close()

    async def _state_job(self, uri: str) -> None:
        nb = self.notebooks.get(uri)
        if nb is None:
            return
        if nb.view.percent:
            await self._refresh_percent_pending(nb)
        # every pending cell, nearest first: ``maxPendingCells`` at once, the rest one by one after
        # them (``_next_from_backlog``); until its turn an outdated squiggle stays, marked stale
        chosen = cells_to_check(nb.view.cells, nb.pending, nb.anchor, len(nb.view.cells))
        keys = {c.key for c in chosen}
        # cells that ran since: their outcome is known, a prediction about them has nothing to say
        withdrawn = [k for k, r in nb.results.items() if k not in keys and not self._current(nb, k, r.stamp)]
        for k in withdrawn:
            del nb.results[k]
        now = [c for c in chosen if not self.cells.waiting(c.key)]  # a cell being typed in keeps its debounce
        limit = max(self.settings.max_pending_cells, 1)
        nb.backlog = [c.key for c in now[limit:]]
        # a backlog cell whose check is still running started from the old state: its result will be
        # dropped as outdated, and the backlog skips cells being checked, so it would never come back
        self.cells.cancel_all(nb.backlog)
        self.publish(nb)  # outdated results are shown as stale from here on
        for cell in now[:limit]:
            self.cells.schedule(cell.key, 0)
        self.send_status(nb.uri)

    def _next_from_backlog(self, nb: NotebookState) -> None:
        """One check finished: start the next waiting re-check of the notebook, if any."""
        while nb.backlog:
            key = nb.backlog.pop(0)
            if key in nb.pending and nb.view.cell(key) is not None and not self.cells.active(key):
                self.cells.schedule(key, 0)
                return

    def is_due(self, nb: NotebookState, key: str) -> bool:
        """A new result for the cell is on its way (typed in, queued or being checked)."""
        return self.cells.active(key) or key in nb.backlog

    async def _refresh_percent_pending(self, nb: NotebookState) -> None:
        """A script has no execution summaries: a cell ran when the kernel's history holds its text."""
        link = (await self.bound(nb)).link
        if link is not None:
            with contextlib.suppress(Exception):
                nb.executed_texts = {c.source.strip() for c in await link.history(timeout=HISTORY_TIMEOUT_S)}
        nb.pending = {c.key for c in nb.view.code_cells if c.text.strip() not in nb.executed_texts}

    def _on_kernel_event(self, notebook_uri: str, event: KernelEvent) -> None:
        nb = self.notebooks.get(notebook_uri)
        if event.kind == "cell_started":
            if nb is not None:
                nb.undo_line = None
            self.stats.kernel_busy = True
            self.send_status(notebook_uri)
            return
        self.stats.kernel_busy = False
        if nb is None:
            return
        nb.undo_line = None  # true of the last cell only: another cell or a restart ends it
        if event.kind == "cell_finished" and event.generation is not None:
            # only real cells finish (the link never reports silent requests): the state moved on
            nb.kernel_generation = event.generation  # the watcher compares from here on
            if self.settings.undo:  # did it raise, and what had it changed: asked in the background
                from crane_lsp.server.undo_follow import follow_run
                from crane_lsp.undo import configure_for  # told already, or asked again (it was busy)

                link = self.kernels.attachment(nb.uri).link
                configure_for(nb.uri, link, self.settings, self.settings_rev, self._background)
                self._background(follow_run(link, nb, event.generation))
        log.debug("kernel event %s (generation %s): re-checking %s", event.kind, event.generation, nb.uri)
        self.state_changed(nb)

    def _current(self, nb: NotebookState, key: str, stamp: Stamp) -> bool:
        cell = nb.view.cell(key)
        return (
            cell is not None
            and cell.text == stamp.text
            and stamp.generation == nb.generation
            and stamp.settings_rev == self.settings_rev
        )

    # ------------------------------------------------------------------ checking one cell

    async def pipeline(self, nb: NotebookState) -> Pipeline:
        """The notebook's pipeline (``crane.showPrompt`` reads its LLM's last exchange)."""
        return (await self.bound(nb)).pipeline

    async def bound(self, nb: NotebookState) -> _Bound:
        """The notebook's pipeline and link, rebuilt when its kernel link or the settings changed."""
        from crane_lsp.pipeline import Pipeline

        link = await self.kernels.link_for(nb.uri)
        cached = self._pipelines.get(nb.uri)
        if cached and cached.raw is link and cached.settings_rev == self.settings_rev:
            return cached
        counted = CountedLink(link, self.stats) if link is not None else None
        pipeline = Pipeline.from_settings(self.settings, counted, llm=self._llm, offload=self.offload)
        bound = self._pipelines[nb.uri] = _Bound(pipeline, counted, link, self.settings_rev)
        from crane_lsp.undo import configure_for  # a new link or new settings: undo on or off there

        configure_for(nb.uri, link, self.settings, self.settings_rev, self._background)
        return bound

    async def _executed(
        self, nb: NotebookState, link: CountedLink | None
    ) -> tuple[list[str], list[CellView | None]]:
        """The executed sources in order (the kernel's history when attached) and their view cells."""
        if link is not None:
            try:
                history = await link.history(timeout=HISTORY_TIMEOUT_S)
            except Exception as exc:
                log.info("history unavailable: %s", exc)
            else:
                sources = [c.source for c in history]
                nb.executed_texts = {s.strip() for s in sources}
                by_text = {c.text.strip(): c for c in nb.view.code_cells}
                return sources, [by_text.get(s.strip()) for s in sources]
        ran = nb.view.executed_in_order()
        return [c.text for c in ran], list(ran)

    async def _check_job(self, key: str) -> None:
        nb = self.notebook_of(key)
        cell = nb.view.cell(key) if nb else None
        if nb is None or cell is None:
            return
        bypass = key in self._bypass
        self._bypass.discard(key)
        stamp = Stamp(cell.text, nb.generation, self.settings_rev)
        self.fixes.cancel(key)
        started = time.perf_counter()
        self.stats.checking += 1
        self.send_status(nb.uri)
        try:
            bound = await self.bound(nb)
            pipeline = bound.pipeline
            t_link = time.perf_counter()
            executed, executed_cells = await self._executed(nb, bound.link)
            t_history = time.perf_counter()
            source = for_python(cell.text)
            executed = [for_python(text) for text in executed]
            if cell.line_count > PROCESS_MIN_LINES:  # a parse this big would hold the GIL too long
                first = await run_checks_phase(self.procs, pipeline, source, executed)
            else:  # a worker thread: no process round trips on the way of every keystroke
                first = await pipeline.predict(
                    source, executed=executed, layers={"checks"}, bypass_cache=bypass
                )
            prediction, snapshot = first.prediction, first.snapshot
            if snapshot is not None:
                self.kernels.attachment(nb.uri).error = None  # the kernel answered
                if nb.kernel_generation is None:
                    nb.kernel_generation = snapshot.generation
            self.stats.predictions += 1
            await self._notice_lost_kernel(nb, prediction)
            elapsed = (time.perf_counter() - started) * 1000
            if elapsed > SLOW_CHECK_MS:
                log.info(
                    "slow check of %s: %.0f ms (attach %.0f, history %.0f, predict %.0f, kernel probe %s ms)",
                    key,
                    elapsed,
                    (t_link - started) * 1000,
                    (t_history - t_link) * 1000,
                    (time.perf_counter() - t_history) * 1000,
                    getattr(snapshot, "elapsed_ms", None),
                )
            if not self._current(nb, key, stamp):
                log.debug("dropped an outdated result for %s", key)
                return
            nb.results[key] = CellResult(prediction, stamp, executed_cells)
            self.publish(nb, cell.uri)
            self.stats.last_latency_ms = (time.perf_counter() - started) * 1000
            # a long cell: its first part's verdict is out; the checks read the rest in the worker
            whole = await finish_checks_phase(self.procs, pipeline, source, executed, first)
            if whole is not None:
                if not self._current(nb, key, stamp):
                    return
                first, prediction = whole, whole.prediction
                nb.results[key] = CellResult(prediction, stamp, executed_cells)
                self.publish(nb, cell.uri)
            if prediction.crash and prediction.certainty in CERTAIN:
                self.fixes.start(self, nb, key, stamp, pipeline, source, bypass)
                return
            if pipeline.llm is None and pipeline.dryrun is None:
                return
            later = await self._second_phase(pipeline, cell, source, executed, first, bypass)
            self.stats.second_phase += 1
            if later is not None and prediction.crash and not later.crash and later.source.layer != "dryrun":
                later = None  # no observation overrules the checks' "raises at line k if reached"
            if later is None or not self._current(nb, key, stamp):
                return
            nb.results[key] = CellResult(later, stamp, executed_cells)
            self.publish(nb, cell.uri)
            self.fixes.start(self, nb, key, stamp, pipeline, source, bypass)
        except Exception as exc:
            from crane_lsp.kernel.link import KernelLinkError

            if not isinstance(exc, KernelLinkError):
                raise
            # a kernel that did not answer in time: say so in the status, try again on the next change
            log.info("checking %s: %s", key, exc)
            self.kernels.attachment(nb.uri).error = str(exc)
        finally:
            self.stats.checking -= 1
            self.send_status(nb.uri)
            if self.notebooks.get(nb.uri) is nb:
                self._next_from_backlog(nb)

    async def _second_phase(
        self, pipeline: Pipeline, cell: CellView, source: str, executed: list[str], first: Run, bypass: bool
    ) -> Prediction | None:
        """The slow layers from the first phase's state, one request per cell (its task) and
        ``llmConcurrency`` in all."""
        async with self._llm_slots:
            at = "the cell at " if presentation.in_script(cell) else ""
            token = await self._progress_begin(f"crane: checking {at}{presentation.where(cell)}")
            try:
                if cell.line_count > PROCESS_MIN_LINES:  # its facts stay in the worker, which screens it too
                    return await run_slow_phase(self.procs, pipeline, source, executed, first, bypass)
                later = await pipeline.predict(
                    source,
                    executed=executed,
                    layers={"dryrun", "llm"},
                    bypass_cache=bypass,
                    snapshot=first.snapshot,
                )
                return later.prediction
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an unreachable model must not take the built-in result away
                log.warning("LLM prediction failed: %s", exc)
                self.window_log_message(
                    types.LogMessageParams(
                        type=types.MessageType.Warning, message=f"crane: LLM failed: {exc}"
                    )
                )
                return None
            finally:
                self._progress_end(token)

    async def _notice_lost_kernel(self, nb: NotebookState, prediction: Prediction) -> None:
        why = next((note for note in prediction.notes if note.startswith("no kernel:")), None)
        if why is not None:
            await self.kernels.lost(nb.uri, why)
            self._pipelines.pop(nb.uri, None)

    async def _progress_begin(self, title: str) -> str | None:
        caps = self.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return None
        token = f"crane-{uuid.uuid4().hex[:8]}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
        except Exception:
            return None
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
        return token

    def _progress_end(self, token: str | None) -> None:
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
            self.work_done_progress.tokens.pop(token, None)

    # ------------------------------------------------------------------ watching kernels

    def start_watching(self) -> None:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch_loop(), name="crane:watch")

    async def _watch_loop(self) -> None:
        """Notice what kernel events can miss: a restart (same ports), death, cells run elsewhere,
        and a kernel that became reachable again."""
        while True:
            await asyncio.sleep(WATCH_S)
            for nb in list(self.notebooks.values()):
                try:
                    await self.watch_once(nb)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.info("watching the kernel of %s: %s", nb.uri, exc)

    async def watch_once(self, nb: NotebookState) -> None:
        had_link = self.kernels.state(nb.uri) != "none"
        link = (await self.bound(nb)).link  # attaches (with back-off) when there is no link
        if link is None:
            if had_link:
                self.state_changed(nb)
            self.send_status(nb.uri)
            return
        if not had_link:  # (re)attached: everything shown was computed without this kernel
            self.state_changed(nb)
            self.send_status(nb.uri)
        from crane_lsp.kernel.link import KernelDead, KernelLinkError

        att = self.kernels.attachment(nb.uri)
        lost: KernelDead | None = None
        try:  # the heartbeat: a stopped (SIGSTOP) or hung kernel is neither "attached" nor "busy"
            answers = await link.responsive(HEARTBEAT_S)
        except KernelDead as exc:
            answers, lost = False, exc
        if lost is None and answers == att.unresponsive:
            att.unresponsive = not answers
            att.error = None if answers else f"no answer within {HEARTBEAT_S:g} s (stopped or hung?)"
            if answers:
                self.state_changed(nb)  # whatever ran meanwhile: look again
            self.send_status(nb.uri)
        if not answers and lost is None:
            return
        if link.busy or self.stats.checking:
            return
        try:
            if lost is not None:
                raise lost
            generation = await link.generation()
        except KernelDead as exc:
            await self.kernels.lost(nb.uri, f"no kernel: {exc}")
            self._pipelines.pop(nb.uri, None)
            self.state_changed(nb)
            self.send_status(nb.uri)
            return
        except KernelLinkError:
            return
        if nb.kernel_generation is not None and generation != nb.kernel_generation:
            log.debug("kernel generation %s -> %s: re-checking %s", nb.kernel_generation, generation, nb.uri)
            self.state_changed(nb)
        nb.kernel_generation = generation

    # ------------------------------------------------------------------ output

    def diagnostics_for(self, nb: NotebookState, uri: str) -> list[types.Diagnostic]:
        out = []
        for cell in nb.view.cells:
            if cell.uri != uri:
                continue
            result = nb.results.get(cell.key)
            if result is None:
                continue
            # an outdated result stays on screen, marked stale, while its replacement is on its way
            # (no flicker while typing, nothing withdrawn silently after a kernel event)
            stale = not self._current(nb, cell.key, result.stamp)
            if stale and result.stamp.text != cell.text and not self.is_due(nb, cell.key):
                continue
            if nb.ignored.get(cell.key) is not None:
                if nb.ignored[cell.key] in (cell.text, result.stamp.text):
                    continue
                del nb.ignored[cell.key]
            diag = presentation.diagnostic(
                result.prediction, cell, result.executed, self.encoding, stale=stale
            )
            if diag is not None:
                out.append(diag)
        return out

    def publish(self, nb: NotebookState, uri: str | None = None) -> None:
        for target in [uri] if uri else sorted(nb.view.target_uris()):
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=target, diagnostics=self.diagnostics_for(nb, target))
            )

    def _llm_state(self, failure: str | None) -> None:
        """One message per change of the LLM's state: no answer never reads as safe (issue 26)."""
        if failure is not None:
            self._show_message(
                types.MessageType.Warning,
                f"crane: the LLM gives no answer: {failure}; the cells it judges read 'no verdict'",
            )
        else:
            self._show_message(types.MessageType.Info, "crane: the LLM answers again")
        self.send_status()  # the status bar follows the LLM's state too

    def _show_message(self, kind: types.MessageType, message: str) -> None:
        with contextlib.suppress(Exception):
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def send_status(self, notebook_uri: str | None = None) -> None:
        from crane_lsp.llm.status import llm_status  # light (~11 ms once): no SDK, no predictor

        uri = notebook_uri or next(iter(self.notebooks), None)
        kernel = self.kernels.state(uri) if uri else "none"
        if kernel == "attached" and self.stats.kernel_busy:
            kernel = "busy"
        att = self.kernels.attachment(uri) if uri else None
        if uri is not None and att is not None and uri in self.notebooks:
            self.notices.kernel(uri, kernel, att.error, att.connection_file)
        payload = {
            "notebookUri": uri,
            "kernel": kernel,
            **where_payload(att.target if att and att.link is not None else None),
            "message": att.error if att else None,
            "checking": self.stats.checking > 0,
            "busy": self.stats.checking > 0,
            "lastLatencyMs": self.stats.last_latency_ms,
            "predictions": self.stats.predictions,
            "followUps": self.stats.second_phase,
            "probes": self.stats.probes,
            "llm": llm_status(self.settings, self._llm, self._llm_error),
        }
        with contextlib.suppress(Exception):
            self.protocol.notify(STATUS, payload)


def _follow_text(nb: NotebookState, old: NotebookView) -> None:
    """Percent cells are keyed by position: when cells move, results and ignores follow their text."""
    by_text: dict[str, str] = {}
    for cell in old.cells:
        by_text.setdefault(cell.text, cell.key)
    matched = {by_text[c.text] for c in nb.view.cells if c.text in by_text}
    old_keys = {c.key for c in old.cells}
    results, ignored, pending = {}, {}, set()
    for cell in nb.view.cells:
        was = by_text.get(cell.text)
        if was is None and cell.key in old_keys and cell.key not in matched:
            was = cell.key  # the cell edited in place: its old result stays (stale) until re-checked
        if was is None:
            continue
        if was in nb.results:
            results[cell.key] = nb.results[was]
        if was in nb.ignored:
            ignored[cell.key] = nb.ignored[was]
        if was in nb.pending:
            pending.add(cell.key)
    nb.results, nb.ignored, nb.pending = results, ignored, pending


def lsp_view(server: LanguageServer, notebook: types.NotebookDocument) -> NotebookView:
    texts = {}
    for cell in notebook.cells:
        with contextlib.suppress(Exception):
            texts[cell.document] = server.workspace.get_text_document(cell.document).source
    return from_lsp_notebook(notebook, texts)
