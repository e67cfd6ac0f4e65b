"""The paper's metrics: confusion matrix (positive class = crash), accuracy, precision, recall, F1, the
exact two-sided McNemar test between two settings on the same instances, and cost statistics."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, computed_field


@dataclass(frozen=True)
class Outcome:
    """One scored instance: the truth and the (majority-vote) prediction; None when it failed."""

    instance: str
    truth: bool | None
    predicted: bool | None

    @property
    def scored(self) -> bool:
        return self.truth is not None and self.predicted is not None

    @property
    def correct(self) -> bool:
        return self.scored and self.truth == self.predicted


class Scores(BaseModel):
    """Counts and the four metrics; ``failed`` instances are left out of every count."""

    n: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    failed: int = 0

    @staticmethod
    def _ratio(num: int, den: int) -> float:
        return num / den if den else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def accuracy(self) -> float:
        return self._ratio(self.tp + self.tn, self.n)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def precision(self) -> float:
        return self._ratio(self.tp, self.tp + self.fp)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float:
        return self._ratio(self.tp, self.tp + self.fn)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score(outcomes: Iterable[Outcome]) -> Scores:
    s = Scores()
    for o in outcomes:
        if not o.scored:
            s.failed += 1
            continue
        s.n += 1
        if o.predicted and o.truth:
            s.tp += 1
        elif o.predicted:
            s.fp += 1
        elif o.truth:
            s.fn += 1
        else:
            s.tn += 1
    return s


def breakdown(outcomes: Sequence[Outcome], key: Callable[[str], str]) -> dict[str, Scores]:
    """Scores per group (e.g. library or root cause of each instance), groups sorted by name."""
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(key(o.instance) or "(none)", []).append(o)
    return {name: score(groups[name]) for name in sorted(groups)}


class McNemar(BaseModel):
    """Exact two-sided McNemar test: a binomial test on the discordant pairs (b + c, p = 0.5)."""

    n: int  # instances scored in both settings
    only_first_correct: int  # b
    only_second_correct: int  # c
    p_value: float


def mcnemar(first: Sequence[Outcome], second: Sequence[Outcome]) -> McNemar:
    by_id = {o.instance: o for o in second if o.scored}
    pairs = [(o, by_id[o.instance]) for o in first if o.scored and o.instance in by_id]
    b = sum(1 for x, y in pairs if x.correct and not y.correct)
    c = sum(1 for x, y in pairs if y.correct and not x.correct)
    p = exact_binomial_two_sided(b, b + c) if b + c else 1.0
    return McNemar(n=len(pairs), only_first_correct=b, only_second_correct=c, p_value=float(p))


def exact_binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test p-value of ``k`` successes in ``n`` trials at p = 0.5 (McNemar).

    The distribution is symmetric, so the two-sided p is twice the smaller tail, capped at 1: the same
    figure as ``scipy.stats.binomtest(k, n, 0.5)``, without scipy in the core install.
    """
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1))
    return min(1.0, 2 * tail / 2**n)


class Cost(BaseModel):
    """Per-instance cost: tokens (sum and mean over instances that report them) and latency."""

    instances: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    mean_prompt_tokens: float | None = None
    mean_completion_tokens: float | None = None
    latency_median_ms: float | None = None
    latency_p95_ms: float | None = None


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), as numpy's default method."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def cost(
    prompt: Sequence[int | None], completion: Sequence[int | None], latency: Sequence[float | None]
) -> Cost:
    pt = [t for t in prompt if t is not None]
    ct = [t for t in completion if t is not None]
    lat = [x for x in latency if x is not None]
    return Cost(
        instances=len(prompt),
        prompt_tokens=sum(pt),
        completion_tokens=sum(ct),
        mean_prompt_tokens=sum(pt) / len(pt) if pt else None,
        mean_completion_tokens=sum(ct) / len(ct) if ct else None,
        latency_median_ms=percentile(lat, 50) if lat else None,
        latency_p95_ms=percentile(lat, 95) if lat else None,
    )
