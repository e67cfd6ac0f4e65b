"""The dry-run layer: observe the crash in a forked copy of the kernel instead of guessing it.

The kernel side (``kernel/agent/dryrun.py`` and the ``kernel/agent/jail_*`` modules) forks, confines the child
with seccomp and Landlock, and runs the cell; this side picks the budget, in ``safe`` mode skips
cells a static screen says the jail would only stop, and turns the outcome into a ``Prediction``:
``raised`` is an *observed* crash on its exact line, ``completed`` a final "ran clean"; a timeout,
a blocked operation or a cell that ends the kernel falls through with a headline saying so.
``prepare`` asks the kernel for a child forked and jailed ahead (the server asks when the user
starts editing), so the dry run that follows skips the fork and the jail.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from crane_lsp.analysis.effects import DYNAMIC_CODE_CALLS
from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze, analyze_whole
from crane_lsp.dryrun_causes import with_failure_facts
from crane_lsp.failure_facts import FailFacts
from crane_lsp.kernel.agent.dryrun_wire import DryRunOutcomeName, PrepareOutcomeName
from crane_lsp.kernel.agent.wire import PREPARE_WINDOW_S
from crane_lsp.layers import Ask, KernelReader, LayerName, Screened
from crane_lsp.prediction import NoVerdictReason, Prediction, Source, line_position
from crane_lsp.settings import Settings
from crane_lsp.shortened import ShortenedRuns, SlowCells, judge

log = logging.getLogger(__name__)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The static screen of ``safe`` mode. The jail stops writers, network and shell whatever calls them;
#: the screen only spares a fork for a cell that looks like it saves data, talks to the network or
#: the shell, or waits for a person (the jail would stop it at once). Matched on the called name's
#: last attribute (``df.to_csv`` -> ``to_csv``); deliberately generous (a cell screened out only
#: loses its dry run) but not so generous that ordinary data-science cells (``df.replace``, ``df.rename``,
#: ``items.remove``, ``platform.system()``) are screened out.
_WRITER_METHODS = _words(
    """
    to_csv to_excel to_parquet to_json to_pickle to_sql to_feather to_hdf to_html to_latex to_markdown
    to_stata to_orc to_clipboard to_netcdf to_zarr to_xml to_gbq write_csv write_parquet write_json
    write_ipc write_excel write_database write_delta saveAsTable saveAsTextFile insertInto savefig
    imsave imwrite write_image write_html save_fig save save_weights save_model save_pretrained
    save_checkpoint export savetxt savez savez_compressed tofile dump log_artifact log_model push_to_hub
    create_file_writer SummaryWriter ModelCheckpoint CSVLogger TFRecordWriter ExcelWriter HDFStore write
    writelines write_text write_bytes mkdir makedirs mkdtemp unlink rmtree rmdir touch symlink_to
    copyfile copytree chmod commit upload upload_file
    """
)
#: Functions that only write or delete when they belong to ``os``/``shutil``/``pathlib`` (as methods
#: of other objects they are ordinary: ``df.replace``, ``df.rename``, ``items.remove``).
_OS_WRITERS = frozenset(
    {"remove", "rename", "renames", "replace", "removedirs", "link", "symlink", "truncate"}
)
_OS_ROOTS = frozenset({"os", "shutil", "pathlib", "Path"})
_NETWORK_METHODS = _words(
    """
    urlopen urlretrieve download download_file from_pretrained hf_hub_download snapshot_download
    load_dataset get_file fetch_openml fetch_california_housing fetch_20newsgroups
    fetch_20newsgroups_vectorized fetch_lfw_people fetch_lfw_pairs fetch_covtype fetch_kddcup99
    fetch_olivetti_faces fetch_rcv1 fetch_species_distributions load_data DataReader create_engine
    connect
    """
)
_SHELL_CALLS = frozenset({"os.system", "os.popen", "os.execv", "os.execvp", "os.spawnl", "pty.spawn"})
_STDIN_CALLS = frozenset({"input", "getpass", "getpass.getpass", "breakpoint", "fileinput.input"})
_DYNAMIC_CALLS = DYNAMIC_CODE_CALLS  # the one effects table (analysis/effects.py)
_NETWORK_MODULES = _words(
    """
    requests urllib urllib3 httpx aiohttp socket smtplib ftplib paramiko boto3 botocore wandb mlflow
    comet_ml neptune kaggle kagglehub gdown wget openai anthropic tweepy praw yfinance pandas_datareader
    selenium webbrowser gcsfs s3fs huggingface_hub psycopg2 pymysql pymongo redis sqlalchemy sqlite3 ray
    dask.distributed
    """
)
_SHELL_MODULES = frozenset({"subprocess", "shutil", "pexpect", "sh", "multiprocessing"})
_WRITER_MODULES = frozenset({"tf.io", "tensorflow.io", "tf.summary", "tensorflow.summary", "tf.saved_model"})
_URL = re.compile(r"^\s*(https?|ftp|s3|s3a|gs|gcs|hf|az|abfs|abfss|hdfs)://", re.IGNORECASE)
_WRITE_MODE = re.compile(r"[wax+]")
_MODE = re.compile(r"^[rwxabtU+]{1,4}(:\w*)?$")  # "r", "wb", "a+", tarfile's "w:gz"
#: line and cell magics that change nothing outside the (forked) kernel
_HARMLESS_MAGICS = _words(
    """
    time timeit matplotlib config load_ext reload_ext autoreload aimport precision who whos who_ls pinfo
    pinfo2 pdoc pdef psource pfile psearch env pprint xmode capture prun html HTML javascript js
    markdown md latex svg display lsmagic magic tb colors pylab
    """
)
_MAGICS_WITH_CODE = frozenset({"time", "timeit", "prun", "capture"})
#: a checkpoint/logging callback handed to ``fit`` writes files from C code (h5py, TF summaries)
_WRITING_CALLBACK = re.compile(r"checkpoint|tensorboard|csvlogger|backupandrestore|logger|writer", re.I)


@dataclass(frozen=True)
class ScreenResult:
    safe: bool
    reason: str = ""


def screen(facts: CellFacts) -> ScreenResult:
    """Whether ``safe`` mode may dry-run the cell: no persistence, network, shell or stdin.

    ``reason`` (when not safe) says what the cell does, for the hover: "saves data: df.to_csv()".
    """
    if facts.magic is not None and facts.magic not in _HARMLESS_MAGICS:
        return ScreenResult(False, f"runs the cell magic %%{facts.magic}")
    if not facts.analyzed and facts.magic is None:
        return ScreenResult(False, "the cell could not be analysed")
    if facts.unchecked_from is not None:  # the checks read only the start of a long cell: screen all of it
        facts = analyze_whole(facts.source)
    verdict = _screen_ipython(facts)
    if verdict is not None:
        return verdict
    for call in facts.calls:
        verdict = _screen_call(call)
        if verdict is not None:
            return verdict
    for chain in facts.chains:  # a writer taken by reference: ``save = df.to_csv``, ``map(f.write, ...)``
        if chain.attrs and chain.attrs[-1] in _WRITER_METHODS and not chain.is_store:
            return ScreenResult(False, f"saves or writes files: {chain.base}.{'.'.join(chain.attrs)}")
    for imp in facts.imports:
        module = imp.module
        for name in (module, *(f"{module}.{n}" for n in imp.names)):
            if _in_modules(name, _NETWORK_MODULES):
                return ScreenResult(False, f"talks to the network: imports {name}")
            if _in_modules(name, _SHELL_MODULES):
                return ScreenResult(False, f"runs programs or changes files: imports {name}")
        if any(n in _STDIN_CALLS or n == "getpass" for n in imp.names) or module == "getpass":
            return ScreenResult(False, f"reads from stdin: imports {module}")
    for path, _span in facts.paths:
        if isinstance(path, str) and _URL.match(path):
            return ScreenResult(False, f"talks to the network: reads {path}")
    return ScreenResult(True)


def _in_modules(name: str, modules: frozenset[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


def _screen_call(call: Any) -> ScreenResult | None:
    func: str = call.func
    last = func.rsplit(".", 1)[-1]
    root = func.split(".", 1)[0].split("(", 1)[0]
    shown = f"{func}()"
    if func in _STDIN_CALLS or func.startswith("sys.stdin.") or last == "getpass":
        return ScreenResult(False, f"reads from stdin: {shown}")
    if func in _SHELL_CALLS or _in_modules(func, _SHELL_MODULES):
        return ScreenResult(False, f"runs a program: {shown}")
    if func in _DYNAMIC_CALLS:
        return ScreenResult(False, f"runs code it cannot screen: {shown}")
    if last in _WRITER_METHODS or ".write." in func:
        return ScreenResult(False, f"saves or writes files: {shown}")
    if last in _OS_WRITERS and root in _OS_ROOTS:
        return ScreenResult(False, f"changes files: {shown}")
    if _in_modules(func, _WRITER_MODULES):
        return ScreenResult(False, f"saves or writes files: {shown}")
    if last in _NETWORK_METHODS and (
        last != "connect" or root in ("sqlite3", "psycopg2", "pymysql", "duckdb")
    ):
        return ScreenResult(False, f"downloads or talks to the network: {shown}")
    if _in_modules(func, _NETWORK_MODULES) or func.startswith(("torch.hub.", "tfds.", "hub.")):
        return ScreenResult(False, f"talks to the network: {shown}")
    if last == "open" or func in ("io.open", "codecs.open"):
        if func == "open" or _is_module_open(func):
            position: int | None = 1  # open(path, mode), gzip.open(path, mode)
        elif "Path" in func.split(".", 1)[0]:
            position = 0  # Path(p).open(mode)
        else:
            position = None  # Image.open(fp, formats), fs.open(...): only a ``mode=`` keyword counts
        if not _opens_for_reading(call, position):
            return ScreenResult(False, f"opens a file for writing: {shown}")
    elif last in ("File", "ZipFile", "TarFile", "memmap", "Dataset", "open_memmap") and _mode_writes(call):
        return ScreenResult(False, f"opens a file for writing: {shown}")
    for arg in call.args:
        if arg.keyword == "download" and arg.text.strip() not in ("False", "None", "0"):
            return ScreenResult(False, f"downloads data: {shown}")
        if arg.keyword == "callbacks" and _WRITING_CALLBACK.search(arg.text):
            return ScreenResult(False, f"may write checkpoints or logs: {shown} with callbacks={arg.text}")
        if arg.is_literal and isinstance(arg.literal, str) and _URL.match(arg.literal):
            return ScreenResult(False, f"talks to the network: {shown} on {arg.literal}")
    return None


def _is_module_open(func: str) -> bool:
    """``io.open``/``gzip.open``/``tarfile.open`` take the mode second, ``Path(p).open`` first."""
    root = func.split(".", 1)[0]
    return root in (
        "io",
        "codecs",
        "gzip",
        "bz2",
        "lzma",
        "tarfile",
        "zipfile",
        "os",
        "h5py",
        "fsspec",
        "smart_open",
    )


def _screen_ipython(facts: CellFacts) -> ScreenResult | None:
    """Shell escapes and magics, from the IPython-transformed source (``!ls`` -> ``get_ipython().system``),
    walked in the tree the analysis already parsed (``CellFacts.tree``): the cell is not parsed again."""
    if "get_ipython()" not in facts.python:
        return None
    tree = facts.tree()
    if tree is None:
        return ScreenResult(False, "uses IPython syntax it cannot screen")
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "get_ipython"
        ):
            continue
        kind = node.func.attr
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if kind in ("system", "getoutput"):
            command = args[0] if args and isinstance(args[0], str) else "..."
            return ScreenResult(False, f"runs a shell command: !{command}")
        if kind in ("run_line_magic", "run_cell_magic"):
            name = args[0] if args and isinstance(args[0], str) else "?"
            prefix = "%%" if kind == "run_cell_magic" else "%"
            if name not in _HARMLESS_MAGICS:
                return ScreenResult(False, f"runs the magic {prefix}{name}")
            if name in _MAGICS_WITH_CODE and kind == "run_line_magic" and len(args) > 1:
                inner = args[1]
                if not isinstance(inner, str):
                    return ScreenResult(False, f"runs the magic {prefix}{name} on code it cannot screen")
                verdict = screen(analyze(inner))
                if not verdict.safe:
                    return verdict
            continue
        if kind in ("user_ns", "kernel", "events"):
            continue
        return ScreenResult(False, f"calls get_ipython().{kind}()")
    return None


def _opens_for_reading(call: Any, mode_position: int | None = 1) -> bool:
    """Whether the call's mode (``mode=`` or the positional at ``mode_position``) only reads; a mode
    that is not a literal counts as writing, a positional literal that is no mode (a file name) not."""
    mode_args = [a for a in call.args if a.keyword == "mode"]
    if not mode_args and mode_position is not None:
        mode_args = [a for a in call.args if a.keyword is None][mode_position : mode_position + 1]
    if not mode_args:
        return True
    mode = mode_args[0]
    if not (mode.is_literal and isinstance(mode.literal, str)):
        return False
    if mode.keyword is None and not _MODE.match(mode.literal):
        return True
    return not _WRITE_MODE.search(mode.literal)


def _mode_writes(call: Any) -> bool:
    """``h5py.File(p, 'w')``, ``zipfile.ZipFile(p, 'a')``, ``np.memmap(p, mode='w+')``: writes."""
    return not _opens_for_reading(call, 1)


class DryRunOutcome(BaseModel):
    """What the kernel-side sandbox answers: exactly ``dryrun_wire.DryRunWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    outcome: DryRunOutcomeName
    exception: str | None = None
    message: str | None = None
    line: int | None = None  # 1-based within the cell
    elapsed_s: float | None = None  # in the child: confinement + the cell
    setup_s: float | None = None  # in the child: limits, transform, compile, the jail (before the cell)
    fork_s: float | None = None  # in the kernel: the fork() call itself
    round_trip_s: float | None = None
    budget_s: float | None = None
    setup_cpu_s: float | None = None  # CPU time the child used up to the cell (limits + jail)
    child_cpu_s: float | None = None  # CPU time the child used (process_time counts from the fork)
    jail_ms: dict[str, float] | None = None  # in the child: CPU milliseconds per confinement step
    phases_ms: dict[str, float] | None = None  # one clock, ms since the fork: when each phase ended
    child_private_dirty_kb: int | None = None
    child_pid: int | None = None
    notes: list[str] | None = None
    prepared: bool | None = None  # run in a child prepared ahead (no fork, no jail on its way)
    prepared_age_s: float | None = None  # how long that child had waited
    shortened: ShortenedRuns | None = None  # runs on samples beside a full run that did not finish
    facts: FailFacts | None = None  # what the failing line read (kernel/agent/failfacts.py)
    standin: dict[str, Any] | None = None  # a shape-level run: why, names, devices (agent/standin.py)


