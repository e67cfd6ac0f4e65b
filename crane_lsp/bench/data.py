"""The benchmark data shipped inside the package, found by name from any folder.

``junobench`` (JunoBench's labels, cases, prompts and the CRANE-LLM paper's recorded answers; from
JunoBench_construct, MIT, and crane_llm, BSD-3-Clause: see each folder's README) and ``junoreplay``
(the executable replay corpus) live in ``crane_lsp/data/``, so ``crane-lsp bench junobench`` works
after ``pip install`` without a checkout beside it.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
SHIPPED = ("junobench", "junoreplay")


def shipped(name: str) -> Path:
    """The folder of a shipped data set (``junobench`` or ``junoreplay``)."""
    if name not in SHIPPED:
        raise KeyError(f"no shipped data set {name!r}; choose from {', '.join(SHIPPED)}")
    return DATA_DIR / name


def resolve_cases(arg: str) -> Path:
    """``arg`` as a path when it exists, else the shipped data set of that name, else the path as given."""
    path = Path(arg)
    if path.exists() or arg not in SHIPPED:
        return path
    return shipped(arg)
