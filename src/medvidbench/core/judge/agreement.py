"""How far two LLM judges agree: the statistics of the judge agreement card.

Every statistic here takes the ratings of caption pairs (each pair in one *cluster*, the video
its item comes from) and gives a point value with a cluster-bootstrap percentile interval
(:func:`with_interval`): pairs from one video are not independent, so whole videos are drawn.

- :func:`quadratic_kappa`: Cohen's kappa with quadratic weights between two judges' 1-5 scores
  of one rubric aspect (0: chance agreement, 1: identical). Exact agreement is given only
  beside it: on a 1-5 scale whose judges favour 4 and 5 it overstates agreement.
- :func:`ordinal_alpha`: Krippendorff's alpha with the ordinal distance, for two or more judges
  (a jury) and missing ratings.
- :func:`spearman`: the rank correlation of the pairs' five-aspect mean scores.
- :func:`kendall_tau`: tau-b between the orders in which two judges put the models.
- :func:`length_bias`: how much more a judge gives long answers (more words than their
  reference) than the reference judge does, beyond what it gives short ones: the slope of the
  score difference regressed on that indicator.
- :func:`calibrated_mean`: a prediction-powered estimate of the reference judge's mean from a
  large set judged by another judge and a small set judged by both (Angelopoulos et al. 2023;
  the power-tuned weight of PPI++), with a cluster-robust t interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LEVELS = 5  # a rubric aspect's scores: 1..5
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic's value and its 95 % interval (None where the data cannot give one)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0  # the pairs (or models) it was computed on

    def as_dict(self) -> dict[str, float | int | None]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def contingency(a: np.ndarray, b: np.ndarray, levels: int = LEVELS) -> np.ndarray:
    """The ``levels x levels`` table of how often judge A said i and judge B said j (1-based)."""
    idx = (np.asarray(a, dtype=np.int64) - 1) * levels + (np.asarray(b, dtype=np.int64) - 1)
    return np.bincount(idx, minlength=levels * levels).reshape(levels, levels).astype(float)


def kappa_of_table(table: np.ndarray) -> float | None:
    """Quadratic-weighted kappa of a contingency table (None when chance predicts no
    disagreement at all: both judges gave one and the same score throughout).

    Examples:
        >>> kappa_of_table(np.array([[2.0, 0.0], [0.0, 2.0]]))
        1.0
    """
    n = table.sum()
    if n == 0:
        return None
    k = table.shape[0]
    i, j = np.indices((k, k))
    weights = (i - j) ** 2 / (k - 1) ** 2
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chance = float((weights * expected).sum())
    if chance == 0:
        return None
    return 1.0 - float((weights * table).sum()) / chance


def quadratic_kappa(a: np.ndarray, b: np.ndarray, levels: int = LEVELS) -> float | None:
    """Cohen's kappa with quadratic weights between two judges' scores of the same pairs."""
    return kappa_of_table(contingency(a, b, levels)) if len(a) else None


def ordinal_alpha(ratings: np.ndarray, levels: int = LEVELS) -> float | None:
    """Krippendorff's alpha, ordinal distance, of a judges x pairs matrix (NaN: not rated).

    Pairs rated by fewer than two judges carry no information and are left out. The ordinal
    distance between scores c < k is (sum of the counts of c..k - (n_c + n_k) / 2) squared,
    from the coincidence matrix's marginals (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability").
    """
    ratings = np.asarray(ratings, dtype=float)
    rated = ~np.isnan(ratings)
    judges, units = np.nonzero(rated)
    values = ratings[judges, units].astype(np.int64) - 1
    counts = np.zeros((ratings.shape[1], levels))  # units x levels
    np.add.at(counts, (units, values), 1.0)
    m = counts.sum(axis=1)
    weight = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)  # 1 / (m_u - 1); lone ratings 0
    # every ordered pair of distinct ratings of a unit, weighted 1 / (m_u - 1)
    coincidence = (counts * weight[:, None]).T @ counts - np.diag(weight @ counts)
    marginals = coincidence.sum(axis=1)
    total = marginals.sum()
    if total <= 1:
        return None
    cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
    c, k = np.indices((levels, levels))
    lo, hi = np.minimum(c, k), np.maximum(c, k)
    distance = (cumulative[hi + 1] - cumulative[lo] - (marginals[c] + marginals[k]) / 2) ** 2
    expected = float((np.outer(marginals, marginals) * distance).sum())
    if expected == 0:
        return None
    return 1.0 - float(total - 1) * float((coincidence * distance).sum()) / expected


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(x), dtype=float)


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rank correlation (average ranks for ties; None when either is constant)."""
    if len(x) < 3:
        return None
    rx, ry = _ranks(x), _ranks(y)
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return None
    return float(((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b between two orders of the same models (None for fewer than 3 models
    or an order that ties them all)."""
    if len(x) < 3:
        return None
    from scipy.stats import kendalltau

    tau = kendalltau(x, y).statistic
    return None if tau is None or np.isnan(tau) else float(tau)


def length_bias(difference: np.ndarray, long: np.ndarray) -> float | None:
    """The slope of the score difference (judge B minus the reference judge) on the indicator
    "the answer is longer than its reference": B's mean excess on long answers minus its mean
    excess on the others (None without both kinds of answer)."""
    long = np.asarray(long, dtype=bool)
    if long.all() or not long.any():
        return None
    return float(difference[long].mean() - difference[~long].mean())


def cluster_members(clusters: Sequence[str]) -> list[np.ndarray]:
    """The row indices of each cluster, in order of first appearance."""
    index: dict[str, list[int]] = {}
    for i, c in enumerate(clusters):
        index.setdefault(c, []).append(i)
    return [np.asarray(v, dtype=np.int64) for v in index.values()]


def with_interval(
    statistic: Callable[[np.ndarray], float | None],
    members: list[np.ndarray],
    replicates: int,
    seed: int,
    n: int | None = None,
) -> Estimate:
    """The statistic on every row, and its 2.5-97.5 % percentile interval over cluster
    bootstrap replicates (``statistic`` takes the row indices of a replicate; replicates where
    it is undefined are left out, and no interval is given when more than half are)."""
    everything = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
    value = statistic(everything)
    size = int(n if n is not None else len(everything))
    if value is None or len(members) < 2 or replicates < 1:
        return Estimate(value, None, None, size)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(members), size=(replicates, len(members)))
    values = []
    for draw in draws:
        v = statistic(np.concatenate([members[g] for g in draw]))
        if v is not None:
            values.append(v)
    if len(values) < replicates / 2:
        return Estimate(value, None, None, size)
    low, high = np.quantile(values, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return Estimate(value, float(low), float(high), size)


@dataclass(frozen=True, slots=True)
class Calibrated:
    """A prediction-powered estimate of the reference judge's mean."""

    estimate: float
    low: float
    high: float
    weight: float  # PPI++'s lambda: 0 uses the labelled pairs alone, 1 is classic PPI
    labelled: int
    unlabelled: int


def _cluster_variance(parts: Sequence[tuple[np.ndarray, Sequence[str], float]]) -> float:
    """The cluster-robust (CR1) variance of a weighted sum of means, ``sum(w * mean(values))``,
    whose parts may share clusters (and items): each cluster's contributions to every part are
    added before squaring, so a video in both parts counts as one draw."""
    total: dict[str, float] = {}
    for values, clusters, w in parts:
        centred = (values - values.mean()) * (w / len(values))
        for c, v in zip(clusters, centred, strict=True):
            total[c] = total.get(c, 0.0) + float(v)
    g = len(total)
    if g < 2:
        return float("nan")
    return float(sum(v * v for v in total.values()) * g / (g - 1))


def calibrated_mean(
    b_all: np.ndarray,
    b_clusters: Sequence[str],
    a_labelled: np.ndarray,
    b_labelled: np.ndarray,
    labelled_clusters: Sequence[str],
) -> Calibrated | None:
    """The reference judge A's mean over everything, estimated from judge B's scores of every
    pair (``b_all``) and a small set both judged (``a_labelled``, ``b_labelled``).

    theta = lambda * mean(B, all) + mean(A - lambda * B, labelled), with lambda the power-tuned
    weight Cov(A, B) / ((1 + n / N) Var(B)) clipped to [0, 1]; its variance is the two means'
    joint cluster-robust variance (the labelled pairs are among all pairs, and a video in both
    parts is one draw: its terms are added before squaring), its interval Student's t with one
    degree of freedom fewer than the clusters of the smaller part (the few-cluster rule of the
    metric intervals). None with fewer than two labelled clusters.
    """
    n, big_n = len(a_labelled), len(b_all)
    if n < 2 or big_n < 2 or len(set(labelled_clusters)) < 2 or len(set(b_clusters)) < 2:
        return None
    var_b = float(np.var(b_labelled))
    if var_b > 0:
        cov = float(np.cov(a_labelled, b_labelled, bias=True)[0, 1])
        weight = min(1.0, max(0.0, cov / ((1 + n / big_n) * var_b)))
    else:
        weight = 0.0
    rectifier = a_labelled - weight * b_labelled
    estimate = weight * float(b_all.mean()) + float(rectifier.mean())
    variance = _cluster_variance([(b_all, b_clusters, weight), (rectifier, labelled_clusters, 1.0)])
    from scipy.stats import t

    clusters = min(len(set(labelled_clusters)), len(set(b_clusters)))
    half = float(t.ppf((1 + CONFIDENCE) / 2, clusters - 1)) * float(np.sqrt(variance))
    return Calibrated(estimate, estimate - half, estimate + half, weight, n, big_n)
