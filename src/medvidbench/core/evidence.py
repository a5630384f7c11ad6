"""Per-item evidence of an evaluation: every item's value of every metric, numbers only.

An evaluation's headline numbers are aggregates of per-item values; the evidence keeps those
values so that models can be compared item by item (a Plackett-Luce fit over per-item orders,
pooled across benchmarks: :mod:`medvidbench.core.consensus`). For each metric produced per
item, over the items of its task in test order: the value (float32; NaN where there is none)
and a status (:data:`SCORED`, :data:`UNREADABLE`: the answer could not be read and the profile
scored it as it scores such answers, :data:`EXCLUDED`: a rule left the item out, :data:`MISSING`:
not submitted, not judged, or the judge failed). Missing is never zero.

An item is named by its key (the benchmark's ``sample_id``), which stays the same when a test
set is re-issued with the same items; the cluster of each item (``cluster_of``) travels with
it, so that intervals resample what the benchmark resamples.

The encoded form (:meth:`Evidence.encode`) is compact: float32 values and uint8 statuses per
metric, zlib-compressed, without the items (their keys, tasks and clusters are the test set's:
:func:`items_of`, given back to :func:`decode`): for a 6,245-question MedVidBench evaluation,
about 10 KB without a judge and at most about 33 KB with every metric scored on every item
(``bench/bench_evidence.py``). For a benchmark whose test labels are hidden, evidence never
leaves the server: nothing but aggregates derived from it (rankings, intervals) is ever shown.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medvidbench.core.scoring import TaskResult

if TYPE_CHECKING:  # numpy is imported only where evidence is made or read, so that a plain
    import numpy as np  # evaluation (a cold command line) never loads it

SCORED, UNREADABLE, EXCLUDED, MISSING = 0, 1, 2, 3
STATUS_NAMES = {
    SCORED: "scored",
    UNREADABLE: "unreadable",
    EXCLUDED: "excluded",
    MISSING: "missing",
}
FORMAT = 1


@dataclass(slots=True)
class MetricEvidence:
    """One metric's per-item values over its task's items (in test order)."""

    task: str
    values: np.ndarray  # float32, NaN where there is no value
    status: np.ndarray  # uint8 statuses


@dataclass(slots=True)
class Evidence:
    """Per-item evidence of one evaluation.

    Attributes:
        benchmark: The benchmark's slug.
        test_set: The test set's sha256.
        profile: The profile scored under; ``judge``: the judge configuration id of its judged
            metrics ("" when none was judged).
        keys: Every item's key, in test order; ``tasks`` and ``clusters`` per item.
        metrics: Per metric key, its values and statuses over its task's items.
    """

    benchmark: str
    test_set: str
    profile: str
    judge: str
    keys: list[str]
    tasks: list[str]
    clusters: list[str]
    metrics: dict[str, MetricEvidence] = field(default_factory=dict)

    def positions(self, task: str) -> np.ndarray:
        """The test-set positions of a task's items, in test order."""
        import numpy as np

        return np.flatnonzero(np.asarray(self.tasks) == task)

    def encode(self) -> bytes:
        """The values and statuses as compact bytes, without the items (the test set's: see
        :func:`decode`)."""
        import numpy as np

        head = {
            "format": FORMAT,
            "benchmark": self.benchmark,
            "test_set": self.test_set,
            "profile": self.profile,
            "judge": self.judge,
            "items": len(self.keys),
            "metrics": [[k, m.task, len(m.values)] for k, m in self.metrics.items()],
        }
        parts = [json.dumps(head).encode()]
        for m in self.metrics.values():
            parts += [m.values.astype("<f4").tobytes(), m.status.astype(np.uint8).tobytes()]
        frame = b"".join(len(p).to_bytes(4, "little") + p for p in parts)
        return zlib.compress(frame, 6)

    def to_dict(self) -> dict[str, Any]:
        """A JSON form (the offline report's ``per_item``; a server never shows it)."""
        import numpy as np

        return {
            "format": FORMAT,
            "benchmark": self.benchmark,
            "test_set": self.test_set,
            "profile": self.profile,
            "judge": self.judge,
            "keys": self.keys,
            "tasks": self.tasks,
            "clusters": self.clusters,
            "metrics": {
                k: {
                    "task": m.task,
                    "values": [None if np.isnan(v) else float(v) for v in m.values],
                    "status": [int(s) for s in m.status],
                }
                for k, m in self.metrics.items()
            },
        }


