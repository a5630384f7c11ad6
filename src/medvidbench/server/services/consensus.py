"""The consensus board: which model is best across the hosted benchmarks (core/consensus.py).

Its entries are models: each hosted benchmark's community board is read (every public, scored
submission it shows, with the evaluation it shows), and a model is a normalised model name
(``model_key``) shared across benchmarks; should a board show one name twice, its newest
submission counts. Each evaluation brings its metrics, its stored
bootstrap replicates and its per-item evidence, read here from the database and the test set's
items; only the aggregations computed from them leave this module, never the evidence. The
result is computed once per change of any board and kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from medvidbench.core.consensus import Aggregation, Result, aggregate, families
from medvidbench.core.errors import NotFoundError
from medvidbench.core.evidence import Items, decode, items_of
from medvidbench.core.statistics import Bootstrap, usable
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.board_reads import read_board
from medvidbench.server.services.submissions import model_key
from medvidbench.server.services.test_sets import current_benchmark
from medvidbench.server.store import board_cache
from medvidbench.server.store.models import Evaluation, EvaluationEvidence


@dataclass(frozen=True, slots=True)
class Consensus:
    """The aggregations, and what went into them."""

    aggregations: list[Aggregation]
    benchmarks: list[str]  # slugs, in the hosted order
    demo: bool  # a benchmark's test set is demo data
    models: int
    family: str | None


def consensus(runtime: Runtime, family: str | None = None) -> Consensus:
    """Every aggregation over the hosted benchmarks' community boards (``family``: only tasks
    of that capability family), computed once per change of any of them."""
    found = [(slug, _test_set_id(runtime, slug)) for slug in runtime.hosted]
    hosted = [(slug, tid) for slug, tid in found if tid is not None]
    with runtime.sessions() as session:
        # generations only grow, so their sum changes whenever any board changes
        generation = sum(board_cache.generation(session, tid) for _, tid in hosted)
    key = ("consensus", tuple(t for _, t in hosted), family)
    return runtime.boards.get(key, generation, lambda: _compute(runtime, hosted, family))


def _test_set_id(runtime: Runtime, slug: str) -> int | None:
    try:
        return current_benchmark(runtime, slug).id
    except NotFoundError:  # no test set loaded for it yet
        return None


def _compute(runtime: Runtime, hosted: list[tuple[str, int]], family: str | None) -> Consensus:
    results: list[Result] = []
    demo = False
    names: dict[str, str] = {}  # model key -> the name shown (the first seen)
    for slug, test_set_id in hosted:
        read = read_board(runtime, "community", test_set_id)
        demo = demo or read.demo
        shown = {
            e.submission_id: read.evals[e.submission_id]
            for e in read.entries
            if e.submission_id in read.evals
        }
        stored = _stored(runtime, [s.id for s in shown.values()])
        items = _items(runtime, slug, test_set_id)
        newest: dict[str, Any] = {}  # model key -> its newest scored entry on this board
        for entry in read.entries:
            if entry.submission_id in shown:  # else a reported row: nothing per item
                key = model_key(entry.model_name)
                if key not in newest or entry.submission_id > newest[key].submission_id:
                    newest[key] = entry
        for key, entry in newest.items():
            ev = shown[entry.submission_id]
            name = names.setdefault(key, entry.model_name)
            statistics, blob = stored.get(ev.id, (None, None))
            statistics = usable(statistics, read.definition.labels)
            replicates = Bootstrap.replicates_of(statistics) if statistics else None
            evidence = decode(blob, items) if blob is not None and items is not None else None
            results.append(Result(name, read.definition, ev.metrics, replicates, evidence))
    # a family of none of the boards' benchmarks: nothing to rank (aggregate would refuse it)
    present = family is None or family in families(r.benchmark for r in results)
    seed = resample_seed(runtime, hosted)
    found = aggregate(results, seed=seed, family=family) if results and present else []
    models = len({r.model for r in results})
    return Consensus(found, [s for s, _ in hosted], demo, models, family)


def _stored(runtime: Runtime, ids: list[int]) -> dict[int, tuple[Any, bytes | None]]:
    """The statistics and the encoded evidence of these evaluations."""
    if not ids:
        return {}
    with runtime.sessions() as session:
        rows = session.execute(
            select(Evaluation.id, Evaluation.statistics, EvaluationEvidence.data)
            .outerjoin(EvaluationEvidence, EvaluationEvidence.evaluation_id == Evaluation.id)
            .where(Evaluation.id.in_(ids))
        ).all()
    return {int(i): (stats, data) for i, stats, data in rows}


def resample_seed(runtime: Runtime, hosted: list[tuple[str, int]]) -> int:
    """The seed of the Plackett-Luce resamples, which draw the hosted test sets' items: one
    from every hosted benchmark's bootstrap seed (the server's secret for hidden labels,
    :meth:`Runtime.bootstrap_seed`), so that they too are drawn with no seed anyone knows."""
    import hashlib

    definitions = [runtime.definition(slug) for slug, _ in hosted]
    if all(d.labels == "public" for d in definitions):
        return runtime.settings.bootstrap_seed  # public labels only: the known seed, as offline
    seeds = [
        str(runtime.bootstrap_seed(d, current_benchmark(runtime, d.slug).gt_sha256))
        for d in definitions
    ]
    digest = hashlib.sha256(" ".join(seeds).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _items(runtime: Runtime, slug: str, test_set_id: int) -> Items | None:
    """The test set's items (keys, tasks, clusters), as evidence names them."""
    definition = runtime.definition(slug)
    test_set = current_benchmark(runtime, slug)
    if test_set.id != test_set_id:
        return None
    gt = runtime.ground_truth(test_set.gt_sha256, slug)
    return items_of(definition, gt.samples)
