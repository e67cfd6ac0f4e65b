"""Print one of the README's two Quick-start commands, so CI runs exactly what the README says.

``python3 .ci/readme_command.py install`` prints command 1 (install + check an example), ``test``
command 2 (install what the tests need and run the whole suite). Each is the one line of a fenced
``bash`` block under ``## Quick start``; anything else is an error, so the README and CI cannot drift.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start_commands(text: str) -> list[str]:
    """The one-line commands of the fenced bash blocks in the README's Quick start section."""
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", text, flags=re.M | re.S)
    if section is None:
        raise SystemExit("README.md has no '## Quick start' section")
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(1), flags=re.M | re.S)
    commands = [b.strip() for b in blocks]
    if len(commands) < 2 or any("\n" in c for c in commands[:2]):
        raise SystemExit("README.md's Quick start must open with two one-line bash blocks")
    return commands[:2]


def main(argv: list[str]) -> int:
    which = argv[1] if len(argv) > 1 else ""
    if which not in ("install", "test"):
        print("usage: readme_command.py install|test", file=sys.stderr)
        return 2
    install, test = quick_start_commands(README.read_text(encoding="utf-8"))
    print(install if which == "install" else test)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
