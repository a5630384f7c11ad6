"""How sure is a number: cluster bootstrap intervals, paired differences and rank intervals.

Every board metric is written as a *ratio of sums* over test items: a weighted combination of
ratios ``sum(numerator feature) / sum(denominator feature)`` (a per-sample mean is one ratio; a
balanced accuracy is one ratio per dataset and aspect, weighted). Features are summed per
cluster (MedVidBench: the source video), so a bootstrap replicate is one vector of cluster
counts and every metric of every entry follows from one matrix product: no scorer is run
again and no judge is asked again.

The cluster counts depend only on the seed, the replicate count and the test set's clusters, so
two entries scored on the same test set share their replicates: their differences and their
rank positions are paired.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from medvidbench.core.benchmark import Metric

DEFAULT_REPLICATES = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
# Rank intervals use the first this many of an entry's stored replicates. The draws are
# independent and shared by every entry, so a prefix is a smaller bootstrap of the same kind,
# still paired; the metric intervals keep all of them. A rank interval is two integers read off
# the 2.5 and 97.5 percentiles of an entry's positions, and on boards like the real ones 200
# replicates move an end by at most one place against 1,000 (tests/test_statistics.py checks
# it), while a board ranks five times faster (docs/performance.md).
RANK_REPLICATES = 200


@dataclass(frozen=True, slots=True)
class Ratio:
    """One term of a metric: ``weight * sum(num) / sum(den)``, the weight itself multiplied by
    ``sum(share[0]) / sum(share[1])`` when given (a dataset's share of the samples, which a
    resample changes)."""

    num: str
    den: str
    weight: float = 1.0
    share: tuple[str, str] | None = None


@dataclass(slots=True)
class Linearised:
    """A task's per-sample features and its metrics written as ratios of their sums.

    Attributes:
        rows: ``(test-set index, {feature: value})`` per sample.
        formulas: Per metric key, its ratio terms. The metric is the weighted mean of the terms
            whose denominator is positive (weights renormalised over those).
    """

    rows: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    formulas: dict[str, list[Ratio]] = field(default_factory=dict)


def sample_means(results: Sequence[Any], keys: Sequence[str]) -> Linearised:
    """The default: each metric is the mean of its per-sample value over the samples that
    have one (a sample left out of the mean is left out here too)."""
    out = Linearised(formulas={k: [Ratio(k, f"{k}#n")] for k in keys})
    for r in results:
        feats: dict[str, float] = {}
        for k in keys:
            if r.values is not None and r.values.get(k) is not None:
                feats[k] = float(r.values[k])
                feats[f"{k}#n"] = 1.0
        out.rows.append((r.index, feats))
    return out


def point_values(part: Linearised, keys: Sequence[str]) -> dict[str, float | None]:
    """Each metric of ``keys`` on the whole set: its formula over the summed features (None
    when undefined: no term has a positive denominator, or no formula)."""
    names: dict[str, int] = {}
    for _, feats in part.rows:
        for name in feats:
            names.setdefault(name, len(names))
    for terms in part.formulas.values():
        for t in terms:
            for name in (t.num, t.den, *(t.share or ())):
                names.setdefault(name, len(names))
    sums = np.zeros(len(names))
    for _, feats in part.rows:
        for name, value in feats.items():
            sums[names[name]] += value
    out: dict[str, float | None] = {}
    for key in keys:
        formula = part.formulas.get(key)
        if not formula:
            out[key] = None
            continue
        value = float(evaluate_formula(formula, sums, names)[0])
        out[key] = None if np.isnan(value) else value
    return out


def evaluate_formula(terms: Sequence[Ratio], sums: np.ndarray, column: Mapping[str, int]) -> Any:
    """A metric from feature sums: ``sums`` is (features,) or (replicates, features)."""
    if not terms:
        return np.nan
    sums = np.atleast_2d(sums)
    num = sums[:, [column[t.num] for t in terms]]
    den = sums[:, [column[t.den] for t in terms]]
    weights = np.broadcast_to(np.array([t.weight for t in terms]), num.shape).copy()
    for j, t in enumerate(terms):
        if t.share is not None:
            top, bottom = sums[:, column[t.share[0]]], sums[:, column[t.share[1]]]
            with np.errstate(invalid="ignore", divide="ignore"):
                weights[:, j] *= np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), 0.0)
    valid = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(valid, num / np.where(valid, den, 1.0), 0.0)
    w = np.where(valid, weights, 0.0)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, (w * ratio).sum(axis=1) / np.where(total > 0, total, 1.0), np.nan)
    return out


@dataclass(slots=True)
class Design:
    """Clusters and features of one scored submission, ready to bootstrap.

    ``clusters`` is sorted, so a replicate's cluster counts mean the same for every submission
    scored on the same test set.
    """

    clusters: list[str]
    features: list[str]
    matrix: np.ndarray  # clusters x features: per-cluster sums
    formulas: dict[str, list[Ratio]]

    @classmethod
    def build(cls, parts: Sequence[Linearised], cluster_of_index: Sequence[str]) -> Design:
        clusters = sorted(set(cluster_of_index))
        where = {c: i for i, c in enumerate(clusters)}
        formulas: dict[str, list[Ratio]] = {}
        names: dict[str, int] = {}
        rows, cols, vals = [], [], []
        for part in parts:
            formulas.update(part.formulas)
            for index, feats in part.rows:
                c = where[cluster_of_index[index]]
                for name, value in feats.items():
                    rows.append(c)
                    cols.append(names.setdefault(name, len(names)))
                    vals.append(value)
        for terms in formulas.values():
            for t in terms:
                for name in (t.num, t.den, *(t.share or ())):
                    names.setdefault(name, len(names))
        flat = np.bincount(
            np.asarray(rows, dtype=np.int64) * len(names) + np.asarray(cols, dtype=np.int64),
            weights=np.asarray(vals, dtype=np.float64),
            minlength=len(clusters) * len(names),
        )
        matrix = flat.reshape(len(clusters), len(names))
        return cls(clusters, list(names), matrix, formulas)

    def column(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.features)}

    def point(self) -> dict[str, float]:
        """Each metric on the whole test set (equal to the report's, which tests check)."""
        sums = self.matrix.sum(axis=0)
        col = self.column()
        return {k: float(evaluate_formula(t, sums, col)[0]) for k, t in self.formulas.items()}

    def replicates(self, counts: np.ndarray, keys: Sequence[str]) -> np.ndarray:
        """Replicates x metrics (NaN where a metric is undefined or absent)."""
        sums = counts @ self.matrix
        col = self.column()
        out = np.full((counts.shape[0], len(keys)), np.nan)
        for j, k in enumerate(keys):
            if k in self.formulas:
                out[:, j] = evaluate_formula(self.formulas[k], sums, col)
        return out


def cluster_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """How often each cluster is drawn in each replicate (replicates x clusters), a function of
    (clusters, replicates, seed) alone, so a process draws them once per test set: a server's
    first bootstrap of a test set draws them, every later one reuses them. (Drawing them in
    the start-up warm-up made the first submission slower: the warm-up thread still ran when
    it arrived, bench/bench_server.py.)"""
    return _drawn_counts(n_clusters, replicates, seed).astype(np.float64)


@functools.lru_cache(maxsize=4)
def _drawn_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    # kept compact (a count never exceeds the number of clusters): 8 MB for 1,000 replicates
    # of 4,008 clusters, a quarter of the float64 matrix the product needs
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(replicates, n_clusters))
    # one small histogram per replicate stays in the CPU cache: 7-10x quicker than one
    # histogram of every replicate at once (the same counts)
    compact = np.empty((replicates, n_clusters), dtype=np.min_scalar_type(n_clusters))
    for row, drawn in zip(compact, draws, strict=True):
        row[:] = np.bincount(drawn, minlength=n_clusters)
    compact.flags.writeable = False
    return compact


def interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The percentile interval of bootstrap values (None when no replicate is defined)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(v, [tail, 100 - tail])
    return float(lo), float(hi)


@dataclass(slots=True)
class Bootstrap:
    """A submission's bootstrap: settings, intervals and the replicates (for pairing)."""

    seed: int
    replicates: int
    confidence: float
    cluster_rule: str
    clusters: int
    keys: list[str]
    values: np.ndarray  # replicates x keys
    intervals: dict[str, tuple[float, float] | None]

    def to_dict(self, with_replicates: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": "cluster bootstrap, percentile interval",
            "seed": self.seed,
            "replicates": self.replicates,
            "confidence": self.confidence,
            "cluster_rule": self.cluster_rule,
            "clusters": self.clusters,
            "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
        }
        if with_replicates:
            out["keys"] = self.keys
            out["values"] = base64.b64encode(self.values.astype("<f4").tobytes()).decode()
        return out

    @staticmethod
    def stamp(data: Mapping[str, Any] | None) -> tuple[Any, Any, Any] | None:
        """What makes two stored bootstraps pair up (replicates, seed, clusters); None without
        stored replicates."""
        if not data or "values" not in data:
            return None
        return data["replicates"], data["seed"], data.get("clusters")

    @staticmethod
    def aligned(data: Mapping[str, Any], keys: Sequence[str]) -> np.ndarray:
        """Stored replicates as replicates x ``keys`` (NaN for a key it does not hold)."""
        got = Bootstrap.replicates_of(data)
        assert got is not None, "no replicates stored"
        stored, values = got
        out = np.full((values.shape[0], len(keys)), np.nan)
        where = {k: j for j, k in enumerate(stored)}
        for n, key in enumerate(keys):
            if key in where:
                out[:, n] = values[:, where[key]]
        return out

    @staticmethod
    def replicates_of(data: Mapping[str, Any]) -> tuple[list[str], np.ndarray] | None:
        """The stored replicates of a ``to_dict(with_replicates=True)`` document."""
        if "values" not in data or "keys" not in data:
            return None
        keys = list(data["keys"])
        raw = np.frombuffer(base64.b64decode(data["values"]), dtype="<f4").astype(np.float64)
        return keys, raw.reshape(int(data["replicates"]), len(keys))


