"""A server's head start: load at startup what the first submission and the first page would
otherwise wait for.
"""

from __future__ import annotations

import logging

from medvidbench.core.errors import NotFoundError
from medvidbench.server.runtime import Runtime

log = logging.getLogger("medvidbench")


def warm_up(runtime: Runtime) -> None:
    """Load what the first submission and the first page would otherwise wait for: each hosted
    benchmark's current test set, its scorers, embedding model with its class labels and the
    bootstrap's cluster draws, and its boards. Meant for a background thread at startup; a
    failure only means no head start. A benchmark with no test set loaded is one log line
    (naming the command that loads one), and the others still warm up."""
    for slug in runtime.hosted:
        try:
            _warm_up_benchmark(runtime, slug)
        except NotFoundError as exc:
            log.warning("warm-up skipped %r: %s", slug, exc.message)
        except Exception:  # never fatal: everything loads again on first use
            log.exception("warm-up of %r failed", slug)


def _warm_up_benchmark(runtime: Runtime, slug: str) -> None:
    from medvidbench.server.services.board_reads import KINDS
    from medvidbench.server.services.boards import board_rows
    from medvidbench.server.services.test_sets import current_benchmark

    bench = current_benchmark(runtime, slug)
    for kind in KINDS:
        board_rows(runtime, kind, bench.id)
    _scoring(runtime, slug, bench.gt_sha256)


def _scoring(runtime: Runtime, slug: str, gt_sha256: str) -> None:
    """What a score step of ``slug`` loads on its first run: the test set, the scorers, the
    embedding model and the cluster draws of the bootstrap (one per test set and process)."""
    gt = runtime.ground_truth(gt_sha256, slug)
    definition = runtime.definition(slug)
    definition.scorers()
    if definition.embedder is not None:
        definition.embedder()
    replicates = runtime.settings.bootstrap_replicates
    if replicates:
        from medvidbench.core.statistics import draw_cluster_counts

        clusters = {definition.uncertainty.cluster_of(item) for item in gt.samples}
        seed = runtime.bootstrap_seed(definition, gt_sha256)
        draw_cluster_counts(len(clusters), replicates, seed)
