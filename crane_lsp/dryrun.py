"""The dry-run layer: observe the crash in a forked copy of the kernel instead of guessing it.

The kernel side (``kernel/sandbox.py``) forks and runs the cell; this side decides whether a cell
may be dry-run at all (a static screen, because C-level writers escape the audit hook) and turns
the outcome into a ``Prediction``: ``raised`` is an *observed* crash on its exact line,
``completed`` a note for the hover, anything else falls through to the next layer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from crane_lsp.cellcode import CellFacts
from crane_lsp.prediction import Prediction, Source
from crane_lsp.settings import Settings

if TYPE_CHECKING:
    from crane_lsp.kernel.link import KernelLink

log = logging.getLogger(__name__)

#: Methods and functions that persist models or data, talk to the network or the shell, or wait
#: for a person. Matched on the last attribute of the called name (``df.to_csv`` -> ``to_csv``).
_SIDE_EFFECT_METHODS = {
    "to_csv",
    "to_excel",
    "to_parquet",
    "to_json",
    "to_pickle",
    "to_sql",
    "to_feather",
    "to_hdf",
    "to_html",
    "to_latex",
    "to_markdown",
    "to_stata",
    "to_orc",
    "to_clipboard",
    "to_netcdf",
    "to_zarr",
    "savefig",
    "save",
    "save_weights",
    "save_model",
    "save_pretrained",
    "export",
    "write",
    "writelines",
    "write_text",
    "write_bytes",
    "mkdir",
    "makedirs",
    "unlink",
    "remove",
    "rmtree",
    "rename",
    "replace",
    "savetxt",
    "savez",
    "savez_compressed",
    "tofile",
    "dump",
    "dumps_to",
    "imwrite",
    "imsave",
    "push_to_hub",
    "upload",
    "download",
    "urlopen",
    "urlretrieve",
    "system",
    "popen",
    "run_line_magic",
    "run_cell_magic",
    "getoutput",
    "input",
    "getpass",
    "log_artifact",
    "log_model",
    "commit",
}
_SIDE_EFFECT_CALLS = {"input", "breakpoint", "exec", "eval", "open"}  # open is screened by mode below
_SIDE_EFFECT_MODULES = {
    "requests",
    "urllib",
    "httpx",
    "aiohttp",
    "socket",
    "subprocess",
    "shutil",
    "smtplib",
    "ftplib",
    "paramiko",
    "boto3",
    "wandb",
    "mlflow",
    "kaggle",
    "tf.io",
    "tensorflow.io",
    "gcsfs",
    "s3fs",
}


@dataclass(frozen=True)
class ScreenResult:
    safe: bool
    reason: str = ""


def screen(facts: CellFacts) -> ScreenResult:
    """Whether ``safe`` mode may dry-run the cell: no persistence, network, shell or stdin."""
    if "get_ipython()" in facts.python and "get_ipython()" not in facts.source:
        return ScreenResult(False, "uses a magic or a shell command")
    for call in facts.calls:
        last = call.func.rsplit(".", 1)[-1]
        root = call.func.split(".", 1)[0]
        if call.func in _SIDE_EFFECT_CALLS:
            if call.func == "open" and not _opens_for_reading(call):
                return ScreenResult(False, "opens a file for writing")
            if call.func != "open":
                return ScreenResult(False, f"calls {call.func}()")
        elif "." in call.func and last in _SIDE_EFFECT_METHODS:
            return ScreenResult(False, f"calls {call.func}() (writes, talks to the network or the shell)")
        if root in _SIDE_EFFECT_MODULES or any(call.func.startswith(m + ".") for m in _SIDE_EFFECT_MODULES):
            return ScreenResult(False, f"calls {call.func}() (network, shell or file system)")
    for imp in facts.imports:
        if imp.module.split(".", 1)[0] in _SIDE_EFFECT_MODULES:
            return ScreenResult(False, f"imports {imp.module}")
    return ScreenResult(True)


def _opens_for_reading(call: Any) -> bool:
    mode_args = [a for a in call.args if a.keyword == "mode"] or [a for a in call.args if a.keyword is None][
        1:2
    ]
    if not mode_args:
        return True
    mode = mode_args[0]
    return bool(mode.is_literal and isinstance(mode.literal, str) and not set(mode.literal) & set("wax+"))


class DryRunOutcome(BaseModel):
    """What the kernel-side sandbox answers (validated at the boundary)."""

    outcome: str  # raised | completed | timeout | blocked | unsupported
    exception: str | None = None
    message: str | None = None
    line: int | None = None  # 1-based within the cell
    elapsed_s: float | None = None
    round_trip_s: float | None = None
    child_private_dirty_kb: int | None = None
    child_pid: int | None = None
    notes: list[str] | None = None


class DryRunner:
    """The pipeline's ``dryrun`` layer, bound to one kernel link."""

    def __init__(self, link: KernelLink, settings: Settings) -> None:
        self.link = link
        self.settings = settings

    async def run_outcome(self, source: str) -> DryRunOutcome:
        budget = self.settings.dry_run_budget_s
        raw = await self.link.call("dry_run", {"source": source, "budget_s": budget}, timeout=budget + 10)
        return DryRunOutcome.model_validate(raw)

    async def dry_run(self, target: str, facts: CellFacts) -> Prediction | None:
        if self.settings.dry_run == "off":
            return None
        if self.settings.dry_run == "safe":
            verdict = screen(facts)
            if not verdict.safe:
                return _note(f"not dry-run ({verdict.reason})")
        try:
            outcome = await self.run_outcome(target)
        except Exception as exc:  # busy or dead kernels and probe errors: fall through, say why
            log.info("dry run unavailable: %s", exc)
            return _note(f"dry run unavailable: {exc}")
        return outcome_to_prediction(outcome, target)


def _one_line(exception: str | None, message: str | None) -> str:
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return f"{exception}: {first}" if first else str(exception)


def _note(text: str) -> Prediction:
    p = Prediction.nothing_found()
    p.notes.append(text)
    return p


def outcome_to_prediction(outcome: DryRunOutcome, target: str) -> Prediction:
    took = f"{outcome.round_trip_s or 0:.2f} s"
    if outcome.outcome == "raised":
        line = (outcome.line - 1) if outcome.line else None
        lines = target.splitlines()
        text = lines[line] if line is not None and 0 <= line < len(lines) else ""
        col = len(text) - len(text.lstrip()) if text else 0
        return Prediction(
            crash=True,
            certainty="observed",
            exception=outcome.exception,
            line=line,
            col=col if line is not None else None,
            end_line=line,
            end_col=len(text) if line is not None else None,
            message=_one_line(outcome.exception, outcome.message),
            diagnosis=(
                f"Observed in a sandboxed copy of the kernel: the cell raised {outcome.exception}"
                + (f" on line {outcome.line}" if outcome.line else "")
                + (f": {outcome.message}" if outcome.message else "")
                + "."
            ),
            source=Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000),
            notes=[f"observed in a sandboxed copy of the kernel in {took}"],
        )
    if outcome.outcome == "completed":
        # Observed to run clean: final, the LLM has nothing to add. Other outcomes fall through.
        p = Prediction.nothing_found("ran clean in a sandboxed copy of the kernel")
        p.source = Source(layer="dryrun", latency_ms=(outcome.round_trip_s or 0) * 1000)
        p.notes.append(f"ran clean in a sandboxed copy in {took}")
        return p
    return _note(f"dry run {outcome.outcome}: {outcome.message or ''}".rstrip(": "))
