"""One settings model for every front door: the server, ``check`` and ``bench``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from crane_lsp.kernel.agent import wire  # the one set of budget defaults, shared with the kernel agent

ProviderName = Literal["none", "openai", "openai-compatible", "gemini"]


class Settings(BaseModel):
    """User-facing settings; camelCase aliases match the editor's ``crane.*`` configuration."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    provider: ProviderName = "none"
    model: str | None = None  # provider default when None
    base_url: str | None = Field(default=None, alias="baseUrl")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")  # name of the variable, never the key
    votes: int = Field(default=1, ge=1, le=15)
    temperature: float = Field(default=0.01, ge=0.0, le=2.0)
    request_timeout_s: float = Field(default=60.0, gt=0, alias="requestTimeout")
    retries: int = Field(default=3, ge=0, le=10)
    # a verdict needs a few hundred tokens; without a cap a local server generates until its context is full
    max_tokens: int = Field(default=512, ge=16, le=65536, alias="maxTokens")
    runtime_info: bool = Field(default=True, alias="runtimeInfo")
    privacy: bool = False  # structure only: shapes, dtypes, column names; no values
    max_columns: int = Field(default=wire.MAX_COLUMNS, ge=1, le=5000, alias="maxColumns")
    sample_rows: int = Field(default=wire.SAMPLE_ROWS, ge=1000, alias="sampleRows")
    object_budget_s: float = Field(default=wire.OBJECT_BUDGET_S, gt=0, alias="objectBudget")
    request_budget_s: float = Field(default=wire.REQUEST_BUDGET_S, gt=0, alias="requestBudget")
    debounce_ms: int = Field(default=500, ge=0, le=10_000, alias="debounce")
    max_pending_cells: int = Field(default=5, ge=1, le=100, alias="maxPendingCells")
    llm_concurrency: int = Field(default=2, ge=1, le=32, alias="llmConcurrency")
    # a kernel's connection file, or its URL on a Jupyter server: http(s)://HOST:PORT[/BASE]/api/kernels/ID
    connection_file: str | None = Field(default=None, alias="connectionFile")
    # a Jupyter server (JupyterHub single-user server, a lab's server): a notebook's kernel is found in
    # its /api/sessions by the notebook's path
    jupyter_server_url: str | None = Field(default=None, alias="jupyterServerUrl")
    # the token of that server (else JUPYTER_TOKEN); a SecretStr, so no repr, dump or log shows it
    jupyter_token: SecretStr | None = Field(default=None, alias="jupyterToken", repr=False)
    dry_run: Literal["off", "safe", "on"] = Field(default="safe", alias="dryRun")
    dry_run_budget_s: float = Field(default=3.0, gt=0, le=120, alias="dryRunBudget")
    # an explicit "Re-check cell" may wait longer than a check while typing; both niced and capped
    dry_run_recheck_budget_s: float = Field(default=30.0, gt=0, le=600, alias="dryRunRecheckBudget")
    dry_run_memory_mb: int = Field(default=4096, ge=64, alias="dryRunMemory")  # above the kernel's size
    # a slow cell's dry run is also run shortened, on a sample of its data (docs/slow-cells.md)
    dry_run_shorten: bool = Field(default=True, alias="dryRunShorten")
    # undo the last cell: a jailed copy of the kernel held while each cell runs (docs/undo.md); off by
    # default: every page a cell writes while it is held is copied (slower cells, more memory)
    undo: bool = Field(default=False, alias="undo")
    undo_reserve_mb: int = Field(default=1024, ge=0, alias="undoReserve")  # free memory always left
    undo_hold_s: float = Field(default=600.0, gt=0, le=86_400, alias="undoHold")  # then released
    explain_certain: bool = Field(
        default=False, alias="explainCertain"
    )  # ask the LLM to explain check findings
