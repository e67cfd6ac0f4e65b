"""The dry run's wire contract: the keys of what the kernel's sandbox answers, on both sides.

``wire.py`` is the probe's contract; this is the dry run's. The client's pydantic models
(``crane_lsp.dryrun.DryRunOutcome``, ``crane_lsp.dryrun.shortened.Shortened*``) forbid any other key, and
``tests/test_dryrun_wire.py`` holds each model to exactly its TypedDict here, so a key renamed on one
side fails at once instead of being dropped. Joined into the agent source right after ``wire.py``
(stdlib only): ``shorten.py`` keeps a shortened run's answer to ``SHORTENED_RUN_KEYS``.
"""

from typing import Any, Literal, TypedDict

#: What a dry run reports. raised: the cell raised (``exception``, ``message``, ``line``); completed:
#: it ran to its end; timeout: not within ``budget_s`` (``shortened`` may say what samples showed);
#: blocked: the jail stopped an operation; exits: the cell ends the kernel; no_verdict: a shape-level
#: run reached an operation that needs values (``standin``); unavailable: no sandboxed copy ran.
DryRunOutcomeName = Literal["raised", "completed", "timeout", "blocked", "exits", "no_verdict", "unavailable"]

#: What ``dry_run_prepare`` reports: a child forked and jailed ahead (``fresh``: forked just now).
PrepareOutcomeName = Literal["prepared", "unavailable", "skipped"]


class ShortenedWhatWire(TypedDict, total=False):
    what: str  # the data's name (``df``), or a parameter's owner
    param: str  # the iteration parameter lowered (``n_init``)
    kept: int
    of: int
    unit: str  # rows; batches or elements for a tf.data pipeline or a Keras dataset (their first ones)


class ShortenedFactsWire(TypedDict, total=False):
    rows: list[ShortenedWhatWire]
    params: list[ShortenedWhatWire]
    loops: dict[str, list[int]]  # the loop's line -> [iterations kept, of] (of 0: a while loop)
    sizes: list[int]  # the sample sizes the run saw
    failure: dict[str, Any]  # the failing operation's operands (shorten_rules.py reads them)
    eager: bool  # TensorFlow functions ran eagerly (a fork has none of TF's thread pools)
    calls: dict[str, list[str]]  # globals the kernel's functions read
    modules: list[str]  # names bound to modules (calls into them change none)
    extrapolated: dict[str, Any]  # the failing operation re-run at full size (shorten_extrapolate.py)
    where: dict[str, Any]  # what was found slow, and so shortened (shorten_flow.py)
    whole: list[str]  # large data left whole: the slow part does not read it
    sample_s: float  # seconds the child took to draw the samples


class ShortenPlanWire(TypedDict, total=False):
    rows: int  # rows wanted in the sample
    seed: int
    cap: int  # iterations per shortened loop


class ShortenedRunWire(TypedDict, total=False):
    outcome: DryRunOutcomeName
    exception: str
    message: str
    line: int  # 1-based within the cell
    elapsed_s: float
    plan: ShortenPlanWire
    shortened: ShortenedFactsWire


class ShortenedRunsWire(TypedDict, total=False):
    runs: list[ShortenedRunWire]
    after_s: float
    error: str
    skipped: str  # why no shortened run was started
    skipped_full: str  # why the full run was stopped at once
    tf_started: bool  # the kernel started TensorFlow's runtime (its thread pools stay there)


#: How a preview's name changed (undo_print.py's ``_ufp_diff``): new, another object, gone, in place.
PreviewChangeName = Literal["bound", "rebound", "deleted", "mutated"]


class PreviewValueWire(TypedDict, total=False):
    type: str
    shape: list[int]
    len: int
    columns: list[str]  # a DataFrame's first 200
    dtype: str


class PreviewChangeWire(TypedDict, total=False):
    name: str
    change: PreviewChangeName
    before: PreviewValueWire  # absent for a name the cell bound
    after: PreviewValueWire  # absent for a name it deleted


class PreviewWire(TypedDict, total=False):
    stdout: str  # what it printed and the text of what it displayed (the first ``stdout_chars``)
    stdout_cut: bool
    result: str  # its last expression's value as IPython shows it (text/plain)
    result_cut: bool
    changes: list[PreviewChangeWire]
    more: int  # changed names beyond those listed
    error: str  # why there is no diff


class DryRunWire(TypedDict, total=False):
    outcome: DryRunOutcomeName
    exception: str
    message: str
    line: int  # 1-based within the cell
    elapsed_s: float  # in the child: confinement + the cell
    setup_s: float  # in the child: limits, transform, compile, the jail (before the cell)
    fork_s: float  # in the kernel: the fork() call itself
    round_trip_s: float
    budget_s: float
    setup_cpu_s: float  # CPU time the child used up to the cell (limits + jail)
    child_cpu_s: float  # CPU time the child used (process_time counts from the fork)
    jail_ms: dict[str, float]  # in the child: CPU milliseconds per confinement step
    phases_ms: dict[str, float]  # one clock, ms since the fork: when each phase ended
    child_private_dirty_kb: int
    child_pid: int
    notes: list[str]
    prepared: bool  # run in a child prepared ahead (no fork, no jail on its way)
    prepared_age_s: float  # how long that child had waited
    shortened: ShortenedRunsWire
    facts: dict[str, Any]  # wire.FailFactsWire: what the failing line read (failfacts.py)
    standin: dict[str, Any]  # a shape-level run: why, names, devices (standin.py)
    unbound: list[str]  # of the payload's ``expect_bound``, the names a completed run left unbound
    preview: PreviewWire  # the payload asked ``preview``: a "Try in sandbox" (dryrun/preview.py)


class DryRunPreparedWire(TypedDict, total=False):
    outcome: PrepareOutcomeName
    message: str
    fresh: bool
    child_pid: int
    age_s: float
    prepare_ms: float


#: the keys a shortened run's answer keeps on its way out (the rest is the full run's bookkeeping)
SHORTENED_RUN_KEYS = tuple(ShortenedRunWire.__annotations__)
