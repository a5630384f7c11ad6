"""MCQA-Demo's one task, through the scorer contract: both extractions, side by side.

Each answer is read twice, by ``strict-match`` and by ``flexible-extract``
(:mod:`.extraction`); each sample's values are 1 or 0 per extraction. The metrics follow the
``update``/``compute`` split: :meth:`ChoiceScorer.linearise` writes the per-sample sums (the
default: each accuracy is a per-sample mean), and :meth:`ChoiceScorer.aggregate` takes its
headline values, overall and per subject, from those same sums (:meth:`compute`), so the board's
number and its interval cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from medvidbench.benchmarks.mcqa_demo.testset import TASK, Question
from medvidbench.core.answers.choices import (
    FLEXIBLE_EXTRACT,
    STRICT_MATCH,
    flexible_extract,
    strict_match,
)
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
)

# The metric of each extraction (the board shows them side by side).
METRIC_OF = {FLEXIBLE_EXTRACT: "acc_flexible", STRICT_MATCH: "acc_strict"}


@dataclass(frozen=True, slots=True)
class Extracted:
    """The option letter each extraction read (None: it read none)."""

    strict: str | None
    flexible: str | None


class ChoiceScorer(TaskScorer[Question]):
    """Accuracy under each named extraction; a sample is parsed when flexible-extract reads it."""

    task = TASK
    metric_keys: tuple[str, ...] = (METRIC_OF[FLEXIBLE_EXTRACT], METRIC_OF[STRICT_MATCH])

    def parse(self, text: str, item: Question, profile: Profile) -> Extracted:
        return Extracted(strict_match(text, item.letters), flexible_extract(text, item.options))

    def score_sample(self, parsed: Extracted, item: Question, profile: Profile) -> SampleResult:
        values = {
            METRIC_OF[STRICT_MATCH]: float(parsed.strict == item.answer),
            METRIC_OF[FLEXIBLE_EXTRACT]: float(parsed.flexible == item.answer),
        }
        return SampleResult(
            item.index,
            item.dataset,
            parsed.flexible is not None,
            values,
            "" if parsed.flexible is not None else "no option letter or option text found",
            {STRICT_MATCH: parsed.strict, FLEXIBLE_EXTRACT: parsed.flexible},
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_subject: dict[str, dict[str, float | int | None]] = {
            subject: {**self.compute(rows, profile), "count": len(rows)}
            for subject, rows in group_by_dataset(results).items()
        }
        diag = diagnostics(results)
        read_strictly = sum((r.extra or {}).get(STRICT_MATCH) is not None for r in results)
        diag["strict_parse_rate"] = read_strictly / len(results) if results else None
        return TaskResult(self.task, self.compute(results, profile), per_subject, diag, results)


@cache
def scorers() -> Mapping[str, TaskScorer[Question]]:
    """The rule-based scorers by task (one task)."""
    return {TASK: ChoiceScorer()}
