"""Predict whether a notebook cell will crash, without a running editor.

Starts a fresh kernel in the notebook's folder (or on a Jupyter server: --jupyter-server), replays
the state the notebook records (the code cells that carry an execution count, in execution-count
order; a notebook with no counts runs the cells above the target), and predicts the target cell.
Without --cell it walks the whole notebook: predicts each code cell, then runs it, and shows each
prediction beside what really happened.

Exit status: 0 no crash predicted, 1 crash predicted, 2 usage or runtime error.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crane_lsp.commands import kernels as kernel_options
from crane_lsp.commands.llm_options import add_budget_arguments, budget_values

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from crane_lsp.commands.kernels import KernelSource
    from crane_lsp.commands.render import CheckedCell
    from crane_lsp.kernel.link import KernelLink
    from crane_lsp.layers import Ask, LayerName
    from crane_lsp.llm.predictor import LLMPredictor
    from crane_lsp.notebook import Cell, Notebook
    from crane_lsp.pipeline import Pipeline
    from crane_lsp.prediction import Prediction
    from crane_lsp.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", help="a .ipynb notebook or a .py script with `# %%` cells")
    parser.add_argument("--cell", help="the target: 1-based position among code cells, or a cell id")
    parser.add_argument(
        "--predictors",
        default=None,
        help="comma-separated layers to run: checks,dryrun,llm (default: every configured one)",
    )
    parser.add_argument("--provider", choices=["none", "openai", "openai-compatible", "gemini"], default=None)
    parser.add_argument("--model", default=None, help="model name for the LLM provider")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server URL (vLLM, Ollama, ...)")
    parser.add_argument(
        "--api-key-env", default=None, help="name of the environment variable holding the key"
    )
    parser.add_argument("--votes", type=int, default=None, help="LLM samples per prediction (majority vote)")
    add_budget_arguments(parser)
    parser.add_argument(
        "--no-runtime", action="store_true", help="do not send runtime information to the LLM"
    )
    parser.add_argument(
        "--privacy", action="store_true", help="send structure only (no data values) to the LLM"
    )
    parser.add_argument(
        "--dry-run", choices=["off", "safe", "on"], default=None, help="sandboxed dry-run mode"
    )
    parser.add_argument(
        "--dry-run-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a dry run may take before a slow cell is judged by shortened runs (default 3)",
    )
    parser.add_argument(
        "--no-shortened-runs",
        action="store_true",
        help="a slow cell's dry run is not run again on a sample of its data",
    )
    parser.add_argument(
        "--cell-timeout",
        type=float,
        default=600.0,
        help="seconds each replayed or walked cell may run before it is interrupted (default 600)",
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="dry-run candidate fixes of each predicted crash from the same kernel state and print the "
        "diff of the top verified one (--json: fixes[]; docs/fixes.md)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array on stdout: one object per checked cell, lines and cells 1-based "
        "(schema: docs/schema/check.schema.json)",
    )
    kernel_options.add_arguments(parser)


def settings_from_args(args: argparse.Namespace) -> Settings:
    from crane_lsp.settings import Settings

    values: dict[str, Any] = {}
    for key in ("provider", "model", "base_url", "api_key_env", "votes", "dry_run"):
        value = getattr(args, key, None)
        if value is not None:
            values[key] = value
    values.update(budget_values(args))
    if getattr(args, "dry_run_budget", None) is not None:
        values["dry_run_budget_s"] = args.dry_run_budget
    if getattr(args, "no_shortened_runs", False):
        values["dry_run_shorten"] = False
    if args.no_runtime:
        values["runtime_info"] = False
    if args.privacy:
        values["privacy"] = True
    return Settings(**values)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError
    from rich.console import Console

    from crane_lsp.commands.common import read_user_notebook, settings_error
    from crane_lsp.notebook import NotebookError

    err = Console(stderr=True)
    try:
        notebook = read_user_notebook(args.notebook)
        target = notebook.find_code_cell(args.cell) if args.cell else None
        settings = settings_from_args(args)
        layers = _layers(args.predictors)
        if args.cell_timeout <= 0:
            raise ValueError("--cell-timeout: must be more than 0 seconds")
        kernels = kernel_options.KernelSource.from_args(args)
    except ValidationError as exc:
        _error(err, settings_error(exc))
        return 2
    except (NotebookError, ValueError) as exc:  # KernelOptionError too
        _error(err, str(exc))
        return 2
    if not notebook.code_cells:
        _error(err, f"{args.notebook} has no code cells")
        return 2
    executed_at: dict[int, list[int]] = {}
    llm_failures: list[str] = []
    try:
        checked = asyncio.run(
            _check(
                notebook,
                target,
                settings,
                layers,
                quiet=args.json,
                console=err,
                cell_timeout=args.cell_timeout,
                executed_at=executed_at,
                llm_failures=llm_failures,
                kernels=kernels,
                fix=getattr(args, "fix", False),
            )
        )
    except _UsageError as exc:
        _error(err, str(exc))
        return 2
    if args.json:
        from crane_lsp.output_json import cell_json, dump_cells

        counts = [c.execution_count for c in notebook.code_cells]
        print(
            dump_cells(
                [
                    cell_json(
                        c.position - 1,
                        c.prediction,
                        execution_counts=counts,
                        executed_cells=executed_at.get(c.position, []),
                        actual=c.actual,
                        actual_line=c.actual_line,
                    )
                    for c in checked
                ]
            )
        )
    else:
        from crane_lsp.commands.render import print_checked

        print_checked(Console(), notebook, checked, walk=target is None)
        if getattr(args, "fix", False):
            _print_fixes(checked)
    if llm_failures:  # after every verdict made: the walk is never lost to one failed answer
        failed = [c.position for c in checked if c.prediction.llm_unanswered()]
        cells = ", ".join(map(str, failed)) or "?"
        _error(err, f"no verdict for cell {cells} of {len(checked)}: {llm_failures[0]}")
        return 2
    return 1 if any(c.prediction.crash for c in checked) else 0


def _print_fixes(checked: list[CheckedCell]) -> None:
    """``--fix``: the diff of each crashing cell's top offered fix, with what its dry run showed."""
    from crane_lsp.fixes.edit import unified_diff

    for c in checked:
        if not c.prediction.crash:
            continue
        top = c.prediction.fixes[0] if c.prediction.fixes else None
        if top is None:
            print(f"cell {c.position}: no verified fix")
            continue
        v = top.verification
        status = top.status()
        detail = f": {v.notes[0]}" if v is not None and v.outcome == "gets-further" and v.notes else ""
        print(f"cell {c.position}: {top.title or top.description} ({status}{detail})")
        print(unified_diff(c.source, top, f"cell {c.position}"), end="")


