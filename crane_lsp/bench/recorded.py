"""Provider ``recorded:<model>``: replays the paper's five raw answers per instance from JunoBench."""

from __future__ import annotations

import json
from pathlib import Path

from crane_lsp.bench.cases import BenchCase, BenchError
from crane_lsp.bench.runner import Answer, Setting, majority

#: The paper's prompt folders: -RT is the code alone, +RT the code with runtime information.
PROMPT_DIR: dict[Setting, str] = {"-RT": "code", "+RT": "code_runinfo"}


def recorded_models(folder: str | Path) -> list[str]:
    root = Path(folder) / "recorded"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


class RecordedPredictor:
    """Majority of the first ``votes`` recorded answers (``detection``), as the paper scored them."""

    def __init__(self, folder: str | Path, model: str, *, votes: int = 5) -> None:
        self.root = Path(folder) / "recorded" / model
        if not self.root.is_dir():
            known = ", ".join(recorded_models(folder)) or "none"
            raise BenchError(f"no recorded answers for {model!r} in {folder} (recorded models: {known})")
        self.model = model
        self.votes = votes
        self.label = f"recorded:{model}"

    async def predict(self, case: BenchCase, setting: Setting) -> Answer:
        path = self.root / PROMPT_DIR[setting] / f"{case.instance}.json"
        try:
            answers = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Answer(predicted=None, error=f"no recorded answer: {path}")
        votes = [bool(a["detection"]) for a in answers[: self.votes]]
        if not votes:
            return Answer(predicted=None, error=f"empty recorded answer: {path}")
        first = next((a for a in answers if bool(a["detection"]) == majority(votes)), answers[0])
        return Answer(
            predicted=majority(votes), votes=votes, message=str(first.get("reasoning", "")), cached=True
        )

    async def aclose(self) -> None:
        return None
