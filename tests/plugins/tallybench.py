"""TallyBench: a benchmark that exists only in the test suite, to prove the plug-in seam.

It follows docs/adding-a-benchmark.md and uses only the public contract (``medvidbench.core``):
two tasks, ``count`` (how many objects: scored by relative error, *lower* is better) and
``present`` (is the object there: accuracy, higher is better), and its own identity rule: a
prediction names its item by ``case`` and ``task`` (one question per case and task).

Test set: ``[{"case": "c001", "task": "count", "answer": "3", "site": "lab-a"}, ...]``.
Predictions: ``[{"case": "c001", "task": "count", "prediction": "3 objects"}, ...]``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medvidbench.core.benchmark import (
    Benchmark,
    DemoData,
    Metric,
    Presentation,
    Profile,
    Task,
    TestSetFunctions,
)
from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes
from medvidbench.core.scoring import (
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
    micro_mean,
)
from medvidbench.core.submission import MatchedSubmission, TaskCoverage, ValidationReport

TASKS = ("count", "present")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Item:
    index: int
    sample_id: str
    task: str
    dataset: str
    answer: str


@dataclass(slots=True)
class TallySet:
    samples: list[Item]
    sha256: str
    warnings: ProblemList = field(default_factory=ProblemList)

    def __len__(self) -> int:
        return len(self.samples)


def _records(source: str | Path | bytes, max_bytes: int, what: str) -> tuple[Any, str]:
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    return json.loads(data), hashlib.sha256(data).hexdigest()


def load_ground_truth(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> TallySet:
    problems = ProblemList()
    try:
        raw, digest = _records(source, max_bytes, "ground truth")
    except ValueError as exc:
        problems.add(Problem("not-json", f"the ground truth is not JSON: {exc}"))
        raise InvalidGroundTruthError(problems) from None
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for i, rec in enumerate(raw if isinstance(raw, list) else []):
        where = f"record {i}"
        if not isinstance(rec, dict) or not all(
            isinstance(rec.get(k), str) for k in ("case", "task", "answer")
        ):
            problems.add(Problem("missing-field", f"{where}: needs string case, task, answer", i))
            continue
        if rec["task"] not in TASKS:
            problems.add(Problem("unknown-task", f"{where}: unknown task {rec['task']!r}", i))
            continue
        if (rec["case"], rec["task"]) in seen:
            problems.add(Problem("duplicate", f"{where}: case {rec['case']!r} repeated", i))
            continue
        seen.add((rec["case"], rec["task"]))
        items.append(
            Item(len(items), rec["case"], rec["task"], rec.get("site", "all"), rec["answer"])
        )
    if not isinstance(raw, list):
        problems.add(Problem("wrong-type", "the ground truth must be a list of records"))
    if problems:
        raise InvalidGroundTruthError(problems)
    return TallySet(items, digest)


def validate_submission(
    source: str | Path | bytes, gt: TallySet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    data = source if isinstance(source, bytes) else read_bytes(source, max_bytes)
    report = ValidationReport(
        name or str(source)[:80] if not isinstance(source, bytes) else name,
        hashlib.sha256(data).hexdigest(),
        len(data),
    )
    predictions: list[str | None] = [None] * len(gt)
    where = {(s.sample_id, s.task): s.index for s in gt.samples}
    try:
        raw = json.loads(data)
    except ValueError as exc:
        report.errors.add(Problem("not-json", f"the submission is not JSON: {exc}"))
        raw = []
    for i, rec in enumerate(raw if isinstance(raw, list) else []):
        report.records += 1
        key = (rec.get("case"), rec.get("task")) if isinstance(rec, dict) else None
        if key not in where or not isinstance(rec.get("prediction"), str):
            report.errors.add(Problem("no-such-item", f"record {i}: no test item {key!r}", i))
            continue
        predictions[where[key]] = rec["prediction"]
        report.matched += 1
    for task in TASKS:
        members = [s.index for s in gt.samples if s.task == task]
        report.coverage[task] = TaskCoverage(
            task, len(members), sum(predictions[i] is not None for i in members)
        )
    return MatchedSubmission(report, predictions)


class CountScorer(TaskScorer):
    """Relative counting error per item, min(1, |pred - truth| / max(truth, 1)); unreadable = 1."""

    task = "count"
    metric_keys = ("count_err",)

    def parse(self, text: str, item: Item, profile: Profile) -> float | None:
        found = _NUMBER.search(text)
        return float(found.group()) if found else None

    def score_sample(self, parsed: float | None, item: Item, profile: Profile) -> SampleResult:
        truth = float(item.answer)
        err = 1.0 if parsed is None else min(1.0, abs(parsed - truth) / max(truth, 1.0))
        return SampleResult(item.index, item.dataset, parsed is not None, {"count_err": err})

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_site = {
            site: {"count_err": micro_mean(rs, "count_err"), "count": len(rs)}
            for site, rs in group_by_dataset(results).items()
        }
        overall = {"count_err": micro_mean(results, "count_err")}
        return TaskResult(self.task, overall, per_site, diagnostics(results), results)


class PresentScorer(TaskScorer):
    """Yes/no accuracy; an answer that starts with neither word is unparsed and wrong."""

    task = "present"
    metric_keys = ("present_acc",)

    def parse(self, text: str, item: Item, profile: Profile) -> str | None:
        words = text.strip().lower().split()
        first = words[0].strip(".,!") if words else ""
        return first if first in ("yes", "no") else None

    def score_sample(self, parsed: str | None, item: Item, profile: Profile) -> SampleResult:
        right = float(parsed == item.answer)
        return SampleResult(item.index, item.dataset, parsed is not None, {"present_acc": right})

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        overall = {"present_acc": micro_mean(results, "present_acc")}
        return TaskResult(self.task, overall, {}, diagnostics(results), results)


def synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    """A test set of ``samples`` cases (two questions each) and two archetypes."""
    rng = random.Random(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    gt, exact, sloppy = [], [], []
    for n in range(samples or 40):
        case, count = f"c{n:03d}", rng.randint(0, 9)
        gt += [
            {"case": case, "task": "count", "answer": str(count), "site": f"lab-{n % 2}"},
            {"case": case, "task": "present", "answer": "yes" if count else "no"},
        ]
        exact += [
            {"case": case, "task": "count", "prediction": f"{count} objects"},
            {"case": case, "task": "present", "prediction": "Yes." if count else "No."},
        ]
        sloppy += [
            {"case": case, "task": "count", "prediction": f"about {count + 2}"},
            {"case": case, "task": "present", "prediction": "yes"},
        ]
    written = {}
    for name, body in (
        ("ground_truth", gt),
        ("predictions_exact", exact),
        ("predictions_sloppy", sloppy),
    ):
        written[name] = out / f"{name}.json"
        written[name].write_text(json.dumps(body))
    return written


BENCHMARK = Benchmark(
    slug="tallybench",
    title="TallyBench",
    version="0.1",
    scorer_version="0.1.0",
    tasks=(Task("count", "CNT", "Counting"), Task("present", "PRS", "Presence")),
    metrics=(
        Metric(
            "count_err", "Count error", "count", "Relative counting error", higher_is_better=False
        ),
        Metric("present_acc", "Presence acc", "present", "Presence accuracy"),
    ),
    profiles=(Profile("tally-v1", description="The only rules."),),
    testset=TestSetFunctions(load=load_ground_truth, match=validate_submission),
    scorers=lambda: {"count": CountScorer(), "present": PresentScorer()},
    demo=DemoData(synthesise=synthesise, archetypes=("exact", "sloppy")),
    labels="public",
    presentation=Presentation(
        identity="A prediction names its item by case and task.",
        about="TallyBench counts objects. It exists only to test the plug-in seam.",
        licence="CC0",
    ),
)