class _UsageError(RuntimeError):
    pass


def _remote_errors() -> tuple[type[Exception], ...]:
    """What reaching a Jupyter server can raise (a refused token, no server there)."""
    from crane_lsp.kernel.remote import RemoteError
    from crane_lsp.kernel.transport import TransportError

    return (RemoteError, TransportError, OSError)


def _error(console: Any, message: str) -> None:
    """One unwrapped line, so paths and messages stay greppable."""
    console.print(f"[red]error:[/red] {message}", soft_wrap=True, markup=True, highlight=False)


def _layers(spec: str | None) -> set[LayerName] | None:
    if spec is None:
        return None
    from crane_lsp.layers import LAYERS

    asked = {part.strip() for part in spec.split(",") if part.strip()}
    unknown = asked - set(LAYERS)
    if unknown:
        raise ValueError(
            f"unknown predictor(s) {', '.join(sorted(unknown))}; choose from {', '.join(LAYERS)}"
        )
    return {name for name in LAYERS if name in asked}


def _make_llm(settings: Settings, layers: set[LayerName] | None) -> _StrictLLM | None:
    if layers is not None and "llm" not in layers:
        return None
    if settings.provider == "none":
        if layers is not None:  # asked for by name: saying "no crash found" would be a lie
            raise _UsageError(
                "--predictors llm needs an LLM provider: add --provider openai, gemini or "
                "openai-compatible --base-url URL"
            )
        return None
    from crane_lsp.llm.predictor import LLMPredictor

    try:
        return _StrictLLM(LLMPredictor(settings))
    except Exception as exc:  # MissingKeyError and bad settings: a message, not a stack trace
        raise _UsageError(str(exc).removeprefix("crane-lsp: ")) from exc


