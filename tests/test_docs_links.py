"""The README and docs/ hold together: every relative link resolves in the repository, every page
in docs/ is linked from the README, and the README stays the short page a newcomer reads first."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: [text](target) and ![alt](target), target up to a space or ")"; code spans removed first
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in _pages():
        for target in _links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(REPO / t.split("#", 1)[0]).resolve() for t in _links(REPO / "README.md")}
    unlinked = [
        str(p.relative_to(REPO)) for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in linked
    ]
    assert not unlinked, f"link these from README.md's Documentation list: {unlinked}"


def test_the_readme_is_short_and_keeps_what_ci_reads() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 415 // 2
    assert "## Quick start" in text and "../shared" not in text
    assert "docs/architecture.md" in text
