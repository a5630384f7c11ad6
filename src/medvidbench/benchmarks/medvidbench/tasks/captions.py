"""LLM-judged caption metrics: DVC_llm, VS_llm, RC_llm (metrics.md §3.4.3, §3.5, §3.6, §4).

Scoring happens in two steps so that one judge pool serves all three tasks: :func:`plan` lists
the (prediction, reference) pairs each task needs judged, the judge answers them (cached), and
:func:`aggregate` turns judgements into the metric. A pair is judged once however often it
recurs (the same DVC pair at several thresholds, or in several samples).

``leaderboard-v1``
  * VS/RC: (answer, reference) per sample; an empty answer or reference (the empty string
    only: whitespace is sent to the judge as it is) drops the sample; the
    metric is the mean over the five aspects of each aspect's mean over judged samples.
  * DVC_llm: events parsed as for DVC_F1 but in seconds and without flattening; for each
    θ in {0.3, 0.5, 0.7} each predicted event pairs with the GT event of highest IoU >= θ.
    Per dataset and θ, the mean of each aspect over the judged pairs; the θ's score is the mean
    of those aspect means above 0; the dataset's score the mean of θ scores above 0 (0.0 with no
    pairs); DVC_llm weights datasets by their DVC sample count. Missed and invented events cost
    nothing (bug B7).

``strict-v2``
  * VS/RC: an empty or blank answer scores 1 on every aspect (no call); the metric is the mean over
    samples of each sample's five-aspect mean.
  * DVC_llm: per sample and θ, one optimal one-to-one matching of events at IoU >= θ; every
    matched pair contributes its judged five-aspect mean, every missed GT event and every
    invented predicted event contributes 1 (the lowest score); the sample's score is the mean
    over θ of the mean contribution (no event parsed: every GT event missed, 1.0); the metric
    is the mean over samples.

Under both profiles a failed judgement (every attempt exhausted) is left out and counted in the
provenance; nothing is ever scored from a similarity measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from medvidbench.benchmarks.medvidbench.groundtruth import Sample
from medvidbench.benchmarks.medvidbench.rubric import ASPECT_CODES, RUBRIC
from medvidbench.benchmarks.medvidbench.rules import corrected, tolerant
from medvidbench.benchmarks.medvidbench.tasks import dvc
from medvidbench.benchmarks.medvidbench.tasks.tal import assign
from medvidbench.core.benchmark import Profile
from medvidbench.core.scoring import (
    Context,
    JudgedScorer,
    SampleResult,
    TaskResult,
    fmean,
    group_by_dataset,
    mean_or_none,
)

if TYPE_CHECKING:
    from medvidbench.core.judge.cache import Judgement
    from medvidbench.core.judge.client import JudgeRequest
    from medvidbench.core.statistics import Linearised

CAPTION_TASKS: dict[str, str] = {
    "dense_captioning": "dvc_llm",
    "video_summary": "vs_llm",
    "region_caption": "rc_llm",
}
THRESHOLDS = (0.3, 0.5, 0.7)
LOWEST = 1.0


class Planned(msgspec.Struct):
    """One sample's judging plan: the pair keys it needs, per threshold for DVC."""

    index: int
    dataset: str
    keys_by_theta: dict[float, list[str]] = msgspec.field(default_factory=dict)
    unmatched_by_theta: dict[float, int] = msgspec.field(default_factory=dict)
    key: str | None = None
    dropped: bool = False
    empty_answer: bool = False


class CaptionPlan(msgspec.Struct):
    task: str
    metric: str
    samples: list[Planned]
    requests: list[JudgeRequest]


def _iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union if union > 0 else 0.0


def _blank(text: str, profile: Profile) -> bool:
    """Whether a VS/RC answer or reference counts as empty.

    Upstream tests the string itself, so under ``leaderboard-v1`` only ``""`` is empty: an answer
    of whitespace alone (" ", "\\u00a0", "\\n") goes to the judge as it is and its score counts.
    ``strict-v2`` treats a blank answer as empty too (a miss, scored 1 without a call).
    """
    return not text.strip() if tolerant(profile) else text == ""


