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
6,245 items; the weak archetype as the reference): the wall time of :func:`fit`, each run in a
fresh process (nothing encoded yet), median of --runs, once per --blas-threads count: on a
loaded machine a multi-threaded BLAS slows the sentence encoder (which dominates) several-fold.
Target (issue #26): under 5 minutes.

Part 4 (``--saturation G``): all-strong GRPO groups of G (the strong archetype under G seeds,
every STG and TAL item of the demo set), rewarded with statistics fitted on the weak archetype
and then refitted on the policy's own outputs: the median within-group standard deviation of
the normalised and raw rewards, the share of groups below 1e-3, and the saturation warnings.

Target (issue: training rewards): rule-based rewards for 10,000 completions in under 1 s on one
core.

Usage: python bench/bench_rewards.py [--completions 10000] [--runs 5] [--latency 0.2] [--captions 0]
                                     [--samples N]
                                     [--fit [--blas-threads 1,2]] [--saturation 8]
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


SAMPLES: int | None = None  # MedVidBench's synthetic set in parts 1-2 (None: the demo size)


def rows_of(slug: str, folder: Path, archetypes: tuple[str, ...], tasks: Any) -> Any:
    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of

    bench = benchmarks.get(slug)
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / slug, SAMPLES if slug == "medvidbench" else None, 0)
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
            started = time.perf_counter()
            out = rewarder.score(texts, gts)
            took = time.perf_counter() - started
            calls = httpx.get(f"{url}/stats").json()["answered"] - before
            # the judge's stats describe its last call alone (each call starts them from zero)
            print(
                f"captions, {attempt} batch: {len(texts)} completions, {calls} judge calls "
                f"({latency * 1000:.0f} ms each) taking {judge.stats.wall_seconds:.2f} s "
                f"alongside the MiniLM similarities, {took:.2f} s in all; mean reward "
                f"{out.reward.mean():.3f} (judge term mean {out.terms['judge'].mean():.3f})"
            )
    finally:
        server.terminate()
        server.wait()


def fit_once(folder: Path) -> None:
    """One ``rewards fit`` of the demo set in this (fresh) process; prints a JSON line."""
    import json

    from medvidbench import benchmarks
    from medvidbench.core.embeddings import default_embedder
    from medvidbench.rewards import fit

    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / "demo", None, 0)
    started, cpu = time.perf_counter(), time.process_time()
    stats = fit(files["weak"], files["ground_truth"], benchmark=bench)
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    info = default_embedder().cache_info()
    print(
        json.dumps(
            {"seconds": took, "cpu": cpu, "rows": stats.provenance["rows"], "texts": info["misses"]}
        )
    )


def part_fit(runs: int, threads: list[str]) -> None:
    """``rewards fit`` on the demo set, each run in a fresh process (nothing encoded yet; the
    weights' layout and the label embeddings come from the machine's model cache, as on any
    second use), with the given numbers of BLAS threads."""
    import json

    for n in threads:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": n, "OMP_NUM_THREADS": n}
        times, cpus, last = [], [], {}
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                done = subprocess.run(
                    [sys.executable, __file__, "--fit-once", tmp],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
            last = json.loads(done.stdout.strip().splitlines()[-1])
            times.append(last["seconds"])
            cpus.append(last["cpu"])
        print(
            f"rewards fit, demo set ({last['rows']:,} rows, {last['texts']:,} texts encoded), "
            f"{n} BLAS thread(s): median {statistics.median(times):.1f} s wall over {runs} runs "
            f"({', '.join(f'{t:.1f}' for t in times)}), CPU time median "
            f"{statistics.median(cpus):.1f} s; load average now "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )


def within_group_std(reward: Any, groups: Any) -> Any:
    import numpy as np

    return np.array([np.std(reward[g]) for g in groups])


def part_saturation(group: int) -> None:
    """All-strong GRPO groups: ``group`` strong-archetype answers (seeds 1..group) to every
    STG and TAL item of the demo set, rewarded with statistics fitted on the weak archetype (the
    reference), then refitted on the policy's own outputs (``fit_rollouts``)."""
    import numpy as np

    from medvidbench import benchmarks
    from medvidbench.benchmarks.medvidbench.synth.predictions import generate_predictions
    from medvidbench.benchmarks.medvidbench.synth.testset import generate_ground_truth
    from medvidbench.rewards import Rewarder, fit_rollouts, ground_truth_column, spec_of
    from medvidbench.rewards.trl import append_rollouts

    bench = benchmarks.get("medvidbench")
    records = generate_ground_truth(6245, 0)
    gt = bench.load_ground_truth(json_bytes(records))
    extras = spec_of(bench).row_extras(gt.samples)
    keep = [i for i, s in enumerate(gt.samples) if s.task in ("stg", "tal")]
    cols = [ground_truth_column(bench, gt.samples[i], extras[i]) for i in keep]
    answers = {
        seed: [r["prediction"] for r in generate_predictions(records, arch, seed)]
        for seed, arch in [(0, "weak")] + [(s, "strong") for s in range(1, group + 1)]
    }
    with tempfile.TemporaryDirectory() as tmp:
        weak, policy = Path(tmp) / "weak.jsonl", Path(tmp) / "policy.jsonl"
        append_rollouts(weak, [answers[0][i] for i in keep], cols)
        for seed in range(1, group + 1):
            append_rollouts(policy, [answers[seed][i] for i in keep], cols)
        reference, refit = fit_rollouts(weak), fit_rollouts(policy)
    texts = [answers[seed][i] for i in keep for seed in range(1, group + 1)]
    gts = [c for c in cols for _ in range(group)]
    tasks = np.array([gt.samples[i].task for i in keep for _ in range(group)])
    groups = [np.arange(n * group, (n + 1) * group) for n in range(len(keep))]
    import warnings

    for label, stats in (("reference (weak) statistics", reference), ("refitted", refit)):
        rewarder = Rewarder(stats)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = rewarder.score(texts, gts)
        for task in ("stg", "tal"):
            mine = [g for g in groups if tasks[g[0]] == task]
            raw = within_group_std(out.raw, mine)
            norm = within_group_std(out.reward, mine)
            print(
                f"{task}, {len(mine)} groups of {group} strong answers, {label}: median "
                f"within-group std {np.median(norm):.4f} normalised vs {np.median(raw):.4f} raw; "
                f"{np.mean(norm < 1e-3):.1%} of groups below 1e-3; median reward "
                f"{np.median(out.reward[tasks == task]):.3f}"
            )
        print(f"  saturation warnings: {len(caught)}")


def json_bytes(records: Any) -> bytes:
    import json

    return json.dumps(records).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2, help="The fake judge's seconds.")
    parser.add_argument(
        "--captions", type=int, default=0, help="Part 2 on the first N caption rows (0: all)."
    )
    parser.add_argument(
        "--samples", type=int, help="Parts 1-2: MedVidBench's synthetic set size (the demo's)."
    )
    parser.add_argument("--fit", action="store_true", help="Only time `rewards fit` (part 3).")
    parser.add_argument(
        "--blas-threads", default="1,2", help="Part 3: BLAS thread counts to time, comma-separated."
    )
    parser.add_argument("--fit-once", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--saturation", type=int, default=0, metavar="G", help="Only part 4, groups of G."
    )
    args = parser.parse_args()
    global SAMPLES
    SAMPLES = args.samples
    if args.fit_once:
        fit_once(args.fit_once)
        return
    if args.fit:
        part_fit(args.runs, args.blas_threads.split(","))
        return
    if args.saturation:
        part_saturation(args.saturation)
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
