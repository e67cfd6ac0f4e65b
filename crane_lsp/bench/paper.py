"""The paper's own figures (``paper_results_by_library.csv``), to print beside ours."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from pydantic import BaseModel

PREDICTION_ONLY = "prediction_only"


def model_key(name: str) -> str:
    """``"gemini 2.5 flash"`` and ``"gemini-2.5-flash"`` (and ``recorded:…``) name the same model."""
    name = name.split(":", 1)[-1].split("/")[-1]
    return re.sub(r"[^a-z0-9]", "", name.lower())


class PaperRow(BaseModel):
    task: str
    model: str
    library: str
    setting: str
    n: int
    fp: int
    fn: int
    tp: int
    tn: int
    precision: float
    recall: float
    f1: float
    accuracy: float


def _number(text: str) -> float:
    """A metric cell; the spreadsheet's ``#DIV/0!`` (nothing predicted positive) counts as 0, as ours."""
    try:
        return float(text)
    except ValueError:
        return 0.0


def load_paper_rows(folder: str | Path) -> list[PaperRow]:
    """All rows of the paper's CSV in a JunoBench folder ([] when the file is absent)."""
    path = Path(folder) / "paper_results_by_library.csv"
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [
            PaperRow(
                task=r["task"],
                model=r["model"],
                library=r["library"],
                setting=r["setting"],
                n=int(r["n"]),
                fp=round(float(r["FP"])),
                fn=round(float(r["FN"])),
                tp=round(float(r["TP"])),
                tn=round(float(r["TN"])),
                precision=_number(r["precision"]),
                recall=_number(r["recall"]),
                f1=_number(r["f1"]),
                accuracy=_number(r["accuracy"]),
            )
            for r in csv.DictReader(fh)
        ]


def paper_rows_for(rows: list[PaperRow], model: str, task: str = PREDICTION_ONLY) -> list[PaperRow]:
    """The rows of ``model`` (any spelling) for ``task``; [] for a model the paper did not run."""
    key = model_key(model)
    return [r for r in rows if r.task == task and model_key(r.model) == key]
