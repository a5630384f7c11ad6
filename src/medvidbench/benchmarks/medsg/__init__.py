"""MedSG-Bench: medical image-sequence grounding, 8 tasks, 9,630 items, one box per answer.

:data:`BENCHMARK` is published in the ``medvidbench.benchmarks`` entry-point group, as
MedVidBench is. Its scoring (:mod:`.scoring`) reproduces the official evaluation script bit for
bit under ``official`` and applies the documented corrections under ``corrected``; see
docs/benchmarks/medsg.md. Importing this module is cheap: the loaders and scorers are imported
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from medvidbench.benchmarks.medsg.testset import Item
    from medvidbench.benchmarks.medsg.testset import TestSet as ItemSet
    from medvidbench.core.rewards import RewardSpec
    from medvidbench.core.scoring import SampleResult, TaskScorer
    from medvidbench.core.statistics import Ratio
    from medvidbench.core.submission import MatchedSubmission

# The synthetic generator's answer styles (kept here so that listing benchmarks stays cheap).
ARCHETYPES = (
    "perfect",
    "strong",
    "qwen-json",
    "scaled-1000",
    "scaled-0-1",
    "truncated",
    "prose",
    "partial",
)

# The tasks, their short labels and titles (the test set's `task` strings are the keys).
TASKS = (
    Task(
        "Registered_Diff",
        "RegDiff",
        "Registered image difference grounding",
        family="spatial-grounding",
    ),
    Task(
        "Non_Registered_Diff",
        "NonRegDiff",
        "Non-registered image difference grounding",
        family="spatial-grounding",
    ),
    Task("multi_view", "MultiView", "Multi-view grounding", family="spatial-grounding"),
    Task("object_tracking", "Tracking", "Object tracking", family="spatial-grounding"),
    Task("concept", "Concept", "Visual concept grounding", family="spatial-grounding"),
    Task("patch", "Patch", "Visual patch grounding", family="spatial-grounding"),
    Task("crossmodal", "CrossModal", "Cross-modal grounding", family="spatial-grounding"),
    Task("referring", "Referring", "Referring grounding", 1482, family="spatial-grounding"),
)


def _metrics() -> tuple[Metric, ...]:
    out = [
        Metric(
            "overall.acc_05",
            "Overall Acc@0.5",
            "",
            "This server's aggregate (the official code has none): the mean over the 8 tasks "
            "of Acc@0.5; shown only when every task is scored",
            group="Overall",
            percent=True,
        ),
        Metric(
            "overall.miou",
            "Overall mIoU",
            "",
            "This server's aggregate: the mean over the 8 tasks of mean IoU",
            group="Overall",
            ranked=False,
            percent=True,
        ),
    ]
    for t in TASKS:
        out += [
            Metric(
                f"{t.name}.acc_05",
                f"{t.label} Acc@0.5",
                t.name,
                "Share of items with IoU >= 0.5",
                ranked=False,
                percent=True,
            ),
            Metric(
                f"{t.name}.miou",
                f"{t.label} mIoU",
                t.name,
                "Mean IoU, unparsed answers 0",
                ranked=False,
                percent=True,
            ),
            Metric(
                f"{t.name}.acc_03",
                f"{t.label} Acc@0.3",
                t.name,
                "Share of items with IoU >= 0.3",
                ranked=False,
                board=False,
                percent=True,
            ),
            Metric(
                f"{t.name}.acc_07",
                f"{t.label} Acc@0.7",
                t.name,
                "Share of items with IoU >= 0.7",
                ranked=False,
                board=False,
                percent=True,
            ),
        ]
    return tuple(out)


# MedSG-Bench's one named rule: the official script's reading and scoring, or the corrections.
RULES = Rule(
    "rules",
    ("official", "corrected"),
    "official: the official evaluation script's parsers and arithmetic bit for bit; corrected: "
    "signed whole numbers, full-width brackets, unreadable answers reported, declared "
    "coordinates rescaled.",
)

OFFICIAL = Profile(
    "official",
    variants=(("rules", "official"),),
    description="medsg-official-v1: the official evaluation script's rules bit for bit, quirks "
    "included (strong parser by default; the old parser with the option parser=old).",
)
CORRECTED = Profile(
    "corrected",
    variants=(("rules", "corrected"),),
    description="medsg-corrected-v1: signed, whole numbers only; full-width brackets; an "
    "unreadable answer is reported unparsed; coordinates rescaled only when the submission "
    "declares them (0-1000 or 0-1). Never mixed with official numbers.",
)

ABOUT = """MedSG-Bench (NeurIPS 2025 Datasets and Benchmarks) tests how well multimodal models \
ground a finding in a sequence of medical images: 8 tasks, 9,630 items from 76 public \
datasets, each answered with one box [x1, y1, x2, y2] in pixels of the target image.

Open labels: MedSG-Bench's test labels are public, so every entry here is self-evaluated \
inference: the submitter ran the model and could have seen the answers. This server scores \
every entry with the same rules from the raw model answers (never the submitter's own IoUs), \
and shows per-item results.

