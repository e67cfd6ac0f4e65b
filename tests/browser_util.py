"""What the browser tests share: Debian's Chromium (Playwright cannot download its own here), the flags
that keep it off the closed network, and where screenshots go.

Screenshots go to a temporary folder, so a test run leaves the checkout as it was; with
``CRANE_UPDATE_SCREENSHOTS=1`` they replace the pictures of the README and docs in ``docs/img``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
_README_PICTURES = Path(__file__).resolve().parents[1] / "docs" / "img"


def screenshot_dir() -> Path:
    """``docs/img`` when the README's pictures are to be renewed, else a fresh temporary folder."""
    if os.environ.get("CRANE_UPDATE_SCREENSHOTS") == "1":
        folder = _README_PICTURES
    else:
        folder = Path(tempfile.gettempdir()) / "crane-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