def plan(
    task: str, samples: Sequence[Any], texts: Sequence[str], profile: Profile, config_id: str
) -> CaptionPlan:
    """The pairs a caption task needs judged, and how each sample will use them."""
    from medvidbench.core.judge.cache import cache_key  # only when judging
    from medvidbench.core.judge.client import JudgeRequest

    requests: dict[str, JudgeRequest] = {}

    def request(prediction: str, reference: str) -> str:
        key = cache_key(config_id, task, prediction, reference)
        requests.setdefault(key, JudgeRequest(key, task, prediction, reference, RUBRIC))
        return key

    planned = []
    for s, text in zip(samples, texts, strict=True):
        p = Planned(s.index, s.dataset)
        if task == "dense_captioning":
            _plan_dvc(p, s, text, profile, request)
        elif _blank(s.answer, profile):
            p.dropped = True
        elif _blank(text, profile):
            p.dropped, p.empty_answer = not corrected(profile), True
        else:
            p.key = request(text, s.answer)
        planned.append(p)
    return CaptionPlan(task, CAPTION_TASKS[task], planned, list(requests.values()))


def strict_matches(
    pred: Sequence[dvc.Event], gt: Sequence[dvc.Event], theta: float
) -> tuple[list[tuple[int, int]], int]:
    """strict-v2's event matching at one threshold: the optimal one-to-one pairs of IoU >= θ,
    and how many events (missed GT and invented predicted) stay unmatched."""
    gated = [[v if (v := _iou(e[:2], g[:2])) >= theta else 0.0 for g in gt] for e in pred]
    pairs = assign(gated) if pred and gt else []
    return pairs, len(gt) + len(pred) - 2 * len(pairs)


def _plan_dvc(p: Planned, s: Any, text: str, profile: Profile, request: Any) -> None:
    gt = dvc.truth(s.structure())
    pred = dvc.parse(text, tolerant(profile))
    if not gt or (not pred and not corrected(profile)):
        p.dropped = True
        return
    for theta in THRESHOLDS:
        if corrected(profile):
            pairs, unmatched = strict_matches(pred, gt, theta)
            p.keys_by_theta[theta] = [request(pred[i][2], gt[j][2]) for i, j in pairs]
            p.unmatched_by_theta[theta] = unmatched
            continue
        table = [[_iou(e[:2], g[:2]) for g in gt] for e in pred]
        keys = []
        for i, row in enumerate(table):
            best = max(range(len(gt)), key=lambda j: row[j])  # first of equal IoUs, as upstream
            if row[best] >= theta:
                keys.append(request(pred[i][2], gt[best][2]))
        p.keys_by_theta[theta] = keys


def _mean_scores(j: Judgement) -> float:
    return fmean(j.scores[c] for c in ASPECT_CODES)


def _aspect_score(judgements: Sequence[Judgement]) -> float | None:
    """v1: mean over aspects of each aspect's mean (upstream keeps aspect means above 0)."""
    if not judgements:
        return None
    means = [fmean(j.scores[c] for j in judgements) for c in ASPECT_CODES]
    kept = [m for m in means if m > 0]
    return fmean(kept) if kept else None


def aggregate(plan_: CaptionPlan, judged: dict[str, Judgement], profile: Profile) -> TaskResult:
    """Turn judgements into the task's metric, per dataset and overall."""
    if plan_.task == "dense_captioning":
        return _aggregate_dvc(plan_, judged, profile)
    rows: list[SampleResult] = []
    for p in plan_.samples:
        if p.empty_answer and corrected(profile):
            value: float | None = LOWEST
        elif p.key is not None and p.key in judged:
            value = _mean_scores(judged[p.key])
        else:
            value = None
        rows.append(
            SampleResult(
                p.index,
                p.dataset,
                not p.empty_answer,
                None if value is None else {plan_.metric: value},
            )
        )
    by_key = {p.index: p for p in plan_.samples}

    def score(rs: Sequence[SampleResult]) -> float | None:
        if corrected(profile):
            return mean_or_none([r.values[plan_.metric] for r in rs if r.values])
        return _aspect_score(
            [judged[k] for r in rs if r.values for k in [by_key[r.index].key] if k is not None]
        )

    return _result(
        plan_, rows, score(rows), {d: score(rs) for d, rs in group_by_dataset(rows).items()}, judged
    )


