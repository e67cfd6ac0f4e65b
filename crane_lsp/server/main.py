"""Run the crane language server: stdio by default, ``--tcp HOST:PORT`` for editors that want a socket."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP socket instead of stdio")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("CRANE_LSP_LOG_LEVEL", "WARNING").upper(),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )


def _host_port(spec: str) -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep or not port.isdigit():
        raise SystemExit(f"--tcp expects HOST:PORT, got {spec!r}")
    return host or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(args, "log_level", "WARNING"),
        # at DEBUG each line says when (ms since start): what races with what
        format=("crane-lsp %(relativeCreated)d ms " if args.log_level == "DEBUG" else "crane-lsp ")
        + "%(levelname)s %(message)s",
    )
    from crane_lsp.server.redact import install

    install()  # no log line shows a Jupyter token, at any level
    if args.log_level != "DEBUG":  # pygls logs every message at INFO: only crane's own lines below DEBUG
        logging.getLogger("pygls").setLevel(logging.WARNING)
    if not getattr(args, "tcp", None):
        from crane_lsp.server.fastinit import serve_stdio_fast

        serve_stdio_fast()  # answers initialize while pygls is still importing
        return 0
    from crane_lsp.server.create import create_server
    from crane_lsp.server.protocol import serve_tcp

    host, port = _host_port(args.tcp)
    serve_tcp(create_server(), host, port)
    return 0
