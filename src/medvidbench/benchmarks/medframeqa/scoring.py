"""MedFrameQA's one task through the scorer contract: accuracy over every test question.

Each answer is read by the profile's ``extraction`` variant (:mod:`.parser`): ``official``, the
official parser rule for rule, or ``tolerant``. A question is right when the letter read is its
key, exactly (an unread answer, ``""``, is wrong). Accuracy is the per-sample mean over every
question of the test set (:meth:`TaskScorer.linearise`'s default), overall and per organ system:
where the official script divides by the records its results file happens to hold, every
question counts here, and a question without a prediction makes the file incomplete (the kernel
refuses it) rather than leaving the denominator.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from medvidbench.benchmarks.medframeqa.parser import (
    NONE,
    RULES,
    Reading,
    read_official,
    read_tolerant,
)
from medvidbench.benchmarks.medframeqa.testset import TASK, Question
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
)

EXTRACTION = "extraction"
READERS = {"official": read_official, "tolerant": read_tolerant}


def official_summary(correct: int, total: int) -> dict[str, str | int]:
    """The official script's ``summary.json`` for these counts: accuracy as a percentage
    string with 2 decimals (``"{:.2%}"``), and the counts.

    Examples:
        >>> official_summary(9, 15)
        {'accuracy': '60.00%', 'correct': 9, 'total': 15}
    """
    return {"accuracy": f"{correct / total:.2%}", "correct": correct, "total": total}


class ChoiceScorer(TaskScorer[Question]):
    """Accuracy; a sample is parsed when the profile's extraction reads an option letter."""

    task = TASK
    metric_keys: tuple[str, ...] = ("accuracy",)

    def parse(self, text: str, item: Question, profile: Profile) -> Reading:
        return READERS[profile.variant(EXTRACTION)](text, item.options)

    def score_sample(self, parsed: Reading, item: Question, profile: Profile) -> SampleResult:
        read = parsed.rule != NONE
        return SampleResult(
            item.index,
            item.dataset,
            read,
            {"accuracy": float(parsed.letter == item.answer)},
            "" if read else "no option letter found: scored wrong",
            {"letter": parsed.letter, "rule": parsed.rule},
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_system: dict[str, dict[str, float | int | None]] = {
            system: {**self.compute(rows, profile), "count": len(rows)}
            for system, rows in group_by_dataset(results).items()
        }
        diag = diagnostics(results)
        correct = sum(int((r.values or {}).get("accuracy", 0.0)) for r in results)
        # what the official script's summary.json would say, were every question in its file
        diag["official_summary"] = official_summary(correct, len(results)) if results else None
        for rule in RULES:
            diag[f"read_by_{rule.replace('-', '_')}"] = sum(
                (r.extra or {}).get("rule") == rule for r in results
            )
        return TaskResult(self.task, self.compute(results, profile), per_system, diag, results)


@cache
def scorers() -> Mapping[str, TaskScorer[Question]]:
    """The rule-based scorers by task (one task)."""
    return {TASK: ChoiceScorer()}