class _StrictLLM:
    """The LLM layer for the terminal: a provider that gives no valid answer makes that cell's verdict
    "no verdict: <why>" and the run's exit status 2, never a silent "no crash found" nor a lost walk
    (the verdicts already made are kept and printed)."""

    name: LayerName = "llm"

    def __init__(self, inner: LLMPredictor) -> None:
        self._inner = inner
        self.failures: list[str] = []

    async def predict(self, ask: Ask) -> Prediction:
        from crane_lsp.llm.errors import LLMError
        from crane_lsp.prediction import Prediction, Source

        try:
            return await self._inner.predict(ask, raise_errors=True)
        except LLMError as exc:
            name = self._inner.settings.provider
            why = f"the LLM ({name}) gave no answer: {exc}"
            self.failures.append(why)
            source = Source(layer="llm", provider=name, model=self._inner.provider.model)
            unanswered = Prediction.unanswered("llm-failed", f"no verdict: {why}")
            unanswered.source = source
            return unanswered

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class _Job:
    """What every cell of one ``check`` run is predicted with."""

    settings: Settings
    layers: set[LayerName] | None
    llm: _StrictLLM | None
    quiet: bool
    console: Any
    cell_timeout: float = 600.0
    #: where fresh kernels start: here, or on a Jupyter server (``--jupyter-server``)
    kernels: KernelSource = field(default_factory=kernel_options.KernelSource)
    #: 1-based cell position -> the code-cell indices of the cells executed before its prediction
    #: (a prediction's ``Origin.cell`` indexes this list)
    executed_at: dict[int, list[int]] = field(default_factory=dict)
    #: ``--fix``: candidate fixes of each predicted crash are dry-run (crane_lsp.fixes)
    fix: bool = False

    def pipeline(self, link: KernelLink) -> Pipeline:
        from crane_lsp.pipeline import Pipeline

        return Pipeline.from_settings(self.settings, link, llm=self.llm)

    async def predict(
        self, pipeline: Pipeline, source: str, executed: list[str], later: list[str] | None = None
    ) -> Prediction:
        prediction = (await pipeline.predict(source, executed=executed, layers=self.layers)).prediction
        if self.fix and prediction.crash:  # before the walk runs the cell: the same kernel state
            from crane_lsp.dryrun import DryRunner
            from crane_lsp.fixes import LIMIT_EXPLICIT, offer_fixes

            runner = pipeline.dryrun if isinstance(pipeline.dryrun, DryRunner) else None
            if runner is None:
                prediction.notes.append("fixes: not verified (the dry run is off)")
            below = later or ()
            prediction = await offer_fixes(runner, source, prediction, limit=LIMIT_EXPLICIT, later=below)
        return prediction


async def _check(
    notebook: Notebook,
    target: int | None,
    settings: Settings,
    layers: set[LayerName] | None,
    *,
    quiet: bool,
    console: Any,
    cell_timeout: float = 600.0,
    executed_at: dict[int, list[int]] | None = None,
    llm_failures: list[str] | None = None,
    kernels: KernelSource | None = None,
    fix: bool = False,
) -> list[CheckedCell]:
    from crane_lsp.kernel.link import KernelLinkError

    job = _Job(settings, layers, _make_llm(settings, layers), quiet, console, cell_timeout)
    job.fix = fix
    if kernels is not None:
        job.kernels = kernels
    if executed_at is not None:
        job.executed_at = executed_at
    try:
        if target is not None:
            return await _check_target(notebook, target, job)
        return await _walk(notebook, job)
    except KernelLinkError as exc:
        raise _UsageError(f"the kernel failed: {exc}") from exc
    except Exception as exc:  # a refused token, an unreachable server: one line, no token
        if job.kernels.remote and isinstance(exc, _remote_errors()):
            raise _UsageError(str(exc)) from exc  # it names the server, never the token
        raise
    finally:
        if job.llm is not None:
            await job.llm.aclose()
            if llm_failures is not None:
                llm_failures.extend(job.llm.failures)


