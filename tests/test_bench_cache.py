"""The SQLite answer cache: keyed by the exact request, durable across processes, off when asked."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crane_lsp.bench.cache import AnswerCache, default_cache_path, request_key

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def test_key_depends_on_every_part_of_the_request_and_nothing_else() -> None:
    base = {"provider": "openai", "model": "m", "messages": MESSAGES, "temperature": 0.01, "vote": 0}
    key = request_key(**base)
    assert key == request_key(**dict(reversed(list(base.items()))))  # argument order does not matter
    assert len(key) == 64
    for change in (
        {"vote": 1},
        {"temperature": 0.2},
        {"model": "n"},
        {"provider": "gemini"},
        {"messages": [*MESSAGES, {"role": "user", "content": "x"}]},
    ):
        assert request_key(**{**base, **change}) != key, change


def test_answers_survive_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "bench.sqlite"
    cache = AnswerCache(path)
    assert cache.get("k") is None and cache.misses == 1
    cache.put("k", {"crash": True, "votes": [True, False]})
    cache.close()
    code = (
        "import sys; from crane_lsp.bench.cache import AnswerCache; c = AnswerCache(sys.argv[1]); "
        "print(c.get('k')['votes'], len(c))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[True, False] 1"
    again = AnswerCache(path)
    assert again.get("k") == {"crash": True, "votes": [True, False]} and again.hits == 1
    again.put("k", {"crash": False})  # replaced, not duplicated
    assert len(again) == 1 and again.get("k") == {"crash": False}
    again.close()
    rows = sqlite3.connect(path).execute("SELECT COUNT(*) FROM answers").fetchone()
    assert rows == (1,)


def test_disabled_cache_stores_nothing(tmp_path: Path) -> None:
    cache = AnswerCache.disabled()
    cache.put("k", 1)
    assert cache.get("k") is None and len(cache) == 0 and cache.misses == 1
    assert not list(tmp_path.iterdir())


def test_default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_cache_path() == tmp_path / ".crane-cache" / "bench.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "crane-lsp" / "bench.sqlite"
