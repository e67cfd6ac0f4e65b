"""How large are our prompts beside the CRANE-LLM paper's? o200k tokens, all 222 JunoBench instances.

Rows:
- paper: the recorded user messages (``prompts/code`` -RT, ``prompts/code_runinfo`` +RT), as sent;
- ours on the paper's inputs: the same executed cells, target and recorded runtime text, parsed back
  out of the paper's files and put through ``build_messages`` (system + user, then user alone);
- ours without the slice (every executed cell kept, as the paper did);
- ours on ``cases/<case>.json``, whose executed-cell lists are longer than the paper's in many cases.

The paper's own instructions (its system prompt, about 110 tokens) are not in its recorded files, so
"ours, whole" against "paper" counts our instructions and not theirs.
Run by hand: ``python benchmarks/prompt_size.py [--junobench PATH]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from crane_lsp.llm.prompt import build_messages, count_tokens, prompt_tokens

DEFAULT = Path(__file__).resolve().parents[1] / "crane_lsp" / "data" / "junobench"  # shipped with the package
_RT = "# Current relevent runtime information:\n"  # sic, as recorded


def paper_parts(text: str) -> tuple[list[str], str, str | None]:
    """(executed cells, target, runtime text or None) of one recorded paper prompt."""
    head, target = text.split("# Target Cell:\n", 1)
    runtime = None
    if _RT in head:
        head, runtime = head.split(_RT, 1)
    body = head.split("# Executed Cells:\n", 1)[1]
    cells = [c.strip("\n") for c in re.split(r"^## Cell \d+:\n", body, flags=re.M)[1:]]
    return cells, target, runtime


def measure(root: Path) -> dict[str, dict[str, list[int]]]:
    rows: dict[str, dict[str, list[int]]] = {}

    def add(row: str, setting: str, value: int) -> None:
        rows.setdefault(row, {"-RT": [], "+RT": []})[setting].append(value)

    for path in sorted((root / "prompts" / "code").glob("*.txt")):
        for setting, folder in (("-RT", "code"), ("+RT", "code_runinfo")):
            text = (root / "prompts" / folder / path.name).read_text()
            cells, target, runtime = paper_parts(text)
            sliced = build_messages(cells, target, runtime)
            full = build_messages(cells, target, runtime, slice_cells=False)
            add("paper (user message)", setting, count_tokens(text))
            add("ours, whole (system + user)", setting, prompt_tokens(sliced))
            add("ours, user message", setting, count_tokens(sliced[1].content))
            add("ours, whole, no slice", setting, prompt_tokens(full))
    for path in sorted((root / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        for version in ("buggy", "fixed"):
            executed = [c["code"] for c in case[version]["executed"]]
            messages = build_messages(executed, case[version]["target"]["code"], None)
            add("ours on cases/*.json, whole", "-RT", prompt_tokens(messages))
            add("ours on cases/*.json, user message", "-RT", count_tokens(messages[1].content))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--junobench", type=Path, default=DEFAULT)
    args = parser.parse_args()
    rows = measure(args.junobench)
    table = Table(title="prompt size, o200k tokens (JunoBench, 222 instances)")
    for col in ("prompt", "n", "-RT median", "-RT p90", "+RT median", "+RT p90"):
        table.add_column(col, justify="left" if col == "prompt" else "right")
    for name, by in rows.items():
        cells = [name, str(len(by["-RT"]))]
        for setting in ("-RT", "+RT"):
            xs = by[setting]
            cells += [f"{statistics.median(xs):.1f}", f"{np.percentile(xs, 90):.0f}"] if xs else ["", ""]
        table.add_row(*cells)
    Console().print(table)


if __name__ == "__main__":
    main()
