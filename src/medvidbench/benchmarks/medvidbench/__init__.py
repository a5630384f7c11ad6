"""MedVidBench: 6,245 questions over surgical and nursing videos, 8 tasks, 10 metrics.

:data:`BENCHMARK` is this package's benchmark definition, published through the
``medvidbench.benchmarks`` entry-point group exactly as a third-party benchmark is. Importing
this module is cheap: loaders, scorers and the synthetic generator are imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from medvidbench.benchmarks.medvidbench.importers import IMPORTERS
from medvidbench.benchmarks.medvidbench.metrics import (
    LEADERBOARD_V1,
    METRICS,
    SCORER_VERSION,
    STRICT_V2,
)
from medvidbench.benchmarks.medvidbench.rubric import RUBRIC
from medvidbench.benchmarks.medvidbench.rules import RULES
from medvidbench.benchmarks.medvidbench.tasks.registry import TASKS
from medvidbench.core.benchmark import (
    Benchmark,
    DemoData,
    JudgedScoring,
    Presentation,
    Task,
    TestSetFunctions,
    Uncertainty,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth, Sample
    from medvidbench.core.benchmark import Source
    from medvidbench.core.embeddings import Embedder
    from medvidbench.core.rewards import RewardSpec
    from medvidbench.core.scoring import JudgedScorer, TaskScorer
    from medvidbench.core.submission import MatchedSubmission

ABOUT = """MedVidBench tests video-language models on surgical and nursing videos: 6,245 test \
questions over 8 tasks from 8 source datasets (AVOS, CholecT50, CholecTrack20, Cholec80_CVS, \
CoPESD, EgoSurgery, NurViD, JIGSAWS), about 103,742 frames; 51,505 training samples. It was \
introduced with MedGRPO (Su et al., 2025).

TAG is temporal action localisation; its metric is a thresholded mean IoU, not mAP. Exact \
definitions, with the published leaderboard's quirks and our corrections side by side, are in \
the project documentation (docs/metrics.md).

DVC_llm, VS_llm and RC_llm are scored 1-5 by a language model on five aspects: R2 medical \
terminology, R3 anatomy and instrument detail, R8 specificity, R5 clinical context, R4 action \
and state accuracy. Every judgement is cached and stamped with the judge model, endpoint, prompt \
version and settings; scores are comparable only under the same judge configuration."""

IDENTITY = """A prediction names its test item by (id, qa_type, k): the clip id (video id, \
start and end frame, fps), the question type, and k, its position among the same clip's \
questions of that type. An explicit "index" field wins; a "question" field disambiguates."""

# The model archetypes of the synthetic generator (``medvidbench synth`` writes one file each).
ARCHETYPES = ("perfect", "strong", "weak", "format-noisy", "garbage", "shuffled", "partial")

CITATION = """@article{su2024medgrpo,
  title={MedGRPO: Multi-Task Reinforcement Learning for Heterogeneous Medical Video Understanding},
  author={Su, Yuhao and Choudhuri, Anwesa and Gao, Zhongpai and Planche, Benjamin and Nguyen, \
Van Nguyen and Zheng, Meng and Shen, Yuhan and Innanje, Arun and Chen, Terrence and Elhamifar, \
Ehsan and Wu, Ziyan},
  journal={arXiv preprint arXiv:2512.06581},
  year={2025}
}"""


def reported_results() -> Sequence[Mapping[str, Any]]:
    import json
    from importlib import resources

    text = resources.files(__package__).joinpath("data/published_results.json").read_text()
    entries: list[dict[str, Any]] = json.loads(text)["entries"]
    return entries


def source_video(item: Any) -> str:
    """The bootstrap's cluster: the source recording the test set declares for the clip
    (``metadata.recording``), else the video id, the first part of ``id&&start&&end&&fps``."""
    return item.recording or str(item.sample_id).split("&&", 1)[0]


# The loaders, scorers and generator, imported on first use (importing this module stays cheap);
# written out, not looked up by name, so that mypy checks each against the kernel's types.


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> GroundTruth:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _questions(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> GroundTruth:
    from medvidbench.benchmarks.medvidbench.groundtruth import load_questions

    return load_questions(source, max_bytes)


def _kept_as() -> type[GroundTruth]:
    from medvidbench.benchmarks.medvidbench.groundtruth import GroundTruth

    return GroundTruth


def _match(
    source: Source, gt: GroundTruth, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.medvidbench.matching import validate_submission

    return validate_submission(source, gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Sample]]:
    from medvidbench.benchmarks.medvidbench.tasks import rule_based_scorers

    return rule_based_scorers()


def _judged_scorers() -> Mapping[str, JudgedScorer[Sample]]:
    from medvidbench.benchmarks.medvidbench.tasks.captions import judged_scorers

    return judged_scorers()


def _embedder() -> Embedder:
    from medvidbench.benchmarks.medvidbench.tasks.nap import prepared_embedder

    return prepared_embedder()


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


def _rewards() -> RewardSpec[Sample]:
    from medvidbench.benchmarks.medvidbench.rewards import spec

    return spec()


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[GroundTruth] = TestSetFunctions(
    load=_load, match=_match, questions=_questions, kept_as=_kept_as
)

BENCHMARK: Benchmark[Sample] = Benchmark(
    slug="medvidbench",
    title="MedVidBench",
    version="1.0",
    scorer_version=SCORER_VERSION,
    tasks=tuple(
        Task(t.name, t.label, t.title, t.test_count, t.answer_chars, t.family)
        for t in TASKS.values()
    ),
    metrics=METRICS,
    profiles=(LEADERBOARD_V1, STRICT_V2),
    rules=RULES,
    testset=TESTSET,
    scorers=_scorers,
    embedder=_embedder,
    labels="hidden",
    judging=JudgedScoring(scorers=_judged_scorers, rubric=RUBRIC),
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    rewards=_rewards,
    uncertainty=Uncertainty(
        cluster_of=source_video,
        cluster_rule="every question about one source video together (its recording where "
        "the test set declares one in metadata.recording, else the video id of the sample id)",
    ),
    presentation=Presentation(
        about=ABOUT,
        identity=IDENTITY,
        submission_format='a JSON list of {"id", "qa_type", "prediction"} records (or the '
        "inference script's results.json).",
        submission_example="""[
  {"id": "kcOqlifSukA&&22425&&25124&&1.0", "qa_type": "tal",
   "prediction": "0.0-12.5 seconds, 40.0-58.0 seconds"},
  {"id": "kcOqlifSukA&&22425&&25124&&1.0", "qa_type": "next_action",
   "prediction": "Dissect the cystic duct"}
]""",
        citation=CITATION,
        links={
            "Paper (arXiv:2512.06581)": "https://arxiv.org/abs/2512.06581",
            "Project page": "https://uii-ai.github.io/MedGRPO/",
            "Dataset": "https://huggingface.co/datasets/UII-AI/MedVidBench",
            "Code": "https://github.com/UII-AI/MedGRPO-Code",
        },
        licence="CC BY-NC-SA 4.0",
        reported_results=reported_results,
    ),
    importers=IMPORTERS,
)
