"""Benchmark: training rewards, as a GRPO trainer asks for them.

Part 1, rule-based rewards: 10,000 completions of MedVidBench's rule-based tasks (TAL, STG, NAP,
SA, CVS; the strong and weak synthetic archetypes' answers, several completions per prompt as a
GRPO group has) and 10,000 of MedSG-Bench, each through ``Rewarder.score`` (ground-truth JSON
in, numpy out, normalised with statistics fitted on the weak archetype). The process is pinned
to one core with one BLAS thread. Timed: the whole call, median of --runs, with the ground-truth
decoding cache cleared before each run ("cold") and kept ("warm": a trainer sees each prompt's
ground truth once per generation).

Part 2, caption rewards with the judge: the caption rows of the synthetic set, twice, through
a fake OpenAI-compatible judge in its own process on loopback (--latency per answer); counts the
judge's answered requests per batch (the second must be 0: every judgement is cached).

Part 3 (``--fit``), ``rewards fit`` on the demo set (``medvidbench synth``'s default size,
6,245 items; the weak archetype as the reference): the wall time of :func:`fit` and where it
goes (loading and matching, then each task's terms through ``Rewarder.score_items``), on all
cores. Target (issue #26): under 5 minutes.

Target (issue: training rewards): rule-based rewards for 10,000 completions in under 1 s on one
core.

Usage: python bench/bench_rewards.py [--completions 10000] [--runs 5] [--latency 0.2] [--captions 0]
                                     [--fit]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

RULE_TASKS = ("tal", "stg", "next_action", "skill_assessment", "cvs_assessment")


def rows_of(slug: str, folder: Path, archetypes: tuple[str, ...], tasks: Any) -> Any:
    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of

    bench = benchmarks.get(slug)
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / slug, None, 0)
    gt = bench.load_ground_truth(files["ground_truth"])
    extras = spec_of(bench).row_extras(gt.samples)
    cols = [ground_truth_column(bench, s, e) for s, e in zip(gt.samples, extras, strict=True)]
    out = []
    for arch in archetypes:
        answers = bench.validate_submission(files[arch], gt).predictions
        for i, s in enumerate(gt.samples):
            if (tasks is None or s.task in tasks) and answers[i] is not None:
                text = answers[i] if isinstance(answers[i], str) else str(list(answers[i]))
                out.append((text, cols[i]))
    return bench, files, out


def timed(runs: int, call: Any, before: Any = None) -> list[float]:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return times


def part_rule_based(n: int, runs: int, folder: Path) -> None:
    from medvidbench.rewards import Rewarder, _decode_text, fit

    rng = random.Random(0)
    for slug, archetypes, tasks in (
        ("medvidbench", ("strong", "weak"), RULE_TASKS),
        ("medsg", ("strong", "qwen-json", "prose", "truncated"), None),
    ):
        bench, files, pool = rows_of(slug, folder, archetypes, tasks)
        batch = [pool[rng.randrange(len(pool))] for _ in range(n)]
        texts, gts = [t for t, _ in batch], [g for _, g in batch]
        reference = files["weak"] if "weak" in files else files["prose"]
        stats = fit(reference, files["ground_truth"], benchmark=bench)
        rewarder = Rewarder(stats)
        rewarder.score(texts[:200], gts[:200])  # imports, the encoder for NAP's few paraphrases
        call = partial(rewarder.score, texts, gts)
        cold = timed(runs, call, _decode_text.cache_clear)
        warm = timed(runs, call)
        out = call()
        tasks_seen = ", ".join(sorted(set(out.task)))
        print(
            f"{slug}: {n} completions ({len(set(gts))} distinct items; tasks "
            f"{tasks_seen[:70]}): median cold {statistics.median(cold):.3f} s "
            f"(min {min(cold):.3f}), warm {statistics.median(warm):.3f} s; "
            f"{n / statistics.median(cold):,.0f} completions/s cold; mean reward "
            f"{out.reward.mean():.3f}, mean raw {out.raw.mean():.3f}"
        )


def part_judge(folder: Path, latency: float, captions: int) -> None:
    import httpx

    from medvidbench.core.judge.cache import MemoryJudgeCache
    from medvidbench.core.judge.client import Judge, JudgeConfig
    from medvidbench.rewards import Rewarder

    bench, _, pool = rows_of(
        "medvidbench", folder, ("strong",), ("video_summary", "region_caption", "dense_captioning")
    )
    pool = pool[:captions] if captions else pool
    texts, gts = [t for t, _ in pool], [g for _, g in pool]
    assert bench.judging is not None
    # the fake judge in its own process: it shares no interpreter lock with the rewarder
    server = subprocess.Popen(
        [sys.executable, "-m", "medvidbench.core.judge.fake_server", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = (server.stdout.readline() if server.stdout else "").strip()
        config = JudgeConfig(
            model="fake", base_url=url, api_key="k", prompt_version=bench.judging.rubric.version
        )
        judge = Judge(config, MemoryJudgeCache())
        rewarder = Rewarder(judge=judge)
        for attempt in ("first", "second"):
            before = httpx.get(f"{url}/stats").json()["answered"]
            judging = judge.stats.wall_seconds
            started = time.perf_counter()
            out = rewarder.score(texts, gts)
            took = time.perf_counter() - started
            calls = httpx.get(f"{url}/stats").json()["answered"] - before
            print(
                f"captions, {attempt} batch: {len(texts)} completions, {calls} judge calls "
                f"({latency * 1000:.0f} ms each) taking {judge.stats.wall_seconds - judging:.2f} s "
                f"alongside the MiniLM similarities, {took:.2f} s in all; mean reward "
                f"{out.reward.mean():.3f} (judge term mean {out.terms['judge'].mean():.3f})"
            )
    finally:
        server.terminate()
        server.wait()


def part_fit(folder: Path) -> None:
    from medvidbench import benchmarks
    from medvidbench.rewards import Rewarder, fit
    from medvidbench.rewards.rows import answered_rows

    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / "demo", None, 0)
    started = time.perf_counter()
    stats = fit(files["weak"], files["ground_truth"], benchmark=bench)
    total = time.perf_counter() - started
    print(f"rewards fit: {stats.provenance['rows']} rows in {total:.1f} s wall")
    # where it goes: the same work, step by step, in a fresh process state for the encoder
    started = time.perf_counter()
    gt = bench.load_ground_truth(files["ground_truth"])
    matched = bench.validate_submission(files["weak"], gt)
    rows, answers = answered_rows(bench, gt, matched)
    print(f"  load and match: {time.perf_counter() - started:.1f} s")
    rewarder = Rewarder(options={bench.slug: dict(matched.options)}, board_format=False)
    by_task: dict[str, list[int]] = {}
    for i, (_, item, _) in enumerate(rows):
        by_task.setdefault(item.task, []).append(i)
    for task, idx in sorted(by_task.items()):
        started = time.perf_counter()
        rewarder.score_items([rows[i] for i in idx], [answers[i] for i in idx])
        print(f"  {task}: {len(idx)} rows, {time.perf_counter() - started:.1f} s (warm encoder)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2, help="The fake judge's seconds.")
    parser.add_argument(
        "--captions", type=int, default=0, help="Part 2 on the first N caption rows (0: all)."
    )
    parser.add_argument("--fit", action="store_true", help="Only time `rewards fit` (part 3).")
    args = parser.parse_args()
    if args.fit:
        with tempfile.TemporaryDirectory() as tmp:
            part_fit(Path(tmp))
        return
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    with tempfile.TemporaryDirectory() as tmp:
        if cores:
            os.sched_setaffinity(0, {min(cores)})  # part 1's target is for one core
        part_rule_based(args.completions, args.runs, Path(tmp))
        if cores:
            os.sched_setaffinity(0, cores)  # the fake judge server shares this process
        part_judge(Path(tmp), args.latency, args.captions)


if __name__ == "__main__":
    main()
