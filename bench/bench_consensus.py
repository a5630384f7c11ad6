"""Benchmark: does the consensus keep its promises (issue #33)?

Two measurements.

1. **Plackett-Luce under missing measurements.** Models of known order are made from each
   hosted benchmark's synthetic archetypes, scored by the benchmark's own scorers: model k
   answers each item as the ``perfect`` archetype does with probability p_k, and otherwise as
   the benchmark's worst archetype does (the one with the lowest mean normalised ranked
   metric), so its per-item evidence is real scorer output and the true order is that of p_k.
   A fraction of all (model, item) measurements is then masked at random, Plackett-Luce is
   fitted to the per-item orders pooled across every hosted benchmark, and Kendall's tau
   between its order and the truth is printed against the masked fraction (median and worst
   over ``--seeds``).

2. **Rank-interval coverage.** Simulated per-item results of models with known skills (well
   spread, and near ties) on two benchmarks of clustered items (a random effect per cluster on
   the logit scale, shared by the models, as when some videos are harder for everyone). In each
   trial every aggregation gives each model a 95 % rank interval (mean, Borda and Kemeny from
   paired cluster-bootstrap replicates of each benchmark's accuracy, as the server stores them;
   Plackett-Luce from cluster resamples of the items); the printed coverage is the share of
   (trial, model) pairs whose interval holds the model's true rank, and the share of trials in
   which every model's interval holds it (the intervals are marginal, so this can be lower),
   with the mean number of ranks an interval holds (1 to 6: how informative they are).

Usage: python bench/bench_consensus.py [--samples 6245] [--seeds 5] [--trials 100]
    [--replicates 200] [--fractions 0,0.5,0.8,0.9,0.95]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark, Metric, Task
from medvidbench.core.consensus import METHODS, Result, aggregate
from medvidbench.core.errors import InvalidSubmissionError
from medvidbench.core.evidence import MISSING, SCORED, Evidence, MetricEvidence
from medvidbench.library import evaluate

# --- 1. Plackett-Luce against the masked fraction -------------------------------------------


def _archetypes(slug: str, samples: int, folder: Path) -> tuple[Benchmark, Evidence, Evidence]:
    """A benchmark's ``perfect`` evidence and its worst archetype's."""
    bench = benchmarks.get(slug)
    assert bench.demo is not None
    files = bench.demo.synthesise(folder / slug, samples if slug == "medvidbench" else None, 0)
    found: dict[str, tuple[float, Evidence]] = {}
    for name, path in files.items():
        if name == "ground_truth" or not path.name.startswith("predictions"):
            continue
        try:
            report = evaluate(path, files["ground_truth"], benchmark=bench, per_item=True)
        except InvalidSubmissionError:  # an archetype refused as it stands
            continue
        units = [
            m.normalised(report.metrics.get(m.key))
            for m in bench.metrics
            if m.ranked and report.metrics.get(m.key) is not None
        ]
        assert report.evidence is not None
        found[name] = (
            float(np.mean([u for u in units if u is not None] or [0.0])),
            report.evidence,
        )
    worst = min((v for k, v in found.items() if k != "perfect"), key=lambda v: v[0])
    return bench, found["perfect"][1], worst[1]


def _mixed(perfect: Evidence, worst: Evidence, p: float, masked: float, rng: Any) -> Evidence:
    """A model answering each item as ``perfect`` with probability p, else as ``worst``, with
    a fraction ``masked`` of its items not measured."""
    right = rng.random(len(perfect.keys)) < p
    hidden = rng.random(len(perfect.keys)) < masked
    out = dataclasses.replace(perfect, metrics={})
    for key, good in perfect.metrics.items():
        bad = worst.metrics[key]
        where = perfect.positions(good.task)
        pick = right[where]
        values = np.where(pick, good.values, bad.values).astype(np.float32)
        status = np.where(pick, good.status, bad.status).astype(np.uint8)
        values[hidden[where]] = np.nan
        status[hidden[where]] = MISSING
        out.metrics[key] = MetricEvidence(good.task, values, status)
    return out


def kendall(found: list[str], truth: list[str]) -> float:
    """Kendall's tau between two orders of the same models."""
    place = {m: i for i, m in enumerate(truth)}
    concordant = discordant = 0
    for i in range(len(found)):
        for j in range(i + 1, len(found)):
            if place[found[i]] < place[found[j]]:
                concordant += 1
            else:
                discordant += 1
    return (concordant - discordant) / max(1, concordant + discordant)


def masked_fractions(
    samples: int, seeds: int, fractions: list[float], models: int
) -> list[tuple[float, float, float]]:
    folder = Path(tempfile.mkdtemp(prefix="mvb-consensus-"))
    pairs = [_archetypes(slug, samples, folder) for slug in benchmarks.slugs()]
    skills = {f"model-{k}": 0.15 + 0.8 * k / (models - 1) for k in range(models)}
    truth = sorted(skills, key=lambda m: -skills[m])
    rows = []
    for fraction in fractions:
        taus = []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            results = [
                Result(model, bench, {}, None, _mixed(perfect, worst, p, fraction, rng))
                for bench, perfect, worst in pairs
                for model, p in skills.items()
            ]
            pl = aggregate(results, ("plackett-luce",), replicates=0)[0]
            order = [s.model for s in pl.standings]
            taus.append(kendall(order, truth) if len(order) == len(truth) else float("nan"))
        rows.append((fraction, statistics.median(taus), min(taus)))
    return rows


