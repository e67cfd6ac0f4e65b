"""docs/architecture.md is the one picture of the design: its Layout names every module of the package."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_layout_names_every_module() -> None:
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = doc[doc.index("## Layout") : doc.index("## Contracts")]
    families = [prefix for prefix in re.findall(r"(\w+)\*(?:\.py)?", layout)]  # jail_*.py, sum_*.py
    unnamed = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "crane_lsp").rglob("*.py"))
        if path.name not in ("__init__.py", "__main__.py")
        and "labextension" not in path.parts
        and path.name not in layout
        and not any(path.name.startswith(prefix) for prefix in families)
    ]
    assert not unnamed, f"name these in docs/architecture.md's Layout: {unnamed}"
