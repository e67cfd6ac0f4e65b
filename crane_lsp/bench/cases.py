"""Benchmark cases: JunoBench's 222 recorded instances, or a folder of notebooks to run for real."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from crane_lsp.notebook import Notebook, NotebookError, read_ipynb

#: Cell tags that mark the target cell of a benchmark notebook (otherwise: the last code cell).
TARGET_TAGS = ("crane-target", "replay-target")

_RUNTIME_HEAD = "# Current relevent runtime information:"  # sic: the paper's spelling
_TARGET_HEAD = "# Target Cell:"


class BenchError(ValueError):
    """A benchmark input that cannot be used; the message says why, for the user (exit 2)."""


@dataclass(frozen=True)
class BenchCase:
    """One instance: what ran before, the target cell and (when known in advance) the truth."""

    instance: str
    crash: bool | None  # ground truth; None for notebooks, where running the target establishes it
    category: str = ""
    library: str = ""
    root_cause: str = ""
    crash_type: str = ""
    ename: str = ""
    executed: tuple[str, ...] = ()
    target: str = ""
    runtime_text: str | None = None  # JunoBench: the paper's recorded runtime information (+RT)
    notebook: Path | None = None  # notebook folders: the file to replay
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


def is_junobench(folder: Path) -> bool:
    return (folder / "labels.csv").is_file() and (folder / "cases").is_dir()


def extract_runtime_text(prompt: str) -> str:
    """The runtime-information part of a paper +RT prompt (between its two headings), stripped."""
    start = prompt.find(_RUNTIME_HEAD)
    if start < 0:
        return ""
    body = prompt[start + len(_RUNTIME_HEAD) :]
    end = body.find(_TARGET_HEAD)
    return (body if end < 0 else body[:end]).strip()


def load_junobench(folder: str | Path, *, limit: int | None = None) -> list[BenchCase]:
    """All instances of ``labels.csv`` in file order, with their cells and recorded runtime text."""
    root = Path(folder)
    if not is_junobench(root):
        raise BenchError(f"{root}: not a JunoBench folder (needs labels.csv and cases/)")
    with (root / "labels.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if limit is not None:
        rows = rows[:limit]
    loaded: dict[str, dict[str, object]] = {}
    cases: list[BenchCase] = []
    for row in rows:
        name = row["case"]
        if name not in loaded:
            path = root / "cases" / f"{name}.json"
            try:
                loaded[name] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise BenchError(f"{path}: cannot read the case ({exc})") from exc
        version = loaded[name][row["version"]]
        assert isinstance(version, dict)
        prompt = root / "prompts" / "code_runinfo" / f"{row['instance']}.txt"
        runtime = extract_runtime_text(prompt.read_text(encoding="utf-8")) if prompt.is_file() else None
        cases.append(
            BenchCase(
                instance=row["instance"],
                crash=row["crash"].strip().lower() == "true",
                category=row["category"],
                library=row["library"],
                root_cause=row["root_cause"],
                crash_type=row["crash_type"],
                ename=row["ename"],
                executed=tuple(c["code"] for c in version["executed"]),
                target=version["target"]["code"],
                runtime_text=runtime,
                extra={"case": name, "version": row["version"]},
            )
        )
    return cases


def target_index(nb: Notebook) -> int:
    """Index into ``nb.code_cells`` of the target: a tagged cell, else the last non-empty code cell."""
    cells = nb.code_cells
    for i, c in enumerate(cells):
        if any(t in c.tags for t in TARGET_TAGS):
            return i
    for i in range(len(cells) - 1, -1, -1):
        if cells[i].source.strip():
            return i
    raise NotebookError(f"{nb.path}: no code cell to predict")


def _meta_for(nb_path: Path) -> dict[str, str]:
    meta = nb_path.parent / "meta.json"
    if not meta.is_file():
        return {}
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    return {k: str(v) for k, v in data.items() if isinstance(v, str)}


def load_notebook_folder(folder: str | Path, *, limit: int | None = None) -> list[BenchCase]:
    """Every ``*.ipynb`` under ``folder`` (sorted; checkpoints skipped) as a case to replay."""
    root = Path(folder)
    if not root.is_dir():
        raise BenchError(f"{root}: not a folder" if root.exists() else f"{root}: no such folder")
    paths = sorted(p for p in root.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not paths:
        raise BenchError(f"{root}: no notebooks (*.ipynb) and not a JunoBench folder")
    if limit is not None:
        paths = paths[:limit]
    cases = []
    for path in paths:
        try:
            nb = read_ipynb(path)
            t = target_index(nb)
        except NotebookError as exc:
            raise BenchError(str(exc)) from exc
        cells = nb.code_cells
        meta = _meta_for(path)
        rel = path.relative_to(root).with_suffix("")
        category = meta.get("category") or (rel.parts[0] if len(rel.parts) > 1 else "")
        cases.append(
            BenchCase(
                instance=rel.as_posix(),
                crash=None,
                category=category,
                library=meta.get("library", category),
                root_cause=meta.get("root_cause", ""),
                crash_type=meta.get("refined_exception_type", ""),
                executed=tuple(cells[i].source for i in nb.replay_order(t)),
                target=cells[t].source,
                notebook=path,
            )
        )
    return cases


def load_cases(folder: str | Path, *, limit: int | None = None) -> tuple[str, list[BenchCase]]:
    """``("junobench" | "notebooks", cases)`` for a benchmark folder; BenchError when unusable."""
    root = Path(folder)
    if not root.exists():
        raise BenchError(f"{root}: no such folder")
    if is_junobench(root):
        return "junobench", load_junobench(root, limit=limit)
    return "notebooks", load_notebook_folder(root, limit=limit)
