"""Critical view of safety: CVS_acc, the component-balanced accuracy (metrics.md §3.8).

``leaderboard-v1``: the answer is split on commas; in each lower-cased part the first keyword
found among "two structures", "cystic plate", "hepatocystic triangle" decides which pattern is
tried, so "two structure: 2" is not read. A component absent from the answer is not counted.
Per dataset, each component's accuracy over the samples that give it, averaged over components;
CVS_acc is the mean over datasets. The rating accuracy (total of the parsed scores mapped to
poor/fair/good/excellent; nothing parsed = poor) is reported beside it.

``strict-v2``: parts may be separated by ``,``, ``;`` or new lines, "structure" or "structures",
any case; scores must be 0, 1 or 2; every sample counts and a missing component is wrong.
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
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import SampleResult, TaskResult, TaskScorer

if TYPE_CHECKING:
    from medvidbench.core.statistics import Linearised

COMPONENTS = ("two_structures", "cystic_plate", "hepatocystic_triangle")
_V1_RULES = (
    ("two structures", "two_structures", re.compile(r"two structures?:\s*(\d+)")),
    ("cystic plate", "cystic_plate", re.compile(r"cystic plate:\s*(\d+)")),
    (
        "hepatocystic triangle",
        "hepatocystic_triangle",
        re.compile(r"hepatocystic triangle:\s*(\d+)"),
    ),
)
_V2_RULES = (
    ("two_structures", re.compile(r"two\s+structures?\s*:\s*(\d+)")),
    ("cystic_plate", re.compile(r"cystic\s+plate\s*:\s*(\d+)")),
    ("hepatocystic_triangle", re.compile(r"hepatocystic\s+triangle\s*:\s*(\d+)")),
)
_V2_SPLIT = re.compile(r"[,;\n]")


def parse(text: str, strict: bool = False) -> dict[str, int]:
    """Read component scores from an answer.

    Examples:
        >>> parse("Two structures: 2, Cystic plate: 1, Hepatocystic triangle: 0")
        {'two_structures': 2, 'cystic_plate': 1, 'hepatocystic_triangle': 0}
        >>> parse("two structure: 2, cystic plate: 1")
        {'cystic_plate': 1}
        >>> parse("Two structure: 2; Cystic plate: 7", strict=True)
        {'two_structures': 2}
    """
    out: dict[str, int] = {}
    if strict:
        for part in _V2_SPLIT.split(text.lower()):
            for key, pattern in _V2_RULES:
                m = pattern.search(part)
                if m and int(m.group(1)) <= 2:
                    out.setdefault(key, int(m.group(1)))
        return out
    for part in text.split(","):
        part = part.lower().strip()
        for keyword, key, pattern in _V1_RULES:
            if keyword in part:
                m = pattern.search(part)
                if m:
                    out[key] = int(m.group(1))
                break
    return out


def rating(total: int) -> str:
    return "poor" if total <= 1 else "fair" if total <= 3 else "good" if total <= 5 else "excellent"


def truth(struc: Any, answer: str) -> dict[str, int]:
    """GT component scores from ``struc_info[0].cvs_scores``, falling back to the answer."""
    item = struc[0] if isinstance(struc, list) and struc else struc
    if isinstance(item, dict) and isinstance(item.get("cvs_scores"), dict):
        return {k: int(v) for k, v in item["cvs_scores"].items() if k in COMPONENTS}
    return parse(answer)


def score(gt: dict[str, int], pred: dict[str, int], strict: bool) -> dict[str, float]:
    """Per-sample: ``rating`` correctness, and per counted component ``comp:`` and ``ae:``."""
    out = {"rating": float(rating(sum(pred.values())) == rating(sum(gt.values())))}
    for key, value in gt.items():
        if key not in pred:
            if strict:
                out[f"comp:{key}"] = 0.0
            continue
        out[f"comp:{key}"] = float(pred[key] == value)
        out[f"ae:{key}"] = float(abs(pred[key] - value))
    return out


class CVSScorer(TaskScorer[Sample]):
    task = "cvs_assessment"
    metric_keys: tuple[str, ...] = ("cvs_acc",)

    def parse(self, text: str, item: Sample, profile: Profile) -> dict[str, int]:
        return parse(text, tolerant(profile))

    def score_sample(self, parsed: dict[str, int], item: Sample, profile: Profile) -> SampleResult:
        values = score(truth(item.structure(), item.answer), parsed, corrected(profile))
        return SampleResult(item.index, item.dataset, bool(parsed), values)

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        return balanced_task_result(self.task, "cvs_acc", "comp:", "rating", results)

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        return balanced_linearised(self.task, "cvs_acc", "comp:", results)


SCORER = CVSScorer()
