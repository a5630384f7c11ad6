"""MedFrameQA: multi-image medical video-frame questions, scored as its official script scores.

MedFrameQA (arXiv:2505.16964) asks 2,851 multiple-choice questions, each about 2-5 frames of one
medical video, over 9 organ systems, 43 organs and several imaging modalities. One task, one
metric (accuracy). The answers are chains of thought, read by the official parser rule for rule
(:mod:`.parser`, ``official``) or by its ``tolerant`` variant; see docs/benchmarks/medframeqa.md.

:data:`BENCHMARK` is published in the ``medvidbench.benchmarks`` entry-point group, as the other
built-ins are, and uses nothing but the plug-in contract (``medvidbench.core``). Importing this
module is cheap: the loaders, scorers and generator are imported on first use.
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
    Rule,
    Source,
    Task,
    TestSetFunctions,
    Uncertainty,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES, one_source
from medvidbench.core.submission import MAX_ANSWER_CHARS

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.benchmarks.medframeqa.testset import Question, QuestionSet
    from medvidbench.core.rewards import RewardSpec
    from medvidbench.core.scoring import TaskScorer
    from medvidbench.core.submission import MatchedSubmission

# Kept in step with .synth.ARCHETYPES (a test checks), so that listing benchmarks stays cheap.
ARCHETYPES = ("perfect", "strong", "weak", "terse", "garbage")

# Answers are chains of thought (the official run allows 10,000 tokens) that put the letter on
# their LAST line: cutting one to its first characters would drop the very part that is read.
# So no answer the kernel accepts is cut (over MAX_ANSWER_CHARS, a file is refused, located).
ANSWER_CHARS = MAX_ANSWER_CHARS

TASKS = (
    Task(
        "frameqa",
        "FrameQA",
        "Multi-image medical multiple-choice questions",
        test_count=2851,
        answer_chars=ANSWER_CHARS,
        family="multiple-choice",
    ),
)

METRICS = (
    Metric(
        "accuracy",
        "Accuracy",
        "frameqa",
        "Share of the test questions whose answer reads as the key letter (an answer with no "
        "readable letter is wrong)",
        percent=True,
    ),
)

EXTRACTION = Rule(
    "extraction",
    ("official", "tolerant"),
    "official: the official parser (src/eval_process.py, commit e83fbe3) rule for rule, quirks "
    "included; tolerant: the same reading, and where it reads no letter, flexible-extract's "
    "(a bare letter, (b), 'the answer is C').",
)

OFFICIAL = Profile(
    "official",
    "medframeqa-official-v1: the official parser rule for rule; every test question counts "
    "(the official script leaves a question whose answer was empty out of its denominator).",
    (("extraction", "official"),),
)
TOLERANT = Profile(
    "tolerant",
    "medframeqa-tolerant-v1: the official reading, and flexible-extract's where it reads no "
    "letter (a bare 'B' counts). Never mixed with official numbers.",
    (("extraction", "tolerant"),),
)

ABOUT = """MedFrameQA asks 2,851 multiple-choice questions about medical videos: each question \
shows 2 to 5 frames of one video and asks for the one option (4 to 6 or more, lettered A, B, ...) \
that explains what the frames show together. The questions span 9 organ systems, 43 organs and \
several imaging modalities (CT, MRI, ultrasound, X-ray and others).

Open labels: the test set's answers are public, so every entry here is self-evaluated \
inference. This server scores every entry with the same rules, from the raw model answers: the \
letter a results file says it parsed, and the key it says it used, are never trusted.

Answers are read as the official evaluation script reads them (official profile), quirks \
included: a boxed letter first, then the text after "Answer:" and the like, where any capital \
option letter counts, even the C of "CT"; a bare "B" is not read, and an unread answer is wrong. \
The tolerant profile also reads a bare letter where the official parser reads nothing.

One difference in arithmetic: the official script divides by the answers its results file \
holds, and its inference leaves out a question whose model output was empty. Here every test \
question counts, and a file that lacks one is refused as incomplete.

