"""Skill assessment: SA_acc, the aspect-balanced accuracy (metrics.md §3.7).

``leaderboard-v1``: the skill level is the mean of every ``N/5`` in the answer (<= 2 novice,
<= 3.5 intermediate, else expert); aspects are ``name: N/5`` parts between commas, names
compared case-sensitively. A GT aspect absent from the answer is not counted, and an answer
without any ``N/5`` is skipped entirely. Per dataset, each aspect's accuracy over the samples
that name it, averaged over aspects; SA_acc is the mean over datasets.

``strict-v2``: names compare case-insensitively, parts may be separated by ``,``, ``;`` or new
lines, scores must be whole numbers 1-5 (``10/50`` is not a score); every sample counts and a
missing aspect is wrong.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from medvidbench.benchmarks.medvidbench.groundtruth import Sample
from medvidbench.benchmarks.medvidbench.rules import corrected, tolerant
from medvidbench.benchmarks.medvidbench.tasks.balanced import (
    balanced_linearised,
    balanced_task_result,
)
from medvidbench.core import linear_re
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import SampleResult, TaskResult, TaskScorer

if TYPE_CHECKING:
    from medvidbench.core.statistics import Linearised

ASPECTS = (
    "Respect for tissue",
    "Suture/needle handling",
    "Time and motion",
    "Flow of operation",
    "Overall performance",
    "Quality of final product",
)
_V1_SCORE = linear_re.compile(r"(\d+)/5")
_V1_ASPECT = linear_re.compile(r"([^:]+?):\s*(\d+)/5")
_V2_ASPECT = linear_re.compile(r"([^:]+?):\s*([1-5])\s*/\s*5(?!\d)")
_V2_SPLIT = re.compile(r"[,;\n]")
_LEVELS = {
    "n": "novice",
    "novice": "novice",
    "beginner": "novice",
    "i": "intermediate",
    "intermediate": "intermediate",
    "e": "expert",
    "expert": "expert",
}


def level_from_mean(mean: float) -> str:
    return "novice" if mean <= 2.0 else "intermediate" if mean <= 3.5 else "expert"


def normalize_level(text: str) -> str:
    """Upstream's level table: exact, then the first of n, i, e found as a substring."""
    low = text.strip().lower()
    if low in _LEVELS:
        return _LEVELS[low]
    return next((_LEVELS[k] for k in ("n", "i", "e") if k in low), low)


def parse(text: str, strict: bool = False) -> tuple[str | None, dict[str, int]]:
    """Read the (level, aspect scores) of an answer; level None when there is no score.

    Examples:
        >>> parse("Respect for tissue: 2/5, Time and motion: 1/5")
        ('novice', {'Respect for tissue': 2, 'Time and motion': 1})
        >>> parse("respect for tissue: 2/5; time and motion: 4/5", strict=True)[1]
        {'respect for tissue': 2, 'time and motion': 4}
    """
    if strict:
        aspects: dict[str, int] = {}
        for part in _V2_SPLIT.split(text):
            m = _V2_ASPECT.search(part)
            if m:
                aspects.setdefault(
                    " ".join(m.group(1).split()).casefold().strip("-*• "), int(m.group(2))
                )
        if not aspects:
            return None, {}
        return level_from_mean(sum(aspects.values()) / len(aspects)), aspects
    scores = [int(v) for v in _V1_SCORE.findall(text)]
    if not scores:
        return None, {}
    aspects = {}
    for part in text.split(","):
        m = _V1_ASPECT.search(part)
        if m:
            aspects[m.group(1).strip()] = int(m.group(2))
    return level_from_mean(sum(scores) / len(scores)), aspects


def reads_something(text: str) -> bool:
    """Whether :func:`parse` finds a score under ``leaderboard-v1`` (its level is not None)."""
    return _V1_SCORE.search(text) is not None


def truth(struc: Any, answer: str) -> tuple[str, dict[str, int]]:
    """GT (level, aspect scores) from ``struc_info[0]``, falling back to the answer text."""
    item = struc[0] if isinstance(struc, list) and struc else struc
    if isinstance(item, dict) and isinstance(item.get("skill_scores"), dict):
        scores = {str(k): int(v) for k, v in item["skill_scores"].items()}
        level = item.get("skill_level")
        if level is None:
            level = level_from_mean(sum(scores.values()) / len(scores))
        return normalize_level(str(level)), scores
    level, scores = parse(answer)
    return level or "", scores


def score(
    gt: tuple[str, dict[str, int]], pred: tuple[str | None, dict[str, int]], strict: bool
) -> dict[str, float] | None:
    """Per-sample: ``level`` correctness and, per GT aspect, ``aspect:<name>`` correctness and
    ``ae:<name>`` absolute error (only for aspects counted)."""
    level, scores = pred
    if level is None and not strict:
        return None
    out = {"level": float(level == gt[0])}
    lookup = {k.casefold(): v for k, v in scores.items()} if strict else scores
    for name, value in gt[1].items():
        got = lookup.get(name.casefold() if strict else name)
        if got is None:
            if strict:
                out[f"aspect:{name}"] = 0.0
            continue
        out[f"aspect:{name}"] = float(got == value)
        out[f"ae:{name}"] = float(abs(got - value))
    return out


class SAScorer(TaskScorer[Sample]):
    task = "skill_assessment"
    metric_keys: tuple[str, ...] = ("sa_acc",)

    def parse(self, text: str, item: Sample, profile: Profile) -> tuple[str | None, dict[str, int]]:
        return parse(text, tolerant(profile))

    def score_sample(
        self, parsed: tuple[str | None, dict[str, int]], item: Sample, profile: Profile
    ) -> SampleResult:
        values = score(truth(item.structure(), item.answer), parsed, corrected(profile))
        return SampleResult(
            item.index,
            item.dataset,
            parsed[0] is not None,
            values,
            "" if values is not None else "no N/5 score found",
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        return balanced_task_result(self.task, "sa_acc", "aspect:", "level", results)

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        return balanced_linearised(self.task, "sa_acc", "aspect:", results)


SCORER = SAScorer()