def public(statistics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored bootstrap without its replicates (what pages, the API and exports show)."""
    if not statistics:
        return None
    return {k: v for k, v in statistics.items() if k not in ("keys", "values")}


def bootstrap(
    design: Design,
    keys: Sequence[str],
    cluster_rule: str,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> Bootstrap:
    counts = cluster_counts(len(design.clusters), replicates, seed)
    values = design.replicates(counts, keys)
    return Bootstrap(
        seed,
        replicates,
        confidence,
        cluster_rule,
        len(design.clusters),
        list(keys),
        values,
        {k: interval(values[:, j], confidence) for j, k in enumerate(keys)},
    )


@dataclass(frozen=True, slots=True)
class Difference:
    """``a - b`` for one metric, with its paired bootstrap interval."""

    metric: str
    difference: float | None
    interval: tuple[float, float] | None

    @property
    def distinguishable(self) -> bool | None:
        """Whether the interval excludes 0 (None: no interval)."""
        if self.interval is None:
            return None
        lo, hi = self.interval
        return lo > 0 or hi < 0


def paired(
    a: np.ndarray,
    b: np.ndarray,
    keys: Sequence[str],
    point_a: Mapping[str, float | None],
    point_b: Mapping[str, float | None],
    confidence: float = CONFIDENCE,
) -> list[Difference]:
    """Per metric, the difference of two entries' values and its interval from their shared
    replicates (both ``replicates x keys``, drawn with the same seed on the same test set)."""
    out = []
    for j, k in enumerate(keys):
        pa, pb = point_a.get(k), point_b.get(k)
        diff = None if pa is None or pb is None else float(pa) - float(pb)
        iv = interval(a[:, j] - b[:, j], confidence) if diff is not None else None
        out.append(Difference(k, diff, iv))
    return out


def _min_ranks(values: np.ndarray) -> np.ndarray:
    """Row by row, competition ("min") ranks of ascending values: ties share the smaller rank
    (1, 1, 3). Vectorised: one sort of the whole matrix."""
    rows, cols = values.shape
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    new = np.ones((rows, cols), dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(cols), 0), axis=1)
    ranks = np.empty((rows, cols), dtype=np.float64)
    np.put_along_axis(ranks, order, first + 1.0, axis=1)
    return ranks


# A missing value's code: after every present one (see :func:`rank_codes`).
MISSING_CODE = np.iinfo(np.int64).max
_INFINITE_CODE = 2**62  # beyond rint(v * 1000) of any finite metric value


def rank_codes(values: np.ndarray, metrics: Sequence[Metric]) -> np.ndarray:
    """Integer codes of ``values`` (..., metrics) that order and tie as the board ranks them,
    best first: per ranked metric, ``rint(v * 1000)``, negated where higher is better, and
    :data:`MISSING_CODE` for a missing value. Returns (..., ranked metrics).

    ``np.round(v, 3)`` is ``rint(v * 1000) / 1000``, so the codes compare and tie exactly as
    the rounded values do.

    Examples:
        >>> from medvidbench.core.benchmark import Metric
        >>> rank_codes(np.array([0.5004, np.nan]), [Metric("a", "A", "t", "a")]).tolist()
        [-500, 9223372036854775807]
    """
    ranked = [j for j, m in enumerate(metrics) if m.ranked]
    sign = np.array([-1.0 if metrics[j].higher_is_better else 1.0 for j in ranked])
    v = values[..., ranked] * sign
    missing = np.isnan(v)
    scaled = np.rint(np.where(missing, 0.0, v) * 1000.0)
    codes = np.clip(scaled, -_INFINITE_CODE, _INFINITE_CODE).astype(np.int64)
    codes[missing] = MISSING_CODE
    return codes


def _replicate_ranks(codes: np.ndarray) -> np.ndarray:
    """Competition ("min") ranks of entries x replicates codes within each replicate (column):
    1 + the number of smaller codes; :data:`MISSING_CODE` ranks after every present code.

    By counting when the codes span little against the number of entries (a metric rounded to
    3 decimals spans about a thousand codes): one histogram of every replicate at once, each
    offset by its replicate, and one running sum. Otherwise by one sort of each replicate.
    """
    entries, reps = codes.shape
    low = int(codes.min(initial=0))
    high = int(np.max(codes, where=codes != MISSING_CODE, initial=low))
    span = high - low + 2  # the last bin holds the missing values
    if span > 2 * entries:
        return _sorted_ranks(np.minimum(codes, high + 1) - low, span)
    bins = np.minimum(codes, high + 1)
    bins += np.arange(reps, dtype=np.int64) * span - low
    smaller = np.bincount(bins.ravel(), minlength=reps * span)
    hist = smaller.copy()
    np.cumsum(smaller, out=smaller)
    smaller -= hist  # codes before each bin, every earlier replicate's too
    ranks: np.ndarray = smaller[bins]
    ranks -= np.arange(reps, dtype=np.int64) * entries - 1  # each earlier replicate's entries
    return ranks


def _sorted_ranks(codes: np.ndarray, span: int) -> np.ndarray:
    """:func:`_replicate_ranks` of codes in [0, ``span``) by sorting each replicate: the keys
    ``code * entries + entry`` sort as the codes and carry the entry along (a sort of integers
    is far quicker than an argsort)."""
    entries, reps = codes.shape
    if span * entries >= 2**62:
        return _min_ranks(codes.T).T.astype(np.int64)
    keys = codes.T * entries + np.arange(entries, dtype=np.int64)
    keys.sort(axis=1)
    ordered, entry = np.divmod(keys, entries)
    new = np.ones(keys.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(entries), 0), axis=1)
    ranks = np.empty((reps, entries), dtype=np.int64)
    np.put_along_axis(ranks, entry, first + 1, axis=1)
    return ranks.T


def rank_intervals(
    values: np.ndarray, metrics: Sequence[Metric], confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Each entry's board position in every replicate, and its interval.

    ``values`` is entries x replicates x metrics (a reported row repeats its fixed values).
    Positions follow the published rule's first key: each ranked metric's competition rank
    (3 decimals, its direction, missing last), averaged; an entry's position is 1 + the number
    of entries with a strictly better average. Returns (positions: replicates x entries,
    intervals: entries x 2).
    """
    codes = rank_codes(values, metrics)  # entries x replicates x ranked metrics
    return rank_intervals_of_codes(np.ascontiguousarray(codes.transpose(2, 0, 1)), confidence)


def rank_intervals_of_codes(
    codes: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_intervals` from :func:`rank_codes` laid out ranked metrics x entries x
    replicates (what a board keeps of each entry, so that ranking again rounds nothing)."""
    _, entries, reps = codes.shape
    total = np.zeros((entries, reps), dtype=np.int64)
    for by_metric in codes:
        total += _replicate_ranks(by_metric)
    # the averages share one denominator, so their order and ties are those of the sums
    positions = _replicate_ranks(total)
    tail = (1 - confidence) / 2 * 100
    bounds = np.percentile(positions, [tail, 100 - tail], axis=1).T
    return positions.T, np.rint(bounds).astype(int)


def tie_groups(order: Sequence[int], bounds: np.ndarray) -> list[int]:
    """Group numbers along the official order: a row joins the group above it when its rank
    interval overlaps the interval of the group's first row (not distinguishable from it)."""
    groups: list[int] = []
    head = None
    for i in order:
        if head is None or bounds[i][0] > bounds[head][1]:
            head = i
            groups.append((groups[-1] + 1) if groups else 1)
        else:
            groups.append(groups[-1])
    return groups
