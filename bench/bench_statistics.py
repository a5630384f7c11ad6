"""Benchmark: confidence intervals (issue: how sure is a rank).

1. One submission's bootstrap: 1,000 replicates of every metric of a 6,245-item MedVidBench
   submission (the synthetic test set at the published size, the strong archetype, both
   profiles) and of a 9,630-item MedSG-Bench one: linearising the scored samples, summing per
   cluster, drawing the replicates and computing every metric's interval. Scoring itself is
   not timed. Target: under 1 s.
2. Rank intervals for a board of --entries entries with stored bootstraps (SQLite, as scoring
   leaves them; each entry 1,000 replicates of 10 metrics): the board computed after a change
   (reading the evaluations, ranking, re-ranking every replicate, tie groups) and served from
   the cache of its generation. Target: under 2 s for 100 entries.

Usage: python bench/bench_statistics.py [--entries 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def timed(runs: int, call: Any) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def part_submission(folder: Path, runs: int) -> None:
    from medvidbench import benchmarks
    from medvidbench.core.evaluation import Options, assemble, plan, score

    for slug, profiles, archetype in (
        ("medvidbench", ("leaderboard-v1", "strict-v2"), "strong"),
        ("medsg", ("official", "corrected"), "strong"),
    ):
        bench = benchmarks.get(slug)
        assert bench.demo is not None
        files = bench.demo.synthesise(folder / slug, None, 0)
        gt = bench.load_ground_truth(files["ground_truth"])
        for profile in profiles:
            # scored once (not timed); the report's "bootstrap" timing is the bootstrap alone
            planned = plan(bench, files[archetype], gt, profile)
            scored = score(planned)
            options = Options(bootstrap=1000, seed=0)
            took = [
                assemble(planned, scored, None, options).timings["bootstrap"] for _ in range(runs)
            ]
            stats = assemble(planned, scored, None, options).statistics
            assert stats is not None
            print(
                f"{slug} {profile}: {len(gt):,} items, {stats['clusters']:,} clusters, "
                f"{len(stats['intervals'])} metrics, 1,000 replicates: median "
                f"{statistics.median(took):.3f} s (min {min(took):.3f}, max {max(took):.3f})"
            )


def part_board(folder: Path, entries: int, runs: int) -> None:
    from board_fixture import populate_board  # beside this script
    from medvidbench.benchmarks.medvidbench.synth import write_synthetic
    from medvidbench.core.config import Settings
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.services.accounts import create_user
    from medvidbench.server.services.boards import board_rows
    from medvidbench.server.services.catalogue import load_benchmark
    from medvidbench.server.store.board_cache import bump
    from medvidbench.server.store.db import transaction, upgrade

    files = write_synthetic(folder / "synth", samples=600, seed=0, archetypes=("strong",))
    runtime = Runtime(
        Settings(
            data_dir=folder / "data", quota_per_day=0, quota_per_month=0, benchmarks="medvidbench"
        )
    )
    upgrade(runtime.engine)
    bench = load_benchmark(runtime, files["ground_truth"], demo=True)
    with transaction(runtime.sessions) as session:
        user = create_user(session, "bench", "bench-password-123", team="Bench")
    populate_board(runtime, bench.id, user.id, entries, replicates=1000)

    def changed() -> float:
        with transaction(runtime.sessions) as session:
            bump(session, bench.id)  # a change happened: the board is computed again
        started = time.perf_counter()  # the ranking, not the change's own commit
        board_rows(runtime, "community")
        return time.perf_counter() - started

    computed = [changed() for _ in range(runs)]
    cached = timed(runs, lambda: board_rows(runtime, "community"))
    rows = board_rows(runtime, "community")
    widths = [r.rank_interval[1] - r.rank_interval[0] for r in rows if r.rank_interval]
    groups = len({r.tie_group for r in rows})
    print(
        f"board of {len(rows)} entries with stored bootstraps: computed after a change, median "
        f"{statistics.median(computed):.3f} s (min {min(computed):.3f}); from the cache "
        f"{statistics.median(cached) * 1000:.2f} ms; rank interval width median "
        f"{statistics.median(widths) if widths else 0}, {groups} tie groups"
    )
    runtime.engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        part_submission(Path(tmp), args.runs)
        part_board(Path(tmp), args.entries, args.runs)


if __name__ == "__main__":
    main()
