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
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from medvidbench.core.intervals import (
    CONFIDENCE,
    interval,
    metric_interval,
    minimum_detectable,
    paired_interval,
)

__all__ = ["CONFIDENCE", "interval"]

DEFAULT_REPLICATES = 1000
DEFAULT_SEED = 0


@dataclass(frozen=True, slots=True)
class Ratio:
    """One term of a metric: ``weight * sum(num) / sum(den)``, the weight itself multiplied by
    ``sum(share[0]) / sum(share[1])`` when given (a dataset's share of the samples, which a
    resample changes).

    ``present`` groups the terms of one part (a dataset) whose rule scores the part 0 when it
    has nothing countable (the published leaderboard's SA/CVS datasets, v1 DVC_F1's): the
    terms sharing it form one unit, weighted by the sum of their weights, worth the weighted
    mean of its defined terms, or 0 where none is defined but ``sum(present)`` is positive (the
    dataset was drawn, with only unreadable answers), as the task's own aggregation scores
    it; a unit not drawn is left out. A term without it is its own unit, left out where
    ``sum(den)`` is 0 (the weights renormalise over the others)."""

    num: str
    den: str
    weight: float = 1.0
    share: tuple[str, str] | None = None
    present: str | None = None


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
            for name in _feature_names(t):
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


def _feature_names(term: Ratio) -> tuple[str, ...]:
    return (term.num, term.den, *(term.share or ()), *((term.present,) if term.present else ()))


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
    units = [j for j, t in enumerate(terms) if t.present is None]
    unit_w = [np.where(valid[:, units], weights[:, units], 0.0)]
    unit_v = [ratio[:, units]]
    groups: dict[str, list[int]] = {}
    for j, t in enumerate(terms):
        if t.present is not None:
            groups.setdefault(t.present, []).append(j)
    for present, members in groups.items():
        w = np.where(valid[:, members], weights[:, members], 0.0)
        inside = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(
                inside > 0, (w * ratio[:, members]).sum(axis=1) / np.where(inside > 0, inside, 1), 0
            )
        drawn = sums[:, column[present]] > 0
        unit_w.append(np.where(drawn, weights[:, members].sum(axis=1), 0.0)[:, None])
        unit_v.append(value[:, None])
    w, v = np.concatenate(unit_w, axis=1), np.concatenate(unit_v, axis=1)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, (w * v).sum(axis=1) / np.where(total > 0, total, 1.0), np.nan)
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
                for name in _feature_names(t):
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

    def clusters_of(self, key: str) -> int:
        """How many clusters hold an item that counts in metric ``key`` (its denominators, or
        its ``present`` features): the number of independent pieces of evidence behind it."""
        col = self.column()
        names = {
            col[n] for t in self.formulas.get(key, ()) for n in (t.den, t.present) if n is not None
        }
        if not names:
            return 0
        return int((self.matrix[:, sorted(names)] > 0).any(axis=1).sum())

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
    start-up warm-up draws them (:func:`draw_cluster_counts`), every bootstrap reuses them."""
    return draw_cluster_counts(n_clusters, replicates, seed).astype(np.float64)


_DRAWING = threading.Lock()


def draw_cluster_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """The cluster counts, drawn once per process: a caller arriving while another thread
    draws them (a first submission during a server's warm-up) waits for those instead of
    drawing them a second time alongside (which once made the first submission slower)."""
    with _DRAWING:
        return _drawn_counts(n_clusters, replicates, seed)


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
    # per metric: the clusters holding its items, and whether its interval was widened (few
    # clusters, or every replicate alike: core/intervals.py)
    metric_clusters: dict[str, int] = field(default_factory=dict)
    widened: list[str] = field(default_factory=list)

    def to_dict(self, with_replicates: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": METHOD,
            "seed": self.seed,
            "replicates": self.replicates,
            "confidence": self.confidence,
            "cluster_rule": self.cluster_rule,
            "clusters": self.clusters,
            "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
            "metric_clusters": dict(self.metric_clusters),
            "widened": list(self.widened),
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


def usable(statistics: Mapping[str, Any] | None, labels: str) -> Mapping[str, Any] | None:
    """A stored bootstrap as a server may use and show it, on a benchmark whose labels are
    ``labels``: None (as if none was drawn) for one of a benchmark whose labels are not public
    that was drawn with a seed anyone knows (stored before the seed was kept secret). Its
    intervals, set beside those of a submission made to differ on a few items, would tell
    which of those items each got right."""
    if statistics is None or labels == "public" or statistics.get("seed_secret"):
        return statistics
    return None


def public(statistics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored bootstrap without its replicates (what pages, the API and exports show), and
    without its seed when that is the server's secret (``seed`` None, ``seed_secret`` true)."""
    if not statistics:
        return None
    out = {k: v for k, v in statistics.items() if k not in ("keys", "values")}
    if out.get("seed_secret"):
        out["seed"] = None
    return out


METHOD = (
    "cluster bootstrap, percentile interval; below 30 clusters widened to a cluster-robust t "
    "interval (G-1 degrees of freedom); never a single point (Wilson)"
)


def bootstrap(
    design: Design,
    keys: Sequence[str],
    cluster_rule: str,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> Bootstrap:
    """Every metric of ``keys``: replicates and interval (``bounds``: each metric's scale, which
    an interval stays within and which lets an all-alike one be given a width)."""
    counts = cluster_counts(len(design.clusters), replicates, seed)
    values = design.replicates(counts, keys)
    point = design.point()
    intervals: dict[str, tuple[float, float] | None] = {}
    clusters, widened = {}, []
    for j, k in enumerate(keys):
        clusters[k] = design.clusters_of(k)
        found, wider = metric_interval(
            values[:, j], point.get(k), clusters[k], (bounds or {}).get(k), confidence
        )
        intervals[k] = found
        if wider:
            widened.append(k)
    return Bootstrap(
        seed,
        replicates,
        confidence,
        cluster_rule,
        len(design.clusters),
        list(keys),
        values,
        intervals,
        clusters,
        widened,
    )


@dataclass(frozen=True, slots=True)
class Difference:
    """``a - b`` for one metric, with its paired bootstrap interval."""

    metric: str
    difference: float | None
    interval: tuple[float, float] | None
    # the smallest true difference a paired 5 % test finds in 80 % of test sets like this one
    detectable: float | None = None
    # the two agree on every resample (the same answers scored the same): no interval to show
    identical: bool = False

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
    clusters: Mapping[str, int] | None = None,
) -> list[Difference]:
    """Per metric, the difference of two entries' values and its interval from their shared
    replicates (both ``replicates x keys``, drawn with the same seed on the same test set);
    ``clusters``: per metric, the clusters its items fall in (the bootstrap's
    ``metric_clusters``), below :data:`~medvidbench.core.intervals.FEW_CLUSTERS` of which the
    interval is widened and the detectable difference uses t quantiles."""
    out = []
    for j, k in enumerate(keys):
        pa, pb = point_a.get(k), point_b.get(k)
        diff = None if pa is None or pb is None else float(pa) - float(pb)
        spread = a[:, j] - b[:, j]
        if diff == 0 and not np.nanmax(np.abs(spread), initial=0.0):
            out.append(Difference(k, 0.0, None, None, identical=True))
            continue
        if diff is None:
            out.append(Difference(k, None, None, None))
            continue
        g = (clusters or {}).get(k)
        iv, _ = paired_interval(spread, diff, g, confidence)
        out.append(Difference(k, diff, iv, minimum_detectable(spread, g)))
    return out