class DryRunPrepared(BaseModel):
    """What ``dry_run_prepare`` answers: exactly ``dryrun_wire.DryRunPreparedWire``'s keys."""

    model_config = ConfigDict(extra="forbid")

    outcome: PrepareOutcomeName
    message: str | None = None
    fresh: bool | None = None
    child_pid: int | None = None
    age_s: float | None = None
    prepare_ms: float | None = None


class DryRunner:
    """The pipeline's ``dryrun`` layer, bound to one kernel link. ``safe`` and ``on`` get the same
    jail; ``safe`` also skips cells the static screen says would only be stopped by it."""

    name: LayerName = "dryrun"

    def __init__(self, link: KernelReader, settings: Settings) -> None:
        self.link = link
        self.settings = settings
        self._prepared: tuple[object, float] | None = None  # (generation, when) of the last prepare
        self.slow_cells = SlowCells()  # cells whose full run overran its budget (shortened.py)

    def wants_prepare(self, generation: object) -> bool:
        """Whether to prepare now: at most once per kernel ``generation`` per window, and again
        once a dry run has used (or discarded) the prepared child."""
        if self.settings.dry_run == "off":
            return False
        last = self._prepared
        return last is None or last[0] != generation or time.monotonic() - last[1] >= PREPARE_WINDOW_S

    async def prepare(self, generation: object = None) -> DryRunPrepared | None:
        """Have the kernel fork and jail the next dry run's child now; never raises (debug log)."""
        self._prepared = (generation, time.monotonic())
        payload = {"memory_mb": self.settings.dry_run_memory_mb, "window_s": PREPARE_WINDOW_S, **_standin()}
        try:
            answer = DryRunPrepared.model_validate(
                await self.link.call("dry_run_prepare", payload, timeout=5)
            )
        except Exception as exc:  # a busy or gone kernel: the dry run forks cold
            log.debug("dry-run prepare failed: %s", exc)
            return None
        log.debug("dry-run prepare: %s", answer)
        return answer

    async def predict(self, ask: Ask) -> Prediction | None:
        """The ``Layer`` call: ``dry_run`` of the asked cell (an explicit Re-check waits longer)."""
        if ask.screened is not None:  # screened where the facts are (the server's worker, for a long cell)
            return await self.dry_run(
                ask.target, None, explicit=ask.explicit, screened=ask.screened, executed=ask.executed
            )
        facts = ask.facts if ask.facts is not None else analyze(ask.target)
        return await self.dry_run(ask.target, facts, explicit=ask.explicit, executed=ask.executed)

    def budget(self, explicit: bool = False) -> float:
        """A short budget while typing, a longer one for an explicit Re-check."""
        if explicit:
            return max(self.settings.dry_run_recheck_budget_s, self.settings.dry_run_budget_s)
        return self.settings.dry_run_budget_s

    async def run_outcome(self, source: str, explicit: bool = False) -> DryRunOutcome:
        budget = self.budget(explicit)
        payload: dict[str, Any] = {
            "source": source,
            "budget_s": budget,
            "memory_mb": self.settings.dry_run_memory_mb,
        }
        if self.settings.dry_run_shorten:  # a slow cell runs again on a sample (Re-check: full run goes on)
            payload["shorten"] = {"after_s": min(0.5, budget / 4), "stop_full": not explicit}
            ran = getattr(self.link, "cell_seconds", None)  # the kernel's own timings (H6-for-H1.md)
            ran = ran if isinstance(ran, Mapping) else None
            payload["shorten"].update(self.slow_cells.forecast(source, budget, ran))
        payload["privacy"] = self.settings.privacy  # the failing line's facts honour it
        payload.update(_standin())  # a shape-level run forced from here (agent/standin.py)
        self._prepared = None  # a prepared child is used (or discarded) now: the next edit prepares again
        raw = await self.link.call("dry_run", payload, timeout=budget + 10)
        outcome = DryRunOutcome.model_validate(raw)
        self.slow_cells.learn(source, budget, outcome.outcome, outcome.shortened)
        log.debug(
            "dry run: %s in %s s, prepared child: %s", outcome.outcome, outcome.round_trip_s, outcome.prepared
        )
        return outcome

    async def dry_run(
        self,
        target: str,
        facts: CellFacts | None,
        explicit: bool = False,
        screened: Screened | None = None,
        executed: Sequence[str] = (),
    ) -> Prediction | None:
        """``screened``: the safe-mode screen's verdict when the caller has it (``facts`` may be None)."""
        if self.settings.dry_run == "off":
            return None
        if self.settings.dry_run == "safe":
            if screened is None:
                screened = screen(facts if facts is not None else analyze(target))
            verdict = screened
            if not verdict.safe:
                return _note(f"not dry-run ({verdict.reason})")
        try:
            outcome = await self.run_outcome(target, explicit)
        except Exception as exc:  # busy or dead kernels and probe errors: fall through, say why
            log.info("dry run unavailable: %s", exc)
            if not await self._kernel_alive():
                text = "no verdict: the kernel died during the dry run"
                return _unanswered("unavailable", text, f"dry run unavailable: {exc}")
            return _note(f"dry run unavailable: {exc}")
        return outcome_to_prediction(outcome, target, executed)

    async def _kernel_alive(self) -> bool:
        try:
            return bool(await self.link.is_alive())
        except Exception:
            return False


