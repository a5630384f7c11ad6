"""GMAI-MMBench's one task through the scorer contract: VLMEvalKit's exact-matching path.

Each answer is read as VLMEvalKit reads it (:mod:`medvidbench.core.answers.vlmevalkit`): first
what pandas makes of the cell (``NA``, ``None``, an empty cell: the text ``nan``), then the
rules of the profile's rule set, with no judge. A question is a hit when the letter read is its
``answer`` (VLMEvalKit's "Z", no option read, never is). Accuracy is the plain mean of the
hits (VLMEvalKit's ``Overall``); per clinical VQA task, and per group of every breakdown, it is
the mean over that group's questions, from the same per-sample values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import cache

from medvidbench.benchmarks.gmai_mmbench.testset import TASK, Question
from medvidbench.core.answers.vlmevalkit import RULE_SETS, Reading, as_read_back, read_answer
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
)

ACCURACY = "acc"
EXTRACTION = "extraction"  # the benchmark's one rule: which of VLMEvalKit's rule sets reads


class ChoiceScorer(TaskScorer[Question]):
    """Accuracy under VLMEvalKit's rules; an answer is parsed when they read an option."""

    task = TASK
    metric_keys: tuple[str, ...] = (ACCURACY,)

    def parse(self, text: str, item: Question, profile: Profile) -> Reading:
        rules = RULE_SETS[profile.variant(EXTRACTION)]
        return read_answer(as_read_back(text), item.options, rules)

    def score_sample(self, parsed: Reading, item: Question, profile: Profile) -> SampleResult:
        read = parsed.letter in item.options
        return SampleResult(
            item.index,
            item.dataset,
            read,
            {ACCURACY: float(parsed.letter == item.answer)},
            "" if read else f"no option read ({parsed.rule}): VLMEvalKit's 'Z', wrong",
            {"letter": parsed.letter, "rule": parsed.rule},
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_task: dict[str, dict[str, float | int | None]] = {
            task: {**self.compute(rows, profile), "count": len(rows)}
            for task, rows in group_by_dataset(results).items()
        }
        diag = diagnostics(results)
        # which rule read each answer: how much of the score the quirkier rules decide
        rules = Counter(str((r.extra or {}).get("rule")) for r in results)
        diag["read_by_rule"] = dict(sorted(rules.items()))
        return TaskResult(self.task, self.compute(results, profile), per_task, diag, results)


@cache
def scorers() -> Mapping[str, TaskScorer[Question]]:
    """The rule-based scorers by task (one task)."""
    return {TASK: ChoiceScorer()}