async def _check_target(notebook: Notebook, target: int, job: _Job) -> list[CheckedCell]:
    """Replay the recorded state, then predict the one target cell."""
    from crane_lsp.commands.common import report_replay_failures
    from crane_lsp.commands.render import CheckedCell

    console = job.console
    link, report = await job.kernels.replay(
        notebook, target, console, quiet=job.quiet, cell_timeout=job.cell_timeout
    )
    try:
        if not job.quiet:
            report_replay_failures(console, report)
            built = ", ".join(str(run.index + 1) for run in report.runs) or "none"
            console.print(f"state for code cell {target + 1} built by code cells {built} (execution order)")
        cells = notebook.code_cells
        ok_runs = [run.index for run in report.runs if run.result.ok]
        executed = [cells[index].source for index in ok_runs]
        job.executed_at[target + 1] = ok_runs
        below = [cell.source for cell in cells[target + 1 :]]
        prediction = await job.predict(job.pipeline(link), cells[target].source, executed, below)
        return [CheckedCell(target + 1, cells[target].source, prediction)]
    finally:
        await link.close()


async def _walk(notebook: Notebook, job: _Job) -> list[CheckedCell]:
    """Predict each code cell, then run it, in the order the notebook records: predictions beside what
    really happened.

    The order is the replay's (``walk_order``), so the walk and ``--cell`` see the same states: the
    cells with an execution count first, in count order; then each cell the notebook never ran,
    predicted and run in the recorded state (a fresh kernel replayed for each after the first), never
    after another never-run cell, which would build a state the notebook never had (the out-of-order
    crashes are exactly these cells).
    """
    from rich.progress import Progress

    cells = notebook.code_cells
    ran, never_ran = walk_order(notebook)
    link = await job.kernels.start(notebook.path.parent if notebook.path else Path.cwd())
    pipeline = job.pipeline(link)
    executed: list[str] = []
    executed_cells: list[int] = []
    checked: list[CheckedCell] = []
    try:
        with Progress(console=job.console, transient=True, disable=job.quiet) as progress:
            task = progress.add_task("walking the notebook", total=len(cells))
            for index in ran:
                job.executed_at[index + 1] = list(executed_cells)
                checked.append(
                    await _predict_and_run(job, pipeline, link, cells[index], index, executed, progress, task)
                )
                executed.append(cells[index].source)
                executed_cells.append(index)
            for n, index in enumerate(never_ran):
                if n:  # back to the recorded state: the previous never-run cell changed it
                    progress.update(task, description=f"replaying the state for cell {index + 1}")
                    await link.close()
                    link, _ = await job.kernels.replay(
                        notebook, index, job.console, quiet=True, cell_timeout=job.cell_timeout
                    )
                    pipeline = job.pipeline(link)
                job.executed_at[index + 1] = list(executed_cells)
                checked.append(
                    await _predict_and_run(job, pipeline, link, cells[index], index, executed, progress, task)
                )
    finally:
        await link.close()
    return sorted(checked, key=lambda c: c.position)


async def _predict_and_run(
    job: _Job,
    pipeline: Pipeline,
    link: KernelLink,
    cell: Cell,
    index: int,
    executed: list[str],
    progress: Progress,
    task: TaskID,
) -> CheckedCell:
    """One step of the walk: the prediction, then what really happened when the cell ran."""
    from crane_lsp.commands.render import CheckedCell
    from crane_lsp.kernel.replay import sanitize

    progress.update(task, description=f"predicting cell {index + 1}")
    prediction = await job.predict(pipeline, cell.source, executed)
    progress.update(task, description=f"running cell {index + 1}")
    result = await link.execute(sanitize(cell.source), timeout=job.cell_timeout)
    actual = "" if result.status == "ok" else (result.ename or result.status)
    progress.advance(task)
    return CheckedCell(index + 1, cell.source, prediction, actual, result.line)


def walk_order(notebook: Notebook) -> tuple[list[int], list[int]]:
    """(cells to predict and run in turn; cells the notebook never ran): its recorded order.

    With execution counts: the counted cells in count order (as ``Notebook.replay_order`` replays
    them for ``--cell``) and the never-run ones top to bottom; without any: every cell, top to bottom.
    """
    cells = notebook.code_cells
    if not any(c.execution_count for c in cells):
        return list(range(len(cells))), []
    counted = sorted((c.execution_count, i) for i, c in enumerate(cells) if c.execution_count)
    never = [i for i, c in enumerate(cells) if not c.execution_count]
    return [i for _, i in counted], never
