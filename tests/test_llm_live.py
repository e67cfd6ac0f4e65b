"""One real request per provider, only where its API key is set in the environment (skipped otherwise)."""

from __future__ import annotations

import os

import pytest

from crane_lsp.layers import Ask
from crane_lsp.llm.predictor import LLMPredictor
from crane_lsp.settings import Settings

pytestmark = pytest.mark.live

EXECUTED = ["import pandas as pd", "df = pd.DataFrame({'price': [1.0, 2.0], 'rooms': [3, 4]})"]
TARGET = "total = df['price'].sum()\nratio = df['Price'] / df['rooms']"
RUNTIME = (
    "df: pandas.core.frame.DataFrame | shape (2, 2)\n  columns (2):\n    'price': float64\n    'rooms': int64"
)


def _has(*names: str) -> bool:
    return any(os.environ.get(n) for n in names)


@pytest.mark.parametrize(
    ("provider", "keys"),
    [
        pytest.param("openai", ("OPENAI_API_KEY",), id="openai"),
        pytest.param("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), id="gemini"),
    ],
)
async def test_a_real_model_finds_the_missing_column(provider: str, keys: tuple[str, ...]) -> None:
    if not _has(*keys):
        pytest.skip(f"{' / '.join(keys)} not set")
    llm = LLMPredictor(Settings(provider=provider, request_timeout_s=120, retries=2))
    try:
        p = await llm.predict(Ask(TARGET, EXECUTED, runtime_text=RUNTIME), raise_errors=True)
    finally:
        await llm.aclose()
    assert p.source.layer == "llm" and p.source.prompt_tokens
    assert p.crash and p.exception == "KeyError" and p.line == 1