def _aggregate_dvc(
    plan_: CaptionPlan, judged: dict[str, Judgement], profile: Profile
) -> TaskResult:
    rows: list[SampleResult] = []
    for p in plan_.samples:
        value = (
            None
            if p.dropped
            else (_dvc_sample_v2 if corrected(profile) else _dvc_sample_v1)(p, judged)
        )
        pairs = None
        if not corrected(profile):  # what the v1 aggregate pools, kept for bootstrap intervals
            pairs = {
                theta: [sum(_mean_scores(judged[k]) for k in got), len(got)]
                for theta, keys in p.keys_by_theta.items()
                for got in [[k for k in keys if k in judged]]
            }
        rows.append(
            SampleResult(
                p.index,
                p.dataset,
                not p.dropped,
                None if value is None else {"dvc_llm": value},
                extra=None if pairs is None else {"pairs": pairs},
            )
        )
    groups = group_by_dataset(rows)
    by_index = {p.index: p for p in plan_.samples}
    if corrected(profile):
        per_dataset = {
            d: mean_or_none([r.values["dvc_llm"] for r in rs if r.values])
            for d, rs in groups.items()
        }
        overall = mean_or_none([r.values["dvc_llm"] for r in rows if r.values])
    else:
        per_dataset = {
            d: _dvc_dataset_v1([by_index[r.index] for r in rs], judged) for d, rs in groups.items()
        }
        total = sum(len(rs) for rs in groups.values())
        overall = (
            sum((per_dataset[d] or 0.0) * len(rs) for d, rs in groups.items()) / total
            if total
            else None
        )
    return _result(plan_, rows, overall, per_dataset, judged)


def _dvc_dataset_v1(planned: Sequence[Planned], judged: dict[str, Judgement]) -> float:
    theta_scores = []
    for theta in THRESHOLDS:
        got = [judged[k] for p in planned for k in p.keys_by_theta.get(theta, []) if k in judged]
        score = _aspect_score(got)
        if score is not None and score > 0:
            theta_scores.append(score)
    return fmean(theta_scores) if theta_scores else 0.0


def _dvc_sample_v1(p: Planned, judged: dict[str, Judgement]) -> float | None:
    """v1 has no per-sample score; this is a diagnostic: the mean of its judged pairs."""
    return mean_or_none(
        [_mean_scores(judged[k]) for keys in p.keys_by_theta.values() for k in keys if k in judged]
    )


def _dvc_sample_v2(p: Planned, judged: dict[str, Judgement]) -> float | None:
    per_theta = []
    for theta in THRESHOLDS:
        parts = [_mean_scores(judged[k]) for k in p.keys_by_theta[theta] if k in judged]
        parts += [LOWEST] * p.unmatched_by_theta[theta]
        if parts:
            per_theta.append(fmean(parts))
    return fmean(per_theta) if per_theta else None


def _result(
    plan_: CaptionPlan,
    rows: list[SampleResult],
    overall: float | None,
    per_dataset: dict[str, float | None],
    judged: dict[str, Judgement],
) -> TaskResult:
    counts = {d: len(rs) for d, rs in group_by_dataset(rows).items()}
    failed = sum(1 for r in plan_.requests if r.key not in judged)
    diag: dict[str, Any] = {
        "count": len(rows),
        "evaluated": sum(r.values is not None for r in rows),
        "parsed": sum(r.parsed for r in rows),
        "parse_rate": sum(r.parsed for r in rows) / len(rows) if rows else None,
        "pairs": len(plan_.requests),
        "failed_pairs": failed,
    }
    return TaskResult(
        plan_.task,
        {plan_.metric: overall},
        {d: {plan_.metric: v, "count": counts[d]} for d, v in per_dataset.items()},
        diag,
        rows,
    )