Per task: mean IoU and Acc@0.3/0.5/0.7 (the share of items with IoU at least the threshold), \
unparseable answers counted as IoU 0. The official code has no overall number; the overall \
columns here are this server's: the mean over the 8 tasks of Acc@0.5 (ranked) and of mean IoU, \
shown only when all 8 tasks are scored."""

IDENTITY = """An item is (task, index): its position among that task's records in the \
official test file (the items have no ids). Results files of the official script are matched \
by position within each task and checked against each item's question."""


_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3}
# The image a task's box lives in (medsg.md §1); None where the specification does not know it.
_TARGET = {
    "Registered_Diff": 0,  # registered: either image
    "Non_Registered_Diff": 1,
    "concept": 1,
    "patch": 0,
}


def target_image(item: Any) -> int | None:
    """The index of the item's target image in ``images``, or None when unknown."""
    if item.task in _TARGET:
        return _TARGET[item.task]
    if item.task in ("multi_view", "crossmodal"):
        words = [w.strip(".,;:") for w in item.question.lower().split()]
        found = [_ORDINALS[w] for w in words if w in _ORDINALS and _ORDINALS[w] > 0]
        return found[-1] if found else None
    return None


def item_drawing(item: Any, result: SampleResult | None) -> dict[str, Any] | None:
    """The item browser's drawing: the ground-truth and predicted boxes on the target image
    (``image``: its path in the test set, None when unknown), sized 336x336 or multi_view's."""
    width, height = item.size or (336, 336)
    box = ((result.extra if result is not None else None) or {}).get("box")
    target = target_image(item)
    image = item.images[target] if target is not None and target < len(item.images) else None
    return {
        "width": width,
        "height": height,
        "truth": list(item.answer),
        "predicted": box,
        "image": image,
    }


def first_image(item: Any) -> str:
    """The bootstrap's cluster: the item's first image path."""
    return str(item.images[0]) if item.images else str(item.sample_id)


# The loaders, scorers and generator, imported on first use (importing this module stays cheap);
# written out, not looked up by name, so that mypy checks each against the kernel's types.


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> ItemSet:
    from medvidbench.benchmarks.medsg.testset import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _match(
    source: Source, gt: ItemSet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.medsg.submission import validate_submission

    return validate_submission(one_source(source), gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Item]]:
    from medvidbench.benchmarks.medsg.tasks import scorers

    return scorers()


def _overall(metrics: dict[str, float | None]) -> dict[str, float | None]:
    from medvidbench.benchmarks.medsg.tasks import overall

    return overall(metrics)


def _overall_formulas(formulas: dict[str, list[Ratio]]) -> dict[str, list[Ratio]]:
    from medvidbench.benchmarks.medsg.tasks import overall_formulas

    return overall_formulas(formulas)


def _check_options(options: Mapping[str, Any], profile: Profile) -> str | None:
    from medvidbench.benchmarks.medsg.tasks import check_options

    return check_options(options, profile)


def _kept_as() -> type[ItemSet]:
    from medvidbench.benchmarks.medsg.testset import TestSet

    return TestSet


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.medsg.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


def _rewards() -> RewardSpec[Item]:
    from medvidbench.benchmarks.medsg.rewards import spec

    return spec()


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[ItemSet] = TestSetFunctions(load=_load, match=_match, kept_as=_kept_as)

BENCHMARK: Benchmark[Item] = Benchmark(
    slug="medsg",
    title="MedSG-Bench",
    version="1.0",
    scorer_version="0.1.0",
    tasks=TASKS,
    metrics=_metrics(),
    profiles=(OFFICIAL, CORRECTED),
    rules=(RULES,),
    testset=TESTSET,
    scorers=_scorers,
    derived_metrics=_overall,
    check_options=_check_options,
    option_names=("parser", "coordinates"),
    labels="public",
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    rewards=_rewards,
    uncertainty=Uncertainty(
        cluster_of=first_image,
        cluster_rule="items sharing their first image together (the items carry no case id; "
        "in the published set every first image is distinct, so each item is its own cluster)",
        derived_formulas=_overall_formulas,
    ),
    presentation=Presentation(
        about=ABOUT,
        identity=IDENTITY,
        submission_format='predictions by key, [{"task", "index", "prediction"}] (the model\'s '
        "raw text, or a box of 4 numbers in pixels), or the official evaluation script's own "
        "results file.",
        submission_example="""[
  {"task": "referring", "index": 0, "prediction": "[123, 45, 210, 160]"},
  {"task": "multi_view", "index": 0, "prediction": "<|box_start|>(30,41),(88,97)<|box_end|>"}
]""",
        links={
            "Paper (arXiv:2505.11852)": "https://arxiv.org/abs/2505.11852",
            "Dataset": "https://huggingface.co/MedSG-Bench",
        },
        licence="the 76 source datasets' licences (permissive, e.g. CC BY 4.0)",
        item_drawing=item_drawing,
    ),
)