# --- 2. rank-interval coverage --------------------------------------------------------------


def _toy(slug: str) -> Benchmark:
    """A one-task, one-metric benchmark (accuracy) for the simulation."""
    base = benchmarks.get("mcqa-demo")
    return dataclasses.replace(
        base,
        slug=slug,
        tasks=(Task("t", "T", "a task", family="multiple-choice"),),
        metrics=(Metric("acc", "Accuracy", "t", "x", "0-1"),),
    )


def _trial(
    skills: dict[str, float], clusters: int, size: int, replicates: int, rng: Any
) -> list[Result]:
    results = []
    for slug in ("one", "two"):
        bench = _toy(slug)
        n = clusters * size
        effect = rng.normal(0.0, 0.5, clusters).repeat(size)
        keys = [f"q{i}" for i in range(n)]
        cluster_names = [f"c{i // size}" for i in range(n)]
        draws = rng.multinomial(clusters, np.full(clusters, 1 / clusters), size=replicates)
        weights = draws.repeat(size, axis=1)  # one cluster draw per replicate, shared: paired
        for model, p in skills.items():
            logit = np.log(p / (1 - p)) + effect
            hits = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
            ev = Evidence(slug, "sim", "p", "", keys, ["t"] * n, cluster_names)
            ev.metrics["acc"] = MetricEvidence("t", hits, np.full(n, SCORED, np.uint8))
            replicated = (weights @ hits) / weights.sum(axis=1)
            results.append(
                Result(
                    model, bench, {"acc": float(hits.mean())}, (["acc"], replicated[:, None]), ev
                )
            )
    return results


SKILLS = {
    "spread": {"A": 0.40, "B": 0.45, "C": 0.50, "D": 0.53, "E": 0.60, "F": 0.70},
    "near ties": {"A": 0.50, "B": 0.505, "C": 0.51, "D": 0.515, "E": 0.52, "F": 0.525},
}


def coverage(
    skills: dict[str, float], trials: int, replicates: int, clusters: int, size: int
) -> dict[str, tuple[float, float, float]]:
    truth = {m: r + 1 for r, m in enumerate(sorted(skills, key=lambda m: -skills[m]))}
    held = {m: 0 for m in METHODS}
    every = {m: 0 for m in METHODS}
    widths: dict[str, list[int]] = {m: [] for m in METHODS}
    for trial in range(trials):
        rng = np.random.default_rng(1000 + trial)
        results = _trial(skills, clusters, size, replicates, rng)
        for agg in aggregate(results, METHODS, replicates=replicates, seed=trial):
            inside = [
                s.interval is not None and s.interval[0] <= truth[s.model] <= s.interval[1]
                for s in agg.standings
            ]
            held[agg.method] += sum(inside)
            widths[agg.method] += [
                s.interval[1] - s.interval[0] + 1 for s in agg.standings if s.interval
            ]
            every[agg.method] += all(inside)
    pairs = trials * len(skills)
    return {m: (held[m] / pairs, every[m] / trials, float(np.mean(widths[m]))) for m in METHODS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=6245, help="MedVidBench questions")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--fractions", default="0,0.5,0.8,0.9,0.95")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=60, help="per benchmark")
    parser.add_argument("--size", type=int, default=5, help="items per cluster")
    args = parser.parse_args()

    began = time.perf_counter()
    fractions = [float(f) for f in args.fractions.split(",")]
    rows = masked_fractions(args.samples, args.seeds, fractions, args.models)
    print(f"Plackett-Luce, {args.models} models of known order, pooled over: "
          f"{', '.join(benchmarks.slugs())}")  # fmt: skip
    print(f"{'masked':>7} {'median tau':>10} {'worst tau':>9}")
    for fraction, middle, worst in rows:
        print(f"{fraction:>7.0%} {middle:>10.3f} {worst:>9.3f}")
    print(f"({time.perf_counter() - began:.0f} s)")

    for name, skills in SKILLS.items():
        began = time.perf_counter()
        found = coverage(skills, args.trials, args.replicates, args.clusters, args.size)
        print(
            f"\n95 % rank intervals, skills {name} ({', '.join(map(str, skills.values()))}): "
            f"{args.trials} trials, 2 benchmarks of {args.clusters} clusters x {args.size} "
            f"items, {args.replicates} replicates"
        )
        print(f"{'method':<14} {'per model':>9} {'all models':>10} {'mean ranks held':>15}")
        for method, (per_model, all_models, width) in found.items():
            print(f"{method:<14} {per_model:>9.1%} {all_models:>10.1%} {width:>15.2f}")
        print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
