"""Saturation: when the policy outgrows the reference its statistics were fitted on.

MedGRPO's logistic is steepest at the reference's median and flat far above it. Once a policy's
median raw term passes the reference's by about one IQR (k = 3), its normalised rewards crowd
near 1 and the differences GRPO learns from (within a group of completions for one prompt)
shrink several-fold: the fix is to fit the statistics again, on the policy's own outputs
(``medvidbench rewards fit --rollouts``). The :class:`SaturationMonitor` watches the raw terms
the rewarder computes and warns once per (task, dataset, term) when that happens.
"""

from __future__ import annotations

import threading
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from medvidbench.core.rewards import JUDGE, SCORE, SIMILARITY, Normaliser, logistic

DEFAULT_MARGIN = 1.0  # IQRs above the reference's median: normalised median 0.95 at k = 3
WINDOW = 256  # the policy's latest raw values kept per group
MIN_OBSERVED = 64  # fewest values before a group is judged


class RewardSaturationWarning(UserWarning):
    """The policy's median raw reward is past the reference's by more than the margin."""


@dataclass(frozen=True, slots=True)
class Saturation:
    """One group's standing against the reference.

    Attributes:
        benchmark, task, dataset, term: The group (its reference statistics are the
            dataset's own, or its task's pool for a small or unseen dataset).
        n: The policy's values it is judged on (the latest, at most ``WINDOW``).
        policy_median: The policy's median raw term.
        reference_median: The reference's (the statistics' p50).
        scale: The statistics' divisor (the reference's IQR, else its standard deviation).
        normalised_median: What the policy's median raw term is normalised to.
    """

    benchmark: str
    task: str
    dataset: str
    term: str
    n: int
    policy_median: float
    reference_median: float
    scale: float
    normalised_median: float

    @property
    def margin(self) -> float:
        """How far the policy's median is above the reference's, in units of ``scale``."""
        return (self.policy_median - self.reference_median) / self.scale

    def message(self) -> str:
        where = f"{self.task} ({self.dataset})"
        return (
            f"medvidbench rewards: saturating on {self.benchmark} {where}, term {self.term}: "
            f"the policy's median raw value {self.policy_median:.3f} is {self.margin:.1f} IQRs "
            f"above the reference's {self.reference_median:.3f} (normalised to "
            f"{self.normalised_median:.3f}), so the normalised rewards of a group differ "
            "little; fit the statistics again on the policy's own outputs "
            "(`medvidbench rewards fit --rollouts FILE`)"
        )


class SaturationMonitor:
    """Keeps the policy's latest raw terms per group and compares their median with the
    reference's.

    Args:
        normalisers: The rewarder's normalisers by benchmark slug.
        margin: IQRs above the reference's median at which a group counts as saturated.
        window: The latest values kept per group.
        min_observed: Fewest values before a group is judged.
    """

    def __init__(
        self,
        normalisers: Mapping[str, Normaliser],
        margin: float = DEFAULT_MARGIN,
        window: int = WINDOW,
        min_observed: int = MIN_OBSERVED,
    ) -> None:
        self.normalisers = normalisers
        self.margin = margin
        self.window = window
        self.min_observed = min_observed
        self._values: dict[tuple[str, str, str, str], deque[float]] = {}
        self._warned: set[tuple[str, str, str, str]] = set()
        self._lock = threading.Lock()  # verl's reward workers share one rewarder

    def observe(
        self,
        benchmark: Sequence[str],
        task: Sequence[str],
        dataset: Sequence[str],
        terms: Mapping[str, np.ndarray],
    ) -> list[Saturation]:
        """Add a batch's raw terms; warns (:class:`RewardSaturationWarning`) for each group
        newly saturated and returns those."""
        touched = set()
        fresh = []
        with self._lock:
            for i, slug in enumerate(benchmark):
                if slug not in self.normalisers:
                    continue
                for term in (SCORE, SIMILARITY, JUDGE):
                    v = float(terms[term][i])
                    if np.isnan(v):
                        continue
                    key = (slug, task[i], dataset[i], term)
                    self._values.setdefault(key, deque(maxlen=self.window)).append(v)
                    touched.add(key)
            for key in sorted(touched):
                found = self._judge(key)
                if found is not None and key not in self._warned:
                    self._warned.add(key)
                    fresh.append(found)
        for found in fresh:
            warnings.warn(found.message(), RewardSaturationWarning, stacklevel=4)
        return fresh

    def status(self) -> list[Saturation]:
        """Every group currently saturated."""
        with self._lock:
            return [s for key in sorted(self._values) if (s := self._judge(key)) is not None]

    def _standing(self, key: tuple[str, str, str, str]) -> Saturation | None:
        """A group's standing (None: too few values, or no statistics for it); the lock held."""
        values = self._values.get(key)
        if values is None or len(values) < self.min_observed:
            return None
        slug, task, dataset, term = key
        normaliser = self.normalisers[slug]
        q, _ = normaliser.stats.lookup(task, dataset, term)
        if q is None:
            return None
        scale, _ = q.scale()
        median = float(np.median(np.fromiter(values, dtype=np.float64)))
        normalised = float(logistic(np.array([median]), q.p50, scale, normaliser.k)[0])
        return Saturation(
            slug,
            task,
            dataset,
            term,
            len(values),
            median,
            q.p50,
            scale,
            normalised,
        )

    def _judge(self, key: tuple[str, str, str, str]) -> Saturation | None:
        found = self._standing(key)
        return found if found is not None and found.margin > self.margin else None