def _standin() -> dict[str, str]:
    """``CRANE_DRYRUN_STANDIN=force`` in this process's environment, for the kernel's child (the
    prepared child gets it at its prepare, a cold one with the run)."""
    value = os.environ.get("CRANE_DRYRUN_STANDIN", "")
    return {"standin": value} if value else {}


def _shape_level(outcome: DryRunOutcome) -> str | None:
    """``(tensors on cuda:0 stood in by their shapes)`` for a shape-level run, else None."""
    if not outcome.standin:
        return None
    devices = ", ".join(str(d) for d in outcome.standin.get("devices") or ()) or "no device"
    return f"(tensors on {devices} stood in by their shapes)"


def _one_line(exception: str | None, message: str | None) -> str:
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return f"{exception}: {first}" if first else str(exception)


def _note(text: str) -> Prediction:
    """Nothing decided here, said in a note: the next layer (or "nothing found") answers."""
    p = Prediction.nothing_found()
    p.notes.append(text)
    return p


def _unanswered(reason: NoVerdictReason, headline: str, text: str) -> Prediction:
    """No verdict, and why: the headline the hover, the terminal and the JSON show up front."""
    p = Prediction.unanswered(reason, headline)
    p.notes.append(text)
    return p


def outcome_to_prediction(outcome: DryRunOutcome, target: str, executed: Sequence[str] = ()) -> Prediction:
    took = f"{outcome.round_trip_s or 0:.2f} s" + (
        " (a copy prepared while you typed)" if outcome.prepared else ""
    )
    shape_level = _shape_level(outcome)
    if outcome.outcome == "raised" and shape_level:
        at = f" at line {outcome.line}" if outcome.line else ""
        seen = f"raised {outcome.exception}{at} in a shape-level dry run {shape_level}"
        observed = Prediction(
            crash=True,
            certainty="observed",
            exception=outcome.exception,
            **line_position(target, outcome.line),
            message=_one_line(outcome.exception, outcome.message),
            raw_message=outcome.message or "",
            diagnosis=f"The cell {seen}" + (f": {outcome.message}" if outcome.message else "") + ".",
            source=Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000),
            notes=[f"{seen} in {took}", *(outcome.notes or [])],
        )
        return with_failure_facts(observed, outcome.facts, executed)
    if outcome.outcome == "completed" and shape_level:  # shapes only: never "ran clean"
        p = Prediction.nothing_found("no shape error seen in a shape-level dry run")
        p.source = Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000)
        p.notes.append(f"no shape error seen in a shape-level dry run {shape_level} in {took}")
        p.notes.extend(outcome.notes or [])
        return p
    if outcome.outcome == "no_verdict":  # a shape-level run that needed values (agent/standin.py)
        at = f" (line {outcome.line})" if outcome.line else ""
        stopped = _unanswered(
            "needs-values", f"no verdict: {outcome.message}{at}", f"dry run no verdict: {outcome.message}"
        )
        stopped.notes.extend(outcome.notes or [])
        return stopped
    if outcome.outcome == "raised":
        observed = Prediction(
            crash=True,
            certainty="observed",
            exception=outcome.exception,
            **line_position(target, outcome.line),
            message=_one_line(outcome.exception, outcome.message),
            raw_message=outcome.message or "",
            diagnosis=(
                f"Observed in a sandboxed copy of the kernel: the cell raised {outcome.exception}"
                + (f" on line {outcome.line}" if outcome.line else "")
                + (f": {outcome.message}" if outcome.message else "")
                + "."
            ),
            source=Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000),
            notes=[f"observed in a sandboxed copy of the kernel in {took}", *(outcome.notes or [])],
        )
        return with_failure_facts(observed, outcome.facts, executed)  # cause, evidence, origins
    if outcome.outcome == "completed":
        # Observed to run clean: final, the LLM has nothing to add. Other outcomes fall through.
        p = Prediction.ran_clean("ran clean in a sandboxed copy of the kernel")
        p.source = Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000)
        p.notes.append(f"ran clean in a sandboxed copy in {took}")
        p.notes.extend(outcome.notes or [])
        return p
    text = f"dry run {outcome.outcome}: {outcome.message or ''}".rstrip(": ")
    if outcome.outcome == "timeout":  # never shown as "no crash": the headline says it did not finish
        budget = f"{outcome.budget_s:g} s" if outcome.budget_s else "its budget"
        if outcome.shortened is not None:  # what runs on samples saw instead (shortened.py)
            judged = judge(outcome.shortened, budget, target)
            judged.source.latency_ms = (outcome.round_trip_s or 0) * 1000 if judged.crash else None
            return judged
        return _unanswered("timeout", f"no verdict: the dry run did not finish in {budget}", text)
    if outcome.outcome == "exits":
        return _unanswered("ends-kernel", f"the dry run saw the cell end the kernel: {outcome.message}", text)
    if outcome.outcome == "blocked":  # with the calls the jail answered on the way (its notes)
        blocked = _unanswered("blocked", f"no verdict: the dry run was stopped ({outcome.message})", text)
        blocked.notes.extend(outcome.notes or [])
        return blocked
    return _note(text)