The official code computes the overall accuracy only. The accuracy per organ system, organ, \
modality and number of frames shown with each result is this server's addition, from the same \
per-question scores."""

IDENTITY = """A prediction names its question by the test set's question_id (in the official \
results file, its question_id field; in the simple format, question_id or id). Order does not \
matter; a question answered twice is an error."""

CITATION = """@misc{yu2025medframeqa,
  title         = {MedFrameQA: A Multi-Image Medical VQA Benchmark for Clinical Reasoning},
  author        = {Yu, Suhao and Wang, Haojin and Wu, Juncheng and Xie, Cihang and Zhou, Yuyin},
  year          = {2025},
  eprint        = {2505.16964},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CV}
}"""

SUBMISSION_EXAMPLE = """[
  {"cot_reasoning": "The first frame ...\\nAnswer: B", "answer": "B",
   "question_id": "q0001", "correct_answer": "B"},
  {"question_id": "q0002", "prediction": "The final answer is $\\\\boxed{D}$"}
]"""


def organ_system(item: Question) -> str:
    """The item's organ system (its ``dataset``)."""
    return item.dataset


def organ(item: Question) -> str:
    return item.organ


def modality(item: Question) -> str:
    return item.modality


def frame_count(item: Question) -> str:
    """How many frames the question shows, as a group name (``"3"``)."""
    return str(len(item.frames))


def video(item: Question) -> str:
    """The bootstrap's cluster: the question's source video (its id when it names none)."""
    return item.video_id or f"question {item.sample_id}"


# The loaders, scorers and generator, imported on first use; written out (not looked up by
# name) so that mypy checks each against the kernel's types.
def _kept_as() -> type[QuestionSet]:
    from medvidbench.benchmarks.medframeqa.testset import QuestionSet

    return QuestionSet


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    from medvidbench.benchmarks.medframeqa.testset import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _match(
    source: Source, gt: QuestionSet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.medframeqa.submission import validate_submission

    return validate_submission(one_source(source), gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Question]]:
    from medvidbench.benchmarks.medframeqa.scoring import scorers

    return scorers()


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.medframeqa.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


def _rewards() -> RewardSpec[Question]:
    from medvidbench.benchmarks.medframeqa.rewards import spec

    return spec()


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[QuestionSet] = TestSetFunctions(
    load=_load, match=_match, kept_as=_kept_as
)

BENCHMARK: Benchmark[Question] = Benchmark(
    slug="medframeqa",
    title="MedFrameQA",
    version="1.0",
    scorer_version="0.1.0",
    tasks=TASKS,
    metrics=METRICS,
    profiles=(OFFICIAL, TOLERANT),
    rules=(EXTRACTION,),
    testset=TESTSET,
    scorers=_scorers,
    labels="public",
    breakdowns={
        "system": organ_system,
        "organ": organ,
        "modality": modality,
        "frames": frame_count,
    },
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    rewards=_rewards,
    uncertainty=Uncertainty(
        cluster_of=video,
        cluster_rule="questions about one source video together (video_id)",
    ),
    presentation=Presentation(
        about=ABOUT,
        identity=IDENTITY,
        submission_format="the official inference's result.json as it writes it (a JSON list of "
        '{"cot_reasoning", "answer", "question_id", "correct_answer"}, in any order; the raw '
        'cot_reasoning is scored), or a JSON list of {"question_id" (or "id"), "prediction"}.',
        submission_example=SUBMISSION_EXAMPLE,
        citation=CITATION,
        links={
            "Paper (arXiv:2505.16964)": "https://arxiv.org/abs/2505.16964",
            "Dataset (Hugging Face)": "https://huggingface.co/datasets/SuhaoYu1020/MedFrameQA",
            "Official code": "https://github.com/haojinw0027/MedFrameQA",
            "Project page": "https://ucsc-vlaa.github.io/MedFrameQA/",
        },
        licence="CC-BY-4.0 (the data, per its Hugging Face card); the official code "
        "repository states no licence",
    ),
)
