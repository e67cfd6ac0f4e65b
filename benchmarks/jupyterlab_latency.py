"""crane in JupyterLab as the user waits for it: a real ``jupyter lab``, Debian chromium, Playwright.

Run by hand: ``python3 benchmarks/jupyterlab_latency.py [--rounds 5] [--debounce 300]``. Prints, as
median and max over the rounds:

- first cell finishing (its ``[n]`` prompt appears) → the next cell's squiggle appears (it names a
  column the new frame lacks), and → it clears again (the frame has the column again);
- last keystroke in a cell → its lint mark is drawn (the debounce is part of it; the issue's bound is
  debounce + 0.5 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser_util import CHROMIUM, CHROMIUM_ARGS
from tests.jupyterlab_util import JupyterProc, write_notebook
from tests.test_jupyterlab_browser import Lab, install_extension


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--debounce", type=int, default=300, help="the extension's debounceMs setting")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="crane-jl-bench-"))
    root = base / "root"
    root.mkdir()
    cells = ['import pandas as pd\ndf = pd.DataFrame({"c0": [1]})', 'df["c0"].sum()']
    write_notebook(root / "bench.ipynb", cells)
    proc = JupyterProc(root=root, dirs=base / "dirs", app="lab")
    install_extension(proc.dirs / "data")
    settings = proc.dirs / "config" / "lab" / "user-settings" / "crane-lsp"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"debounceMs": args.debounce}))
    proc.start(timeout=120)
    after_run: list[float] = []
    after_typing: list[float] = []
    after_fix: list[float] = []
    verdict_box: list[float] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            ui = Lab(page)
            page.goto(f"{proc.url}lab/tree/bench.ipynb?token={proc.token}", wait_until="domcontentloaded")
            page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible", timeout=90_000)
            ui.wait(lambda: "attached" in ui.status().inner_text(), timeout=90, what="crane attached")
            count = 0
            for r in range(1, args.rounds + 1):
                # the frame loses column c0: the next cell's squiggle must appear after the run
                for column, crash in (("c1", True), ("c0", False)):
                    ui.set_text(0, f'import pandas as pd\ndf = pd.DataFrame({{"{column}": [1]}})', delay_ms=0)
                    ui.run(0)
                    count += 1
                    finished = ui.wait(lambda n=count: ui.prompt(0) == f"[{n}]:", what="the cell to finish")
                    shown = ui.wait(lambda c=crash: bool(ui.marks(1)) == c, what="the squiggle to follow")
                    (after_run if crash else after_fix).append(shown - finished)
                    if crash:
                        boxed = ui.wait(lambda: "KeyError" in ui.verdict(1), what="the verdict box")
                        verdict_box.append(boxed - finished)
                typed = ui.set_text(1, f'df["typo{r}"].sum()')
                drawn = ui.wait(lambda r=r: any(f"typo{r}" in m for m in ui.marks(1)), what="the typed mark")
                after_typing.append(drawn - typed)
                ui.set_text(1, 'df["c0"].sum()', delay_ms=0)
            browser.close()
    finally:
        proc.stop()

    def show(name: str, values: list[float]) -> None:
        ms = [v * 1000 for v in values]
        print(f"{name}: median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms over {len(ms)} rounds")

    show("first cell finished -> squiggle on the next", after_run)
    show("first cell finished -> verdict box under the next", verdict_box)
    show("first cell finished -> squiggle on the next cleared", after_fix)
    show(f"last keystroke -> squiggle (debounce {args.debounce} ms)", after_typing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
