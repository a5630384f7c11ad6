"""MedVidQA: where in a medical instructional video is the answer to a question shown.

Medical Visual Answer Localization (MVAL) from the MedVidQA dataset (Gupta, Attal and
Demner-Fushman, Scientific Data 2023) and the MedVidQA 2022 shared task: one question about one
YouTube video, answered by one span (start and end, in seconds). Scored as the official
evaluation code scores it (MedVidQACL, :mod:`.scoring`); the file-level rules the official
code leaves open are ours (:mod:`.submission`); see docs/benchmarks/medvidqa.md.

:data:`BENCHMARK` is published in the ``medvidbench.benchmarks`` entry-point group and uses
nothing but the plug-in contract (``medvidbench.core``). Importing this module is cheap: the
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
    Uncertainty,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES, one_source

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.benchmarks.medvidqa.testset import Question, QuestionSet
    from medvidbench.core.scoring import TaskScorer
    from medvidbench.core.submission import MatchedSubmission

# Kept in step with .synth.ARCHETYPES (a test checks), so that listing benchmarks stays cheap.
ARCHETYPES = ("perfect", "strong", "verbose", "weak", "garbage")
TASK = "mval"  # .testset.TASK, kept here for the same reason

TASKS = (
    Task(
        TASK,
        "MVAL",
        "Medical visual answer localisation",
        test_count=155,
        answer_chars=1_000,
        family="temporal-localisation",
    ),
)


def _threshold(key: str, t: str) -> Metric:
    return Metric(
        key,
        f"IoU={t}",
        TASK,
        f"Rank@1, IoU={t}: the percentage of questions whose predicted span has IoU >= {t} "
        "with the answer span",
        scale="percent",
    )


METRICS = (
    _threshold("r1_iou_03", "0.3"),
    _threshold("r1_iou_05", "0.5"),
    _threshold("r1_iou_07", "0.7"),
    Metric(
        "miou",
        "mIoU",
        TASK,
        "Mean IoU of the predicted span with the answer span over every question, in percent "
        "(an unread answer counts 0)",
        scale="percent",
    ),
)

PROFILE = Profile(
    "official",
    description="medvidqa-official-v1: the official evaluation's IoU (intersection over the "
    "covering span, clamped at 0, spans never reordered or clipped) and percentages over every "
    "test question, exact threshold comparisons.",
)

ABOUT = """MedVidQA asks where, in a medical instructional video, the answer to a health \
question is shown: given a question and one YouTube video, predict the answer's start and end \
in seconds (Medical Visual Answer Localization, MVAL). The published test split has 155 \
questions over 50 videos.

Metrics, as the official evaluation code computes them: for each question the IoU of the \
predicted span with the answer span (intersection over the span covering both, at least 0); \
IoU=0.3, IoU=0.5 and IoU=0.7, the percentage of questions whose IoU reaches the threshold; and \
mIoU, the mean IoU in percent. Every test question counts; an answer that states no span scores \
0. The board ranks by the average rank over the four.

Open labels: the test answers are published with the dataset, so every entry is \
self-evaluated inference. This server scores every entry with the same rules from the \
submitted spans or the model's raw text, and shows per-item results."""

CITATION = """@article{gupta2023medvidqa,
  title   = {A dataset for medical instructional video classification and question answering},
  author  = {Gupta, Deepak and Attal, Kush and Demner-Fushman, Dina},
  journal = {Scientific Data},
  volume  = {10},
  pages   = {158},
  year    = {2023},
  note    = {arXiv:2201.12888}
}

@inproceedings{gupta2022overview,
  title     = {Overview of the {MedVidQA} 2022 Shared Task on Medical Video Question-Answering},
  author    = {Gupta, Deepak and Demner-Fushman, Dina},
  booktitle = {Proceedings of the 21st Workshop on Biomedical Language Processing},
  publisher = {Association for Computational Linguistics},
  year      = {2022}
}"""


def video_of(item: Question) -> str:
    """The bootstrap's cluster: the question's video (several questions share one)."""
    return item.video_id


# The loaders and scorers, imported on first use; written out (not ``lazy``) so that mypy checks
# each against the kernel's types.
def _kept_as() -> type[QuestionSet]:
    from medvidbench.benchmarks.medvidqa.testset import QuestionSet

    return QuestionSet


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    from medvidbench.benchmarks.medvidqa.testset import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _match(
    source: Source, gt: QuestionSet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.medvidqa.submission import validate_submission

    return validate_submission(one_source(source), gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Question]]:
    from medvidbench.benchmarks.medvidqa.scoring import scorers

    return scorers()


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.medvidqa.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[QuestionSet] = TestSetFunctions(
    load=_load, match=_match, kept_as=_kept_as
)

BENCHMARK: Benchmark[Question] = Benchmark(
    slug="medvidqa",
    title="MedVidQA",
    version="1.0",
    scorer_version="0.1.0",
    tasks=TASKS,
    metrics=METRICS,
    profiles=(PROFILE,),
    testset=TESTSET,
    scorers=_scorers,
    labels="public",
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    uncertainty=Uncertainty(
        cluster_of=video_of,
        cluster_rule="questions about one video together (the official metrics are plain "
        "means over questions; the clustering is this server's, for its intervals)",
    ),
    presentation=Presentation(
        about=ABOUT,
        identity="A prediction names its question by the test file's sample_id (an integer "
        'id may be sent as a number or as its digits: 17 or "17").',
        submission_format='a JSON list of {"sample_id", "answer_start_second", '
        '"answer_end_second"} records (the MedVidQA challenge format, seconds as numbers), or '
        'of {"sample_id", "prediction"} records holding the model\'s text answer; every test '
        "question once.",
        submission_example="""[
  {"sample_id": 1, "answer_start_second": 65, "answer_end_second": 130},
  {"sample_id": 2, "prediction": "The answer is shown from 00:12 to 00:47."}
]""",
        citation=CITATION,
        links={
            "Paper (Scientific Data 2023)": "https://pmc.ncbi.nlm.nih.gov/articles/PMC10031721/",
            "Preprint (arXiv:2201.12888)": "https://arxiv.org/abs/2201.12888",
            "Dataset (OSF)": "https://doi.org/10.17605/OSF.IO/PC594",
            "Official code (MedVidQACL)": "https://github.com/deepaknlp/MedVidQACL",
            "Challenge": "https://medvidqa.github.io/",
        },
        licence="Unverified: the OSF release's licence field was not read. The videos are "
        "YouTube videos, not redistributed (download them by id); the official code's MedVidQA "
        "folder is MIT-licensed.",
    ),
)
