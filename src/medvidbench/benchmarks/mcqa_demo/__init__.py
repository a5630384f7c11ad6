"""MCQA-Demo: synthetic multiple-choice medical questions, scored under two named extractions.

A third benchmark shape beside MedVidBench (video, judged captions) and MedSG-Bench (boxes):
one task, one letter per answer, a test set only (no training split), and the
``strict-match`` / ``flexible-extract`` answer-extraction pair reported side by side. Its data
is synthetic demo data (:mod:`.synth`), not a published benchmark.

:data:`BENCHMARK` is published in the ``medvidbench.benchmarks`` entry-point group, as the other
built-ins are, and uses nothing but the plug-in contract (``medvidbench.core``): the package is
self-contained, and adding it changed no module outside it. Importing this module is cheap: the
loaders, scorers and generator are imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from medvidbench.core.benchmark import (
    Benchmark,
    DemoData,
    Metric,
    Presentation,
    Profile,
    Source,
    Task,
    TestSetFunctions,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES, one_source

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.benchmarks.mcqa_demo.testset import Question, QuestionSet
    from medvidbench.core.scoring import TaskScorer
    from medvidbench.core.submission import MatchedSubmission

# Kept in step with .synth.ARCHETYPES (a test checks), so that listing benchmarks stays cheap.
ARCHETYPES = ("perfect", "strong", "verbose", "guesser", "garbage")

METRICS = (
    Metric(
        "acc_flexible",
        "Acc (flexible-extract)",
        "mcqa",
        "Accuracy when the option letter is found anywhere in the answer (or the answer "
        "quotes exactly one option's text)",
        percent=True,
    ),
    Metric(
        "acc_strict",
        "Acc (strict-match)",
        "mcqa",
        "Accuracy when only an answer that is nothing but an option letter counts",
        ranked=False,
        percent=True,
    ),
)

ABOUT = """MCQA-Demo is a synthetic multiple-choice medical question set: generated demo data \
for trying this server and for testing its plug-in seam, not a published benchmark. Its \
questions are short textbook facts (anatomy, physiology, vascular) with four options each; no \
score on it says anything about a model's medical knowledge.

Every answer is read twice. strict-match counts an answer only when it is nothing but an option \
letter (B, (B), B. or Answer: B); flexible-extract also finds the letter inside a sentence ("the \
answer is (C)") or the one option the answer quotes. Both accuracies are reported side by side: \
a gap between them measures formatting, not knowledge. The average rank uses flexible-extract.

There is no training split: the test set is the whole benchmark."""


# The loaders and scorers, imported on first use; written out (not ``lazy``) so that mypy checks
# each against the kernel's types.
def _kept_as() -> type[QuestionSet]:
    from medvidbench.benchmarks.mcqa_demo.testset import QuestionSet

    return QuestionSet


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    from medvidbench.benchmarks.mcqa_demo.testset import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _match(
    source: Source, gt: QuestionSet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.mcqa_demo.submission import validate_submission

    return validate_submission(one_source(source), gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Question]]:
    from medvidbench.benchmarks.mcqa_demo.scoring import scorers

    return scorers()


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.mcqa_demo.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[QuestionSet] = TestSetFunctions(
    load=_load, match=_match, kept_as=_kept_as
)

BENCHMARK: Benchmark[Question] = Benchmark(
    slug="mcqa-demo",
    title="MCQA-Demo",
    version="0.1",
    scorer_version="0.1.0",
    tasks=(Task("mcqa", "MCQA", "Multiple-choice question answering", family="multiple-choice"),),
    metrics=METRICS,
    profiles=(
        Profile(
            "mcqa-v1",
            description="Both named extractions (strict-match, flexible-extract), reported "
            "side by side; exact letter comparison.",
        ),
    ),
    testset=TESTSET,
    scorers=_scorers,
    labels="public",
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    presentation=Presentation(
        about=ABOUT,
        identity="A prediction names its question by the question's id.",
        submission_format='a JSON list of {"id", "prediction"} records, or one object mapping '
        "each question id to its answer.",
        submission_example="""[
  {"id": "q00000", "prediction": "B"},
  {"id": "q00001", "prediction": "The answer is (C): Femur."}
]""",
        licence="CC0 (synthetic demo data)",
    ),
)
