"""A server's head start: load at startup what the first submission and the first page would
otherwise wait for.
"""

from __future__ import annotations

from medvidbench.server.runtime import Runtime


def warm_up(runtime: Runtime) -> None:
    """Load what the first submission and the first page would otherwise wait for: the
    current test set, the scorers, the embedding model with its class labels, and both boards.
    Meant for a background thread at startup; a failure only means no head start."""
    import logging

    try:
        from medvidbench.server.services.boards import KINDS, board_rows
        from medvidbench.server.services.test_sets import current_benchmark

        for slug in runtime.hosted:
            bench = current_benchmark(runtime, slug)
            for kind in KINDS:
                board_rows(runtime, kind, bench.id)
            runtime.ground_truth(bench.gt_sha256, slug)
            definition = runtime.definition(slug)
            definition.scorers()
            if definition.embedder is not None:
                definition.embedder()
    except Exception:  # never fatal: everything loads again on first use
        logging.getLogger("medvidbench").exception("warm-up failed")
