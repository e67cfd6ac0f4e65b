"""The LLM request budgets as command-line options, shared by ``check`` and ``bench`` so both spell
them the same as the settings (``requestTimeout``, ``retries``, ``maxTokens``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds one LLM request may take (default 60; a local server's timeout is not retried)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=None,
        help="extra attempts after a 429, 5xx or dropped connection (default 3)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="cap on the tokens of one LLM answer (default 512; a verdict needs a few hundred)",
    )


def budget_values(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Settings`` fields the budget options set (only those given)."""
    pairs = (("request_timeout", "request_timeout_s"), ("retries", "retries"), ("max_tokens", "max_tokens"))
    return {field: getattr(args, arg) for arg, field in pairs if getattr(args, arg, None) is not None}
