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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """``only``: the subcommand being run; the others are listed without importing them (``serve``
    must answer the editor's ``initialize`` fast)."""
    parser = argparse.ArgumentParser(
        prog="crane-lsp",
        description="Predict, before you run a notebook cell, whether it will crash, on which line, and why.",
    )
    parser.add_argument("--version", action="version", version=f"crane-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


#: options whose value may start with "-" (``--setting -RT``), which argparse would read as an option
_DASH_VALUE_OPTIONS = frozenset({"--setting"})


def join_dash_values(argv: list[str]) -> list[str]:
    """``--setting -RT`` as ``--setting=-RT``: argparse takes a lone ``-RT`` for an unknown option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        dash_value = nxt is not None and nxt.startswith("-") and not nxt.startswith("--")
        if token in _DASH_VALUE_OPTIONS and dash_value:
            out.append(f"{token}={nxt}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    _quiet_library_warnings()
    words = join_dash_values(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args = parser.parse_args(words)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 2


def _quiet_library_warnings() -> None:
    """Libraries' warnings (nbformat's validation, deprecations) stay off the user's terminal.

    They are about the libraries, not the notebook; ``PYTHONWARNINGS`` or ``-W`` still show them.
    debugpy (imported with ipykernel when a kernel is started) prints a "frozen modules" notice
    unless told not to validate its file names.
    """
    import os
    import warnings

    if not sys.warnoptions:
        warnings.simplefilter("ignore")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


if __name__ == "__main__":
    sys.exit(main())