SIMILARITY_KEYS: dict[str, str] = {
    "dense_captioning": "dvc_sim",
    "video_summary": "vs_sim",
    "region_caption": "rc_sim",
}


def similarity(samples: Sequence[Any], texts: Sequence[str], ctx: Any) -> float | None:
    """Mean cosine similarity of answers and references (both non-empty), 0-1."""
    pairs = [
        (t, s.answer) for s, t in zip(samples, texts, strict=True) if t.strip() and s.answer.strip()
    ]
    if not pairs:
        return None
    embedder = ctx.embedder()
    a = embedder.encode([p for p, _ in pairs])
    b = embedder.encode([r for _, r in pairs])
    return float((a * b).sum(axis=1).clip(-1.0, 1.0).mean())


class CaptionScorer(JudgedScorer[Sample]):
    """The judged part of one caption task, through the scorer contract's judge hooks."""

    similarity_about = (
        "Offline diagnostic, not a leaderboard metric: mean all-MiniLM-L6-v2 cosine similarity "
        "(0-1) of each whole answer with its whole reference, over samples where both are "
        "non-empty. It is never reported in the 1-5 judge columns."
    )

    def __init__(self, task: str) -> None:
        self.task = task
        self.metric_keys: tuple[str, ...] = (CAPTION_TASKS[task],)
        self.similarity_key = SIMILARITY_KEYS[task]

    def plan(
        self, samples: Sequence[Sample], texts: Sequence[str], profile: Profile, judge_id: str
    ) -> CaptionPlan:
        return plan(self.task, samples, texts, profile, judge_id)

    def aggregate(
        self, plan_: CaptionPlan, judged: dict[str, Judgement], profile: Profile
    ) -> TaskResult:
        return aggregate(plan_, judged, profile)

    def similarity(
        self, samples: Sequence[Sample], texts: Sequence[str], ctx: Context
    ) -> float | None:
        return similarity(samples, texts, ctx)

    def linearise(self, results: list[SampleResult], profile: Profile) -> Linearised:
        """The judged metric as ratios of sums. Every sample-level mean (strict-v2, and VS/RC
        under v1, whose aspect means over samples average to the samples' mean) is the mean of
        the per-sample values; v1's DVC_llm pools pairs per dataset and threshold, its datasets
        weighted by their shares of the DVC samples."""
        from medvidbench.core.statistics import Linearised, Ratio, sample_means

        if corrected(profile) or self.task != "dense_captioning":
            return sample_means(results, self.metric_keys)
        out = Linearised()
        counts: dict[str, int] = {}
        seen: dict[str, set[float]] = {}
        for r in results:
            counts[r.dataset] = counts.get(r.dataset, 0) + 1
            seen.setdefault(r.dataset, set())
            feats = {f"dvc_llm/{r.dataset}/#samples": 1.0, "dvc_llm/#samples": 1.0}
            for theta, (total, n) in ((r.extra or {}).get("pairs") or {}).items():
                if n:
                    feats[f"dvc_llm/{r.dataset}/{theta}"] = total
                    feats[f"dvc_llm/{r.dataset}/{theta}#n"] = n
                    seen[r.dataset].add(theta)
            out.rows.append((r.index, feats))
        terms = []
        for d in sorted(counts):
            share = (f"dvc_llm/{d}/#samples", "dvc_llm/#samples")
            if not seen[d]:
                terms.append(Ratio("dvc_llm/#zero", f"dvc_llm/{d}/#samples", 1.0, share))
            for theta in sorted(seen[d]):
                base = f"dvc_llm/{d}/{theta}"
                # one unit per dataset: drawn with no judged pair, it scores 0 (_dvc_dataset_v1)
                terms.append(
                    Ratio(base, f"{base}#n", 1.0 / len(seen[d]), share, f"dvc_llm/{d}/#samples")
                )
        out.formulas["dvc_llm"] = terms
        return out


JUDGED_SCORERS: dict[str, CaptionScorer] = {t: CaptionScorer(t) for t in CAPTION_TASKS}


def judged_scorers() -> dict[str, CaptionScorer]:
    return JUDGED_SCORERS
