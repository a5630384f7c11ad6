"""MedSG-Bench's eight tasks through the scorer contract: one grounding scorer per task.

Options (declared in the submission file, or ``--option`` on the command line):
``parser`` (``strong``, the default, or ``old``) under the official profile, and ``coordinates``
(``pixel``, the default, ``0-1000`` or ``0-1``), which only the corrected profile honours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from medvidbench.benchmarks.medsg.scoring import (
    THRESHOLDS,
    ItemScore,
    TaskTotals,
    score_corrected,
    score_official,
)
from medvidbench.benchmarks.medsg.submission import COORDINATES, PARSERS
from medvidbench.benchmarks.medsg.testset import TASKS, Item
from medvidbench.core.benchmark import Profile
from medvidbench.core.errors import UsageError
from medvidbench.core.scoring import Context, SampleResult, TaskResult, TaskScorer, diagnostics
from medvidbench.core.statistics import Ratio

KEYS = ("miou", "acc_03", "acc_05", "acc_07")


def corrected(profile: Profile) -> bool:
    """Whether the profile picks the corrected variant of MedSG-Bench's rules."""
    return profile.variant("rules") == "corrected"


def check_options(options: Mapping[str, Any], profile: Profile) -> str | None:
    """Why these scoring options cannot be scored under ``profile`` (None: they can)."""
    for key, allowed in (("parser", PARSERS), ("coordinates", COORDINATES)):
        value = options.get(key, allowed[0])
        if value not in allowed:
            return f"option {key} must be one of {', '.join(allowed)}; got {value!r}"
    if not corrected(profile) and options.get("coordinates", "pixel") != "pixel":
        return (
            "the official rules never rescale an answer: coordinates other than pixel "
            "need the corrected profile"
        )
    if corrected(profile) and options.get("parser", "strong") != "strong":
        return "the corrected profile has one parser: leave parser unset"
    return None


class GroundingScorer(TaskScorer[Item]):
    """One task's items: parse each answer, IoU against the ground-truth box, the counters."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.metric_keys = tuple(f"{task}.{k}" for k in KEYS)

    def parse_all(
        self, items: Sequence[Item], texts: Sequence[Any], profile: Profile, ctx: Context
    ) -> list[tuple[ItemScore, float | None]]:
        """Each item's score, with the IoU a results file claims for it (None: no claim)."""
        problem = check_options(ctx.options, profile)
        if problem is not None:
            raise UsageError(problem)
        parser = str(ctx.options.get("parser", "strong"))
        coordinates = str(ctx.options.get("coordinates", "pixel"))
        claims: dict[int, float] = ctx.options.get("file_ious", {})  # compared, never used
        fixed = corrected(profile)
        needs_size = (not fixed and parser == "old") or (fixed and coordinates != "pixel")
        out = []
        for item, answer in zip(items, texts, strict=True):
            if needs_size and item.task == "multi_view" and item.size is None:
                raise UsageError(
                    f"{item.sample_id} has no size in the ground truth; these rules need it"
                )
            size = item.size if item.task == "multi_view" else None
            if fixed:
                scored = score_corrected(answer, item.answer, coordinates, size)  # type: ignore[arg-type]
            else:
                scored = score_official(answer, item.answer, parser, size)  # type: ignore[arg-type]
            out.append((scored, claims.get(item.index)))
        return out

    def score_sample(
        self, parsed: tuple[ItemScore, float | None], item: Item, profile: Profile
    ) -> SampleResult:
        scored, claimed = parsed
        values = {f"{self.task}.miou": scored.iou}
        for t in THRESHOLDS:
            values[f"{self.task}.acc_{round(t * 10):02d}"] = float(scored.iou >= t)
        flags = [
            name
            for name, on in (
                ("unparsed", scored.unparsed),
                ("multi_box", scored.multi_box),
                ("zero_union", scored.zero_union),
                ("malformed", scored.malformed),
                # the results file's own IoU differs from ours: usually a wrong parser declared
                ("file_disagrees", claimed is not None and abs(claimed - scored.iou) > 1e-9),
            )
            if on
        ]
        return SampleResult(
            item.index,
            item.dataset,
            not scored.unparsed,
            values,
            ", ".join(flags),
            {"box": scored.box, "flags": flags},
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        totals = TaskTotals()
        for r in results:  # in test order: the sum is sequential, as the official counters
            flags = (r.extra or {}).get("flags", [])
            iou = r.values[f"{self.task}.miou"] if r.values else 0.0
            totals.add(
                ItemScore(
                    None,
                    iou,
                    "unparsed" in flags,
                    "multi_box" in flags,
                    "zero_union" in flags,
                    "malformed" in flags,
                )
            )
        diag = diagnostics(results)
        diag.update(
            n_file_disagree=sum(
                "file_disagrees" in (r.extra or {}).get("flags", []) for r in results
            ),
            n=totals.n,
            iou_sum=totals.iou_sum,
            counters=totals.counters(self.task)[self.task],
            n_unparsed=totals.n_unparsed,
            n_multi_box=totals.n_multi_box,
            n_zero_union=totals.n_zero_union,
            n_malformed=totals.n_malformed,
        )
        return TaskResult(self.task, totals.metrics(self.task), {}, diag, results)


@cache
def scorers() -> dict[str, GroundingScorer]:
    return {task: GroundingScorer(task) for task in TASKS}


def overall(metrics: dict[str, float | None]) -> dict[str, float | None]:
    """This server's overall columns (the official code has none): the macro means over the
    eight tasks of Acc@0.5 and of mean IoU, only when every task was scored."""
    out: dict[str, float | None] = {}
    for key in ("acc_05", "miou"):
        values = [metrics.get(f"{task}.{key}") for task in TASKS]
        out[f"overall.{key}"] = (
            sum(v for v in values if v is not None) / len(TASKS)
            if all(v is not None for v in values)
            else None
        )
    return out


def overall_formulas(formulas: dict[str, list[Ratio]]) -> dict[str, list[Ratio]]:
    """The overall columns as ratios of sums: each task's terms at 1/8 of their weight, only
    when every task was scored (as :func:`overall`)."""
    out: dict[str, list[Ratio]] = {}
    for key in ("acc_05", "miou"):
        per_task = [formulas.get(f"{task}.{key}") for task in TASKS]
        if all(per_task):
            out[f"overall.{key}"] = [
                Ratio(t.num, t.den, t.weight / len(TASKS))
                for terms in per_task
                for t in terms or []
            ]
    return out
