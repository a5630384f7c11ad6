"""Benchmark: does the judge agreement card find what a judge was scripted to do (issue #35)?

Recovery. Two fake judges (real HTTP servers on 127.0.0.1) judge the caption pairs of five model
archetypes on a synthetic test set (strong, weak, format-noisy, shuffled, and "verbose": the
strong answers with a sentence added to every caption, so that many are longer than their
reference). The reference judge answers the same every time; the second moves each aspect one
point with probability FLIP (half down, half up) and adds +0.5 on average to answers longer
than their reference (core/judge/fake_server.py ``noisy_responder``). Per round (a new seed), the
card's kappa per aspect against the kappa the script implies (``noisy_table``: the expected
table given the reference judge's scores), its length bias against 0.5, and the test-retest
kappas (the reference judge's must be 1).

Calibration. Simulated test sets of G videos (1 + Poisson(2) pairs each, a shared video
effect); the reference judge's five-aspect mean A, a cheaper judge B = 0.7 A + 1.2 + noise (biased
and noisier). A quarter of the pairs is judged by both. The share of test sets whose interval
covers A's true mean: B's own t interval (its bias never goes away), A on the quarter alone,
and the prediction-powered estimate (core/judge/agreement.py ``calibrated_mean``), with the
intervals' mean widths.

Usage: python bench/bench_judge_agreement.py [--rounds 5] [--samples 600] [--sims 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ADDED = " The team then reviews every visible detail of the scene with great care and attention."


def verbose(strong: Path, out: Path) -> Path:
    """The strong answers, each caption answer lengthened by a sentence."""
    rows = json.loads(strong.read_text())
    for row in rows:
        if row["qa_type"].startswith(("dense_captioning", "video_summary", "region_caption")):
            row["prediction"] += ADDED
    out.write_text(json.dumps(rows))
    return out


def recovery(folder: Path, rounds: int, samples: int, flip: float, replicates: int) -> None:
    from medvidbench import benchmarks
    from medvidbench.core.judge.agreement import kappa_of_table
    from medvidbench.core.judge.card import Design, ask, build, collect
    from medvidbench.core.judge.client import judge_from_spec
    from medvidbench.core.judge.fake_server import (
        FakeJudgeServer,
        noisy_responder,
        noisy_table,
        steady_responder,
    )

    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None and bench.judging is not None
    rubric = bench.judging.rubric
    written = bench.demo.synthesise(folder, samples, 3)
    models = {k: written[k] for k in ("strong", "weak", "format-noisy", "shuffled")}
    models["verbose"] = verbose(written["strong"], folder / "verbose.json")
    os.environ.setdefault("OPENAI_API_KEY", "none")
    print(f"recovery: flip {flip}, +0.5 on long answers, {samples} test samples, 5 models")
    print(
        "round  pairs  long  kappa(script)  kappa(card)  max|error|  length bias  "
        "retest A  retest B"
    )
    errors, slopes = [], []
    for r in range(rounds):
        with (
            FakeJudgeServer(responder=steady_responder, model="reference") as a,
            FakeJudgeServer(responder=noisy_responder(flip, True, seed=r), model="second") as b,
        ):
            cache = folder / f"cache{r}.sqlite"
            judges = [judge_from_spec(f"{j.model}@{j.url}", rubric.version, cache) for j in (a, b)]
            collected = collect(bench, written["ground_truth"], models, samples, seed=r)
            ratings = ask(judges, collected, rubric, retest=100, seed=r)
            card = build(collected, ratings, Design(replicates, r))
        reference = ratings.scores[0].astype(int)
        long = [p.long for p in collected.pairs]
        scripted = [
            kappa_of_table(noisy_table(reference[:, k].tolist(), long, flip, True))
            for k in range(len(rubric.codes))
        ]
        found = [card["comparisons"][0]["kappa"]["all"][code]["value"] for code in rubric.codes]
        error = max(abs(x - y) for x, y in zip(scripted, found, strict=True))
        slope = card["comparisons"][0]["length_bias"]["all"]["value"]
        errors.append(error)
        slopes.append(slope)
        retest = [x["kappa"]["value"] for x in card["retest"]]
        print(
            f"{r:>5}  {len(collected.pairs):>5}  {sum(long):>4}  {np.mean(scripted):>13.3f}  "
            f"{np.mean(found):>11.3f}  {error:>10.3f}  {slope:>11.3f}  {retest[0]:>8.3f}  "
            f"{retest[1]:>8.3f}"
        )
    print(
        f"largest kappa error {max(errors):.3f} (target 0.05); length bias "
        f"{min(slopes):.3f}-{max(slopes):.3f} (target 0.45-0.55)"
    )


def calibration(sims: int, clusters: int, seed: int) -> None:
    from scipy.stats import t

    from medvidbench.core.judge.agreement import calibrated_mean

    rng = np.random.default_rng(seed)
    truth = 3.0  # A's expected five-aspect mean (video effects and noise have mean 0)
    hits = {"B alone": 0, "A on a quarter": 0, "calibrated": 0}
    width = {k: 0.0 for k in hits}
    started = time.perf_counter()
    for _ in range(sims):
        sizes = 1 + rng.poisson(2, size=clusters)
        video = np.repeat(np.arange(clusters), sizes)
        names = [f"v{v}" for v in video]
        a = truth + np.repeat(rng.normal(0, 0.5, clusters), sizes) + rng.normal(0, 0.6, len(video))
        b = 0.7 * a + 1.2 + rng.normal(0, 0.5, len(video))
        labelled = np.sort(rng.choice(len(video), size=max(2, len(video) // 4), replace=False))
        got = calibrated_mean(b, names, a[labelled], b[labelled], [names[i] for i in labelled])
        if got is None:
            continue
        for name, (lo, hi) in {
            "B alone": _t_interval(b, video, t),
            "A on a quarter": _t_interval(a[labelled], video[labelled], t),
            "calibrated": (got.low, got.high),
        }.items():
            hits[name] += lo <= truth <= hi
            width[name] += hi - lo
    took = (time.perf_counter() - started) / sims
    print(f"calibration: {clusters} videos, {sims} simulated test sets ({took * 1000:.2f} ms each)")
    for name in hits:
        print(
            f"  {name:<15} coverage {hits[name] / sims:6.1%}  mean width {width[name] / sims:.3f}"
        )


def _t_interval(values: np.ndarray, video: np.ndarray, t: object) -> tuple[float, float]:
    """A mean's cluster-robust t interval (the metric intervals' few-cluster rule)."""
    groups = np.unique(video)
    g, n, m = len(groups), len(values), float(values.mean())
    sums = np.array([(values[video == v] - m).sum() for v in groups])
    se = float(np.sqrt((sums**2).sum() / n**2 * g / (g - 1)))
    half = float(t.ppf(0.975, g - 1)) * se  # type: ignore[attr-defined]
    return m - half, m + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--flip", type=float, default=0.2)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--clusters", type=int, nargs="+", default=[15, 40, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        recovery(Path(folder), args.rounds, args.samples, args.flip, args.replicates)
    for g in args.clusters:
        calibration(args.sims, g, seed=g)


if __name__ == "__main__":
    main()
