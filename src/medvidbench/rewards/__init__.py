"""Training rewards computed by the scorers that rank the board (docs/rewards.md).

>>> from medvidbench.rewards import Rewarder
>>> rewarder = Rewarder(stats="stats.json")            # doctest: +SKIP
>>> out = rewarder.score(completions, ground_truths)   # doctest: +SKIP
>>> out.reward, out.raw, out.terms["score"]            # doctest: +SKIP

A row's ground truth is the JSON the preparation command writes (``medvidbench rewards
prepare``): ``{"benchmark": slug, "item": {...}}``; rows of several benchmarks may share a batch.
Importing this module imports neither the sentence encoder nor the judge client; they load on the
first batch that needs them.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import (
    DEFAULT_K,
    JUDGE,
    SCORE,
    SIMILARITY,
    Normaliser,
    RewardSpec,
    RewardStats,
    TaskReward,
)
from medvidbench.core.scoring import Context

if TYPE_CHECKING:
    from medvidbench.core.judge.client import Judge

__all__ = [
    "RewardStats",
    "Rewarder",
    "Rewards",
    "combine",
    "fit",
    "ground_truth_column",
    "spec_of",
]

_ALNUM = re.compile(r"[^\W_]")
CAPTION_WEIGHT = 0.5  # judge vs similarity inside a caption term (MedGRPO's 50/50)
PART_WEIGHT = 0.5  # rule-based part vs caption part, for a task that has both (DVC)


class RewardInputError(UsageError):
    """A batch's ground truth or completion is unusable; the message names the row."""


def spec_of(bench: Benchmark) -> RewardSpec:
    if bench.rewards is None:
        raise UsageError(f"benchmark {bench.slug!r} offers no training rewards")
    spec: RewardSpec = bench.rewards()
    return spec


def ground_truth_column(bench: Benchmark, item: Any, extras: Mapping[str, Any]) -> str:
    """The ground-truth column's JSON for one item (what the adapters read)."""
    data = {"benchmark": bench.slug, "item": spec_of(bench).encode_item(item, extras)}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=65536)
