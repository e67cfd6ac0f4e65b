"""On-disk cache of raw answers, keyed by a hash of the exact request, so that an interrupted run
resumes where it stopped and a re-run of the same configuration sends no request at all."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
)


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/crane-lsp/bench.sqlite`` when that is set, else ``./.crane-cache/bench.sqlite``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "crane-lsp" / "bench.sqlite"
    return Path.cwd() / ".crane-cache" / "bench.sqlite"


def request_key(**request: Any) -> str:
    """SHA-256 of the request as canonical JSON (provider, model, messages, temperature, vote index…)."""
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerCache:
    """A tiny key → JSON store; every put is committed at once so a killed run loses nothing."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()

    @classmethod
    def disabled(cls) -> AnswerCache:
        return cls(None)

    def get(self, key: str) -> Any | None:
        if self._db is None:
            self.misses += 1
            return None
        row = self._db.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        if self._db is None:
            return
        self._db.execute(
            "INSERT OR REPLACE INTO answers (key, value, created) VALUES (?, ?, ?)",
            (key, json.dumps(value, ensure_ascii=False), time.time()),
        )
        self._db.commit()

    def __len__(self) -> int:
        if self._db is None:
            return 0
        return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
