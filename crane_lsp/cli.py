"""``crane-lsp``: one entry point, one module per subcommand.

Subcommand modules keep their heavy imports inside ``run()``, so ``serve`` and ``--help`` start fast.

Each subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int``.
Exit status: 0 ok / no crash predicted, 1 crash predicted, 2 usage or runtime error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from crane_lsp import __version__

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("crane_lsp.server.main", "run the language server (stdio, or --tcp HOST:PORT)"),
    "check": ("crane_lsp.commands.check", "predict whether a notebook cell will crash"),
    "inspect": ("crane_lsp.commands.inspect", "show what crane sees in the kernel for a cell"),
    "bench": ("crane_lsp.bench.cli", "measure a predictor on JunoBench or a folder of notebooks"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crane-lsp",
        description="Predict, before you run a notebook cell, whether it will crash, on which line, and why.",
    )
    parser.add_argument("--version", action="version", version=f"crane-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