def _decode_text(text: str) -> tuple[str, Any, dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    except RecursionError:
        raise ValueError("not JSON a reward reads (nested too deeply)") from None
    return _decode(data)


def _decode(data: Any) -> tuple[str, Any, dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("item"), dict):
        raise ValueError('expected {"benchmark": slug, "item": {...}} as the preparation writes')
    slug = data.get("benchmark")
    if not isinstance(slug, str):
        raise ValueError("benchmark must be a benchmark's slug")
    try:
        bench = benchmarks.get(slug)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    item, extras = spec_of(bench).decode_item(data["item"])
    return slug, item, extras


def decode_row(ground_truth: Any, where: str) -> tuple[str, Any, dict[str, Any]]:
    """(benchmark slug, item, extras) from a ground-truth column value (JSON text or dict)."""
    try:
        if isinstance(ground_truth, str):
            return _decode_text(ground_truth)
        return _decode(ground_truth)
    except ValueError as exc:
        raise RewardInputError(f"{where}: {exc}") from None


def completion_text(completion: Any, where: str = "completion") -> str:
    """The answer text of a completion: a string, or chat messages (the last assistant turn's
    content, itself a string or a list of parts whose text parts are joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content", "")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return "".join(
                        str(p.get("text", ""))
                        for p in content
                        if isinstance(p, dict) and p.get("type", "text") == "text"
                    )
        return ""
    raise RewardInputError(
        f"{where}: expected a string or chat messages, got {type(completion).__name__}"
    )


@dataclass(slots=True)
class Rewards:
    """One batch's rewards, in input order (numpy arrays of length n; NaN where a term does not
    apply to a row's task).

    Attributes:
        reward: What to train on: the normalised terms combined (the raw ones without statistics).
        raw: The raw terms combined the same way, 0-1 (for logging and for comparing to a metric).
        terms: Raw terms by name: ``score`` (rule-based, 0-1), ``similarity`` (0-1), ``judge``
            (the judge's 1-5 mapped to 0-1), ``format`` (1 when the answer could be read).
        normalised: The normalised ``score``/``similarity``/``judge`` terms.
        task, dataset, benchmark: Each row's.
        sources: Per row and term, which statistics normalised it (``dataset/iqr``, ``pool/std``,
            ``none`` ...); empty without statistics.
    """

    reward: np.ndarray
    raw: np.ndarray
    terms: dict[str, np.ndarray]
    normalised: dict[str, np.ndarray]
    task: list[str]
    dataset: list[str]
    benchmark: list[str]
    sources: list[dict[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.reward)

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as a plain dict (for a logger)."""
        out: dict[str, Any] = {
            "benchmark": self.benchmark[i],
            "task": self.task[i],
            "dataset": self.dataset[i],
            "reward": float(self.reward[i]),
            "raw": float(self.raw[i]),
        }
        for name, values in self.terms.items():
            if not np.isnan(values[i]):
                out[f"raw_{name}"] = float(values[i])
        for name, values in self.normalised.items():
            if not np.isnan(values[i]):
                out[f"normalised_{name}"] = float(values[i])
        return out


def combine(
    task: TaskReward,
    score: np.ndarray,
    fmt: np.ndarray,
    similarity: np.ndarray,
    judge: np.ndarray,
) -> np.ndarray:
    """A task's reward from its terms: the rule-based term (times the format term when gated);
    the caption term, similarity and judge 50/50 (similarity alone where the judge is NaN); both
    parts 50/50 for a task that has both."""
    rule = None
    if task.score is not None:
        rule = score * fmt if task.gated else score
    caption = None
    if task.similarity is not None:
        caption = np.where(
            np.isnan(judge), similarity, (1 - CAPTION_WEIGHT) * similarity + CAPTION_WEIGHT * judge
        )
    if rule is not None and caption is not None:
        out: np.ndarray = (1 - PART_WEIGHT) * rule + PART_WEIGHT * caption
        return out
    if rule is not None:
        return rule
    if caption is not None:
        return caption
    raise UsageError(f"task {task.task!r} declares no reward term")


class Rewarder:
    """Scores batches of completions with the benchmarks' own scorers.

    Args:
        stats: Normalisation statistics (a path, a :class:`RewardStats`, or several, one per
            benchmark); None: ``reward`` is the raw reward.
        k: The normalisation's steepness (MedGRPO: 3.0).
        judge: An LLM judge (:func:`medvidbench.library.judge_from_settings`) for the caption
            tasks' judge term; None: similarity alone (said once on stderr).
        options: Scoring options per benchmark slug (MedSG-Bench: ``{"coordinates": "0-1000"}``
            for a model that answers in 0-1000 coordinates).
        embedder: The sentence embedder (default: each benchmark's own, loaded on first need).
    """

    def __init__(
        self,
        stats: str | Path | RewardStats | Sequence[str | Path | RewardStats] | None = None,
        *,
        k: float = DEFAULT_K,
        judge: Judge | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        embedder: Any = None,
    ) -> None:
        self.normalisers: dict[str, Normaliser] = {}
        for s in (
            []
            if stats is None
            else [stats]
            if isinstance(stats, (str, Path, RewardStats))
            else stats
        ):
            loaded = s if isinstance(s, RewardStats) else RewardStats.load(s)
            self._check(loaded)
            self.normalisers[loaded.benchmark] = Normaliser(loaded, k)
        self.k = k
        self.judge = judge
        self.options = {slug: dict(v) for slug, v in (options or {}).items()}
        self._embedder = embedder
        self._warned_no_judge = False

    @staticmethod
    def _check(stats: RewardStats) -> None:
        bench = benchmarks.get(stats.benchmark)
        spec = spec_of(bench)
        if stats.scorer_version != bench.scorer_version or stats.profile != spec.profile:
            raise UsageError(
                f"the reward statistics were fitted with {stats.benchmark} scorer version "
                f"{stats.scorer_version} ({stats.profile}); this installation scores with "
                f"{bench.scorer_version} ({spec.profile}): fit them again with "
                "`medvidbench rewards fit`"
            )

    def score(self, completions: Sequence[Any], ground_truths: Sequence[Any]) -> Rewards:
        """Rewards for a batch (lists in, numpy arrays out)."""
        if len(completions) != len(ground_truths):
            raise RewardInputError(
                f"{len(completions)} completions but {len(ground_truths)} ground truths"
            )
        rows = [decode_row(g, f"ground_truth[{i}]") for i, g in enumerate(ground_truths)]
        texts = [completion_text(c, f"completions[{i}]") for i, c in enumerate(completions)]
        return self.score_items(rows, texts)

    def score_items(
        self, rows: Sequence[tuple[str, Any, Mapping[str, Any]]], texts: Sequence[Any]
    ) -> Rewards:
        """Rewards for (slug, item, extras) rows already decoded (what :func:`fit` uses); an
        answer is a text, or what a benchmark's prediction file may hold (a MedSG-Bench box)."""
        n = len(rows)
        terms = {name: np.full(n, np.nan) for name in (SCORE, SIMILARITY, JUDGE, "format")}
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (slug, item, _) in enumerate(rows):
            groups.setdefault((slug, item.task), []).append(i)
        for slug, task in groups:
            if task not in spec_of(benchmarks.get(slug)).tasks:
                raise RewardInputError(f"{slug} offers no reward for task {task!r}")
        # The judge (network-bound) starts first, on a thread of its own; the rule-based terms
        # and the similarities (CPU-bound) are computed while it waits for answers.
        judging = self._start_judging(rows, texts, groups)
        for (slug, task), members in groups.items():
            bench = benchmarks.get(slug)
            spec = spec_of(bench)
            reward = spec.tasks[task]
            profile = bench.profile(spec.profile)
            items = [rows[i][1] for i in members]
            batch = [texts[i] for i in members]
            ctx = Context(
                embedder_factory=self._embedder_factory(bench),
                options={
                    **self.options.get(slug, {}),
                    **spec.batch_options(items, [rows[i][2] for i in members]),
                },
            )
            idx = np.asarray(members)
            if reward.score is not None:
                scorer = bench.scorers()[task]
                results = scorer.score_all(items, batch, profile, ctx)
                terms[SCORE][idx] = [reward.score(r) for r in results]
                terms["format"][idx] = [float(r.parsed) for r in results]
            else:
                # a free-text answer is readable when it holds a letter or digit
                terms["format"][idx] = [float(bool(_ALNUM.search(str(t)))) for t in batch]
            if reward.similarity is not None:
                terms[SIMILARITY][idx] = reward.similarity(items, batch, ctx.embedder())
        if judging is not None:
            for idx, values in judging():
                terms[JUDGE][idx] = values
        elif (
            self.judge is None
            and not self._warned_no_judge
            and any(spec_of(benchmarks.get(slug)).tasks[task].judged for slug, task in groups)
        ):
            self._warned_no_judge = True
            print(
                "medvidbench rewards: no judge configured; caption rewards use semantic "
                "similarity alone",
                file=sys.stderr,
            )
        return self._finish(rows, terms)

    def _start_judging(
        self,
        rows: Sequence[tuple[str, Any, Mapping[str, Any]]],
        texts: Sequence[Any],
        groups: Mapping[tuple[str, str], list[int]],
    ) -> Any:
        """Plan every judged task's pairs and judge them in one pool on a thread; returns a
        function that waits and gives, per judged task, its rows and their 0-1 judge values
        (NaN: the judgement failed)."""
        if self.judge is None:
            return None
        judge = self.judge
        plans = []
        for (slug, task), members in groups.items():
            bench = benchmarks.get(slug)
            spec = spec_of(bench)
            if not spec.tasks[task].judged:
                continue
            profile = bench.profile(spec.profile)
            scorer = bench.judged_scorers()[task]
            plan = scorer.plan(
                [rows[i][1] for i in members],
                [texts[i] for i in members],
                profile,
                judge.config.config_id,
            )
            plans.append((scorer, plan, profile, np.asarray(members)))
        if not plans:
            return None
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward-judge")
        future = pool.submit(judge.judge_all, [r for _, p, _, _ in plans for r in p.requests])
        pool.shutdown(wait=False)

        def wait() -> list[tuple[np.ndarray, list[float]]]:
            judged = future.result()
            out = []
            for scorer, plan, profile, idx in plans:
                key = scorer.metric_keys[0]
                samples = scorer.aggregate(plan, judged, profile).samples
                out.append(
                    (idx, [(r.values[key] - 1.0) / 4.0 if r.values else np.nan for r in samples])
                )
            return out

        return wait

    def _embedder_factory(self, bench: Benchmark) -> Any:
        if self._embedder is not None:
            return lambda: self._embedder
        return bench.embedder

    def _finish(
        self, rows: Sequence[tuple[str, Any, Mapping[str, Any]]], terms: dict[str, np.ndarray]
    ) -> Rewards:
        n = len(rows)
        normalised = {name: terms[name].copy() for name in (SCORE, SIMILARITY, JUDGE)}
        sources: list[dict[str, str]] = [{} for _ in range(n)]
        keys: dict[tuple[str, str, str], list[int]] = {}
        for i, (slug, item, _) in enumerate(rows):
            keys.setdefault((slug, item.task, item.dataset), []).append(i)
        raw = np.zeros(n)
        reward = np.zeros(n)
        for (slug, task, dataset), members in keys.items():
            idx = np.asarray(members)
            spec_task = spec_of(benchmarks.get(slug)).tasks[task]
            normaliser = self.normalisers.get(slug)
            for name in (SCORE, SIMILARITY, JUDGE):
                values = terms[name][idx]
                if normaliser is None or np.isnan(values).all():
                    continue
                normalised[name][idx], source = normaliser.apply(task, dataset, name, values)
                normalised[name][idx] = np.where(np.isnan(values), np.nan, normalised[name][idx])
                for i in members:
                    sources[i][name] = source
            parts = [terms[name][idx] for name in (SCORE, "format", SIMILARITY, JUDGE)]
            raw[idx] = combine(spec_task, parts[0], parts[1], parts[2], parts[3])
            reward[idx] = combine(
                spec_task,
                normalised[SCORE][idx],
                parts[1],
                normalised[SIMILARITY][idx],
                normalised[JUDGE][idx],
            )
        return Rewards(
            reward,
            raw,
            terms,
            normalised,
            [item.task for _, item, _ in rows],
            [item.dataset for _, item, _ in rows],
            [slug for slug, _, _ in rows],
            sources if self.normalisers else [],
        )


def answered_rows(
    bench: Benchmark, gt: Any, matched: Any
) -> tuple[list[tuple[str, Any, dict[str, Any]]], list[Any]]:
    """The (slug, item, extras) rows and answers of the items a matched prediction file
    answers, on the tasks that have a reward, in test-set order."""
    spec = spec_of(bench)
    items = list(gt.samples)
    extras = spec.row_extras(items)
    keep = [
        i
        for i, answer in enumerate(matched.predictions)
        if answer is not None and items[i].task in spec.tasks
    ]
    return [(bench.slug, items[i], extras[i]) for i in keep], [matched.predictions[i] for i in keep]


def fit(
    predictions: str | Path | bytes,
    ground_truth: str | Path | bytes,
    *,
    benchmark: Benchmark | str | None = None,
    judge: Judge | None = None,
    options: Mapping[str, Any] | None = None,
    min_samples: int | None = None,
    embedder: Any = None,
) -> RewardStats:
    """Normalisation statistics from a reference model's predictions on a (training or
    validation) set: the raw terms of every prediction, summarised per (task, dataset, term).

    Raises:
        UsageError: when the prediction file cannot be matched to the ground truth.
    """
    from medvidbench.core.rewards import MIN_SAMPLES

    bench = benchmark if isinstance(benchmark, Benchmark) else benchmarks.get(benchmark)
    spec = spec_of(bench)
    gt = bench.load_ground_truth(ground_truth)
    name = "" if isinstance(predictions, bytes) else str(predictions)
    matched = bench.validate_submission(predictions, gt, name=name)
    if not matched.report.ok:
        errors = matched.report.errors
        shown = "; ".join(p.message for p in errors.items[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise UsageError(
            f"the reference predictions do not match the ground truth: {shown}{more}; "
            "`medvidbench validate` lists every problem"
        )
    rows, answers = answered_rows(bench, gt, matched)
    if not rows:
        raise UsageError("the reference predictions answer no item of a task with a reward")
    rewarder = Rewarder(
        judge=judge, options={bench.slug: {**matched.options, **(options or {})}}, embedder=embedder
    )
    out = rewarder.score_items(rows, answers)
    values: dict[tuple[str, str, str], list[float]] = {}
    for n, (_, item, _) in enumerate(rows):
        for name in (SCORE, SIMILARITY, JUDGE):
            v = out.terms[name][n]
            if not np.isnan(v):
                values.setdefault((item.task, item.dataset, name), []).append(float(v))
    return RewardStats.fit(
        bench.slug,
        bench.scorer_version,
        spec.profile,
        values,
        MIN_SAMPLES if min_samples is None else min_samples,
        {
            "predictions": Path(name).name if name else "",
            "ground_truth_sha256": gt.sha256,
            "rows": len(rows),
            "judge": judge.config.config_id if judge is not None else None,
            "similarity_model": "all-MiniLM-L6-v2",
        },
    )
