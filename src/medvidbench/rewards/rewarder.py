"""The rewarder: a batch's reward terms from the benchmarks' own scorers and judge, normalised
and combined.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core import linear_re
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
from medvidbench.rewards.rows import RewardInputError, completion_text, decode_row, spec_of
from medvidbench.rewards.saturation import DEFAULT_MARGIN, SaturationMonitor

if TYPE_CHECKING:
    from medvidbench.core.judge.client import Judge

_ALNUM = re.compile(r"[^\W_]")
CAPTION_WEIGHT = 0.5  # judge vs similarity inside a caption term (MedGRPO's 50/50)
PART_WEIGHT = 0.5  # rule-based part vs caption part, for a task that has both (DVC)
NO_JUDGE = "medvidbench rewards: no judge configured; caption rewards use semantic similarity alone"
_said: set[str] = set()
_said_lock = threading.Lock()


def say_once(message: str) -> None:
    """Print ``message`` on stderr once per process, however many rewarders or threads (a
    trainer's reward workers) reach it."""
    with _said_lock:
        if message in _said:
            return
        _said.add(message)
    print(message, file=sys.stderr)


@dataclass(slots=True)
class Rewards:
    """One batch's rewards, in input order (numpy arrays of length n; NaN where a term does not
    apply to a row's task).

    Attributes:
        reward: What to train on: the normalised terms combined (the raw ones without statistics).
        raw: The raw terms combined the same way, 0-1 (for logging and for comparing to a metric).
        terms: Raw terms by name: ``score`` (rule-based, 0-1), ``similarity`` (0-1), ``judge``
            (the judge's 1-5 mapped to 0-1), ``format`` (1 when the answer could be read),
            ``board_format`` (1 when the board's default profile can read it too; NaN when the
            check is off or the task has no rule-based part), ``guard`` (the cheap-answer
            multiplier, 1 for an honest answer).
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
    # what every term is multiplied by before it is combined: the format term (and the board's,
    # where checked) times the guard; 0 for an unreadable or cheap answer
    gate: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.reward)

    def component(self, name: str) -> np.ndarray:
        """One term as a reward of its own (``score``, ``similarity`` or ``judge``): the
        normalised term (the raw one without statistics) times the gate, NaN for a row whose
        task has no such term. Summed with the weights :func:`combine` gives them, the
        components make ``reward``; given to a trainer one by one, each can be normalised in
        its group on its own (TRL's ``multi_objective_aggregation="normalize_then_sum"``)."""
        if name not in self.normalised:
            known = ", ".join(self.normalised)
            raise UsageError(f"no reward component {name!r} (known: {known})")
        out: np.ndarray = self.normalised[name] * self.gate
        return out

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

    def summary(
        self, prefix: str = "medvidbench", reward: np.ndarray | None = None
    ) -> dict[str, float]:
        """Per task, the batch's mean reward (``reward``: what was trained on, when not the
        combined reward; one component, say), raw reward, raw terms (``raw_format``: the
        share of readable answers) and, with statistics, normalised terms, as
        ``{prefix}/{task}/{name}`` (what a trainer logs)."""
        out: dict[str, float] = {}
        tasks = np.asarray(self.task)
        trained = self.reward if reward is None else np.asarray(reward, dtype=float)
        for task in sorted(set(self.task)):
            rows = tasks == task
            means = {"reward": trained[rows], "raw": self.raw[rows]}
            means |= {f"raw_{name}": v[rows] for name, v in self.terms.items()}
            if self.sources:  # without statistics the normalised terms are the raw ones
                means |= {f"normalised_{name}": v[rows] for name, v in self.normalised.items()}
            for name, values in means.items():
                if not np.isnan(values).all():
                    out[f"{prefix}/{task}/{name}"] = float(np.nanmean(values))
        return out


def combine(
    task: TaskReward,
    score: np.ndarray,
    fmt: np.ndarray,
    similarity: np.ndarray,
    judge: np.ndarray,
) -> np.ndarray:
    """A task's reward from its terms: the rule-based term; the caption term, similarity and
    judge 50/50 (similarity alone where the judge is NaN); both parts 50/50 for a task that has
    both; the whole times the format term, so that an unreadable answer earns 0 on every task
    once normalised (a normalised 0 is otherwise worth the logistic's value at 0)."""
    rule = score if task.score is not None else None
    caption = None
    if task.similarity is not None:
        caption = np.where(
            np.isnan(judge), similarity, (1 - CAPTION_WEIGHT) * similarity + CAPTION_WEIGHT * judge
        )
    if rule is not None and caption is not None:
        out: np.ndarray = (1 - PART_WEIGHT) * rule + PART_WEIGHT * caption
    elif rule is not None:
        out = rule
    elif caption is not None:
        out = caption
    else:
        raise UsageError(f"task {task.task!r} declares no reward term")
    result: np.ndarray = out * fmt
    return result


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
        board_format: Also require a rule-based answer to be readable under the benchmark's
            default (board) profile (reward times 0 otherwise); None: the benchmark's own
            default (``RewardSpec.board_format``: on for MedVidBench).
        variants: Alternative raw rewards by task (``{"tal": "iou"}``: TAL's continuous
            set-level IoU); statistics must have been fitted with the same variants.
        saturation_margin: Warn (:class:`~medvidbench.rewards.saturation.RewardSaturationWarning`,
            once per task, dataset and term) when the policy's median raw term passes the
            reference's by this many IQRs (:mod:`~medvidbench.rewards.saturation`); None: never.
    """

    def __init__(
        self,
        stats: str | Path | RewardStats | Sequence[str | Path | RewardStats] | None = None,
        *,
        k: float = DEFAULT_K,
        judge: Judge | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        embedder: Any = None,
        board_format: bool | None = None,
        variants: Mapping[str, str] | None = None,
        saturation_margin: float | None = DEFAULT_MARGIN,
    ) -> None:
        self.board_format = board_format
        self.variants = dict(variants or {})
        self.normalisers: dict[str, Normaliser] = {}
        self.saturation = (  # watches the normalisers' benchmarks (none: nothing to watch)
            None
            if saturation_margin is None
            else SaturationMonitor(self.normalisers, saturation_margin)
        )
        for s in (
            []
            if stats is None
            else [stats]
            if isinstance(stats, (str, Path, RewardStats))
            else stats
        ):
            loaded = s if isinstance(s, RewardStats) else RewardStats.load(s)
            self._check(loaded)
            self._check_variants(loaded)
            self.normalisers[loaded.benchmark] = Normaliser(loaded, k)
        self.k = k
        self.judge = judge
        for normaliser in self.normalisers.values():
            self._check_judge(normaliser.stats)
        for slug, given in (options or {}).items():  # a typo in either: refused, not ignored
            benchmarks.get(slug).check_option_names(given)
        self.options = {slug: dict(v) for slug, v in (options or {}).items()}
        self._embedder = embedder

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

    def _check_judge(self, stats: RewardStats) -> None:
        """Refuse statistics fitted with another judge setting than this rewarder's: fitted
        without a judge and used with one, the judge term would pass through raw (no
        statistics know it) into the caption mix; with another judge, it would be normalised
        by another judge's scale."""
        if not any(t.judged for t in spec_of(benchmarks.get(stats.benchmark)).tasks.values()):
            return
        fitted = stats.provenance.get("judge")
        mine = self.judge.config.config_id if self.judge is not None else None
        if fitted != mine:

            def said(v: Any) -> str:
                return "no judge" if v is None else f"judge configuration {v}"

            raise UsageError(
                f"the {stats.benchmark} reward statistics were fitted with {said(fitted)}; "
                f"this rewarder uses {said(mine)}: fit them again with the judge you train "
                "with (`medvidbench rewards fit --judge ...`), or train with the judge "
                "setting they were fitted with"
            )

    def _check_variants(self, stats: RewardStats) -> None:
        tasks = spec_of(benchmarks.get(stats.benchmark)).tasks
        mine = {t: v for t, v in self.variants.items() if t in tasks}
        fitted = dict(stats.provenance.get("variants") or {})
        if mine != fitted:
            raise UsageError(
                f"the reward statistics were fitted with reward variants {fitted or 'none'}; "
                f"this rewarder uses {mine or 'none'}: fit them again with the same variants"
            )

    def _board_format(self, spec: RewardSpec[Any], bench: Benchmark) -> bool:
        on = spec.board_format if self.board_format is None else self.board_format
        return on and bench.default_profile != spec.profile

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
        terms = {
            name: np.full(n, np.nan)
            for name in (SCORE, SIMILARITY, JUDGE, "format", "board_format", "guard")
        }
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (slug, item, _) in enumerate(rows):
            groups.setdefault((slug, item.task), []).append(i)
        for slug, task in groups:
            tasks = spec_of(benchmarks.get(slug)).tasks
            if task not in tasks:
                raise RewardInputError(f"{slug} offers no reward for task {task!r}")
            variant = self.variants.get(task)
            if variant is not None and variant not in tasks[task].variants:
                known = ", ".join(tasks[task].variants) or "none"
                raise UsageError(f"{task} has no reward variant {variant!r} (known: {known})")
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
                # the scorer's own entry point: the per-sample results the board aggregates
                results = bench.scorers()[task].score_all(items, batch, profile, ctx)
                variant = self.variants.get(task)
                if variant is not None:
                    with linear_re.budgeted():  # variants parse the answers again
                        terms[SCORE][idx] = reward.variants[variant](items, batch, results)
                else:
                    terms[SCORE][idx] = [reward.score(r) for r in results]
                terms["format"][idx] = [float(r.parsed) for r in results]
                if self._board_format(spec, bench):
                    board = bench.scorers()[task].score_all(items, batch, bench.profile(), ctx)
                    terms["board_format"][idx] = [float(r.parsed) for r in board]
            else:
                # a free-text answer is readable when it holds a letter or digit
                terms["format"][idx] = [float(bool(_ALNUM.search(str(t)))) for t in batch]
            if reward.similarity is not None:
                terms[SIMILARITY][idx] = reward.similarity(items, batch, ctx.embedder())
            terms["guard"][idx] = (
                1.0 if reward.guard is None else reward.guard(items, batch, ctx.options)
            )
        if judging is not None:
            for idx, values in judging():
                terms[JUDGE][idx] = values
        elif self.judge is None and any(
            spec_of(benchmarks.get(slug)).tasks[task].judged for slug, task in groups
        ):
            say_once(NO_JUDGE)
        return self._finish(rows, terms)

    def _start_judging(
        self,
        rows: Sequence[tuple[str, Any, Mapping[str, Any]]],
        texts: Sequence[Any],
        groups: Mapping[tuple[str, str], list[int]],
    ) -> Any:
        """Start judging every judged task's rows (through the evaluator's judging entry
        point, :func:`~medvidbench.core.judging.judge_in_background`); returns a function
        that waits and gives, per judged task, its rows and their 0-1 judge values (NaN: the
        judgement failed)."""
        if self.judge is None:
            return None
        from medvidbench.core.judging import JudgeJob, judge_in_background

        jobs: list[JudgeJob] = []
        members: list[np.ndarray] = []
        for (slug, task), group in groups.items():
            bench = benchmarks.get(slug)
            spec = spec_of(bench)
            if not spec.tasks[task].judged:
                continue
            scorer = bench.judged_scorers()[task]
            items = [rows[i][1] for i in group]
            jobs.append((scorer, items, [texts[i] for i in group], bench.profile(spec.profile)))
            members.append(np.asarray(group))
        if not jobs:
            return None
        future = judge_in_background(self.judge, jobs)

        def wait() -> list[tuple[np.ndarray, list[float]]]:
            out = []
            for (scorer, *_), idx, result in zip(jobs, members, future.result(), strict=True):
                key = scorer.metric_keys[0]
                values = [
                    (r.values[key] - 1.0) / 4.0 if r.values else np.nan for r in result.samples
                ]
                out.append((idx, values))
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
        gate = np.zeros(n)
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
            board = terms["board_format"][idx]
            fmt = parts[1] * np.where(np.isnan(board), 1.0, board)
            guard = terms["guard"][idx]
            gate[idx] = fmt * guard
            raw[idx] = combine(spec_task, parts[0], fmt, parts[2], parts[3]) * guard
            reward[idx] = (
                combine(
                    spec_task,
                    normalised[SCORE][idx],
                    fmt,
                    normalised[SIMILARITY][idx],
                    normalised[JUDGE][idx],
                )
                * guard
            )
        out = Rewards(
            reward,
            raw,
            terms,
            normalised,
            [item.task for _, item, _ in rows],
            [item.dataset for _, item, _ in rows],
            [slug for slug, _, _ in rows],
            sources if self.normalisers else [],
            gate,
        )
        if self.saturation is not None and self.normalisers:
            self.saturation.observe(out.benchmark, out.task, out.dataset, terms)
        return out