@dataclass(frozen=True, slots=True)
class Items:
    """A test set's items as evidence names them: keys, tasks and clusters, in test order."""

    keys: list[str]
    tasks: list[str]
    clusters: list[str]


def items_of(benchmark: Any, samples: Sequence[Any]) -> Items:
    """The items of a test set (its samples), clustered as the benchmark clusters them."""
    cluster_of = benchmark.uncertainty.cluster_of
    return Items(
        [str(s.sample_id) for s in samples],
        [str(s.task) for s in samples],
        [str(cluster_of(s)) for s in samples],
    )


def decode(blob: bytes, items: Items) -> Evidence:
    """Evidence from :meth:`Evidence.encode`'s bytes and the test set's items.

    Raises:
        ValueError: not evidence of this format, or of another test set's size.
    """
    import numpy as np

    frame = zlib.decompress(blob)
    parts, at = [], 0
    while at < len(frame):
        size = int.from_bytes(frame[at : at + 4], "little")
        parts.append(frame[at + 4 : at + 4 + size])
        at += 4 + size
    head = json.loads(parts[0])
    if head.get("format") != FORMAT:
        raise ValueError(f"unknown evidence format {head.get('format')!r}")
    if head["items"] != len(items.keys):
        raise ValueError(f"evidence of {head['items']} items, a test set of {len(items.keys)}")
    out = Evidence(
        head["benchmark"],
        head["test_set"],
        head["profile"],
        head["judge"],
        items.keys,
        items.tasks,
        items.clusters,
    )
    for n, (key, task, _) in enumerate(head["metrics"]):
        values = np.frombuffer(parts[1 + 2 * n], dtype="<f4").astype(np.float32)
        status = np.frombuffer(parts[2 + 2 * n], dtype=np.uint8).copy()
        out.metrics[key] = MetricEvidence(task, values, status)
    return out


def from_dict(data: Mapping[str, Any]) -> Evidence:
    """Evidence from :meth:`Evidence.to_dict` (an offline report's ``per_item``).

    Raises:
        ValueError: not evidence of this format, or values and items that do not line up.
    """
    import numpy as np

    if data.get("format") != FORMAT:
        raise ValueError(f"unknown evidence format {data.get('format')!r}")
    out = Evidence(
        str(data["benchmark"]),
        str(data["test_set"]),
        str(data["profile"]),
        str(data.get("judge", "")),
        [str(k) for k in data["keys"]],
        [str(t) for t in data["tasks"]],
        [str(c) for c in data["clusters"]],
    )
    for key, m in data["metrics"].items():
        values = np.array([np.nan if v is None else v for v in m["values"]], dtype=np.float32)
        status = np.array(m["status"], dtype=np.uint8)
        if len(values) != len(status) or len(values) != len(out.positions(m["task"])):
            raise ValueError(f"metric {key!r}: values and items do not line up")
        out.metrics[key] = MetricEvidence(str(m["task"]), values, status)
    return out


def gather(
    benchmark: Any,
    samples: Sequence[Any],
    results: Sequence[TaskResult],
    profile: str,
    test_set: str,
    judge: str = "",
) -> Evidence:
    """The evidence of an evaluation's task results (rule-based and judged), over every item
    of the test set: a metric of a task that was not scored (left out, not judged) is missing
    on every item of its task."""
    import numpy as np

    items = items_of(benchmark, samples)
    out = Evidence(
        benchmark.slug, test_set, profile, judge, items.keys, items.tasks, items.clusters
    )
    where = {t: {int(i): n for n, i in enumerate(out.positions(t))} for t in set(out.tasks)}
    # the result producing each metric (a task may have a rule-based and a judged one); a judged
    # result withheld because the judge failed gives nothing
    producer = {
        key: r
        for r in results
        if r.diagnostics.get("status") != "judge failed"
        for key in r.metrics
    }
    for metric in benchmark.metrics:
        if not metric.task or metric.task not in where:
            continue
        count = len(where[metric.task])
        values = np.full(count, np.nan, dtype=np.float32)
        status = np.full(count, MISSING, dtype=np.uint8)
        result = producer.get(metric.key)
        if result is not None:
            for r in result.samples:
                n = where[metric.task][r.index]
                value = (r.values or {}).get(metric.key)
                if value is None:
                    status[n] = EXCLUDED if r.values is None or r.parsed else UNREADABLE
                    continue
                values[n] = value
                status[n] = SCORED if r.parsed else UNREADABLE
        out.metrics[metric.key] = MetricEvidence(metric.task, values, status)
    return out
