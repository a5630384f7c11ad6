"""``medvidbench rewards``: training-data preparation, normalisation fitting and reward checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import click

from medvidbench.cli.app import BenchmarkSlug, friendly, judge_for, output_file, parse_options
from medvidbench.cli.consoles import console
from medvidbench.cli.params import Argument, Group, Option
from medvidbench.core.blas import one_blas_thread
from medvidbench.core.errors import ExitCode, UsageError

rewards_app = Group(
    help="Benchmark tasks as training rewards (docs/rewards.md).", no_args_is_help=True
)

Judge = Annotated[
    str,
    Option(
        help="Caption judge: none (caption rewards from similarity alone) or openai (any "
        "OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY)."
    ),
]
JudgeModel = Annotated[
    str | None, Option(help="Judge model name (default: MEDVIDBENCH_JUDGE_MODEL).")
]
JudgeCache = Annotated[
    Path | None, Option(help="Judgement cache file (default: MEDVIDBENCH_JUDGE_CACHE_PATH).")
]
ScoringOption = Annotated[
    list[str] | None,
    Option(
        "--option",
        help="KEY=VALUE scoring option, repeatable (MedSG-Bench: coordinates=pixel|0-1000|0-1).",
    ),
]


@rewards_app.subcommand()
@friendly
def prepare(
    data: Annotated[
        Path,
        Argument(help="Training or validation file in the benchmark's ground-truth format."),
    ],
    out: Annotated[
        Path,
        Option("--out", help="Where to write the rows: .jsonl, or .parquet (needs pyarrow)."),
    ],
    style: Annotated[
        str,
        Option(
            help="Row layout: trl (prompt, ground_truth, task, dataset) or verl "
            "(data_source, prompt with <image>/<video> placeholders, images, videos, ability, "
            "reward_model, extra_info)."
        ),
    ] = "trl",
    tasks: Annotated[
        str | None, Option(help="Comma-separated tasks to keep (default: all).")
    ] = None,
    media_dir: Annotated[
        Path | None,
        Option(
            help="Folder that relative video, frame and image paths start from (verl rows: "
            "their images and videos)."
        ),
    ] = None,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Turn a training file into the columns the TRL and verl reward functions read.

    Each row's ground_truth is the item the scorers need; verl rows also carry the video or
    images the training file names (images, videos and their placeholders in the prompt),
    which verl's RLHF dataset loads.
    """
    from medvidbench import benchmarks
    from medvidbench.rewards.prepare import VERL_HINT, training_rows, write_rows

    bench = benchmarks.get(benchmark)
    wanted = {t.strip() for t in tasks.split(",") if t.strip()} if tasks else None
    if out.suffix not in (".jsonl", ".parquet"):
        raise UsageError(f"--out must name a .jsonl or .parquet file; got {out.name!r}")
    if media_dir is not None and style != "verl":
        raise UsageError(
            "--media-dir applies to --style verl (the images and videos columns verl loads); "
            "TRL rows name the media as the training file does, for your data loader"
        )
    output_file(out)
    count = write_rows(training_rows(bench, data, style, wanted, media_dir), out)
    print(f"{count} rows written to {out}")
    if style == "verl":
        import medvidbench.rewards.verl as adapter

        print(VERL_HINT.format(path=adapter.__file__), file=sys.stderr)


@rewards_app.subcommand()
@friendly
def fit(
    out: Annotated[Path, Option("--out", help="Where to write the statistics (JSON).")],
    predictions: Annotated[
        Path | None,
        Argument(help="The reference (SFT) model's predictions (or use --rollouts)."),
    ] = None,
    ground_truth: Annotated[
        Path | None, Option("--ground-truth", help="Ground-truth file (with PREDICTIONS).")
    ] = None,
    rollouts: Annotated[
        Path | None,
        Option(
            help="Fit on the policy's own outputs instead: a JSON-lines file of "
            "{completion, ground_truth} rows (the TRL reward function's rollouts option).",
        ),
    ] = None,
    last: Annotated[
        int | None, Option(min=1, help="With --rollouts: only the last N rows.")
    ] = None,
    judge: Judge = "none",
    judge_model: JudgeModel = None,
    judge_cache: JudgeCache = None,
    min_samples: Annotated[
        int,
        Option(
            min=1,
            help="Fewest reference samples a (task, dataset) group needs "
            "for its own statistics; smaller groups use their task's pool.",
        ),
    ] = 20,
    option: ScoringOption = None,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Fit the reward normalisation (p25, p50, p75 per task, dataset and term) on a reference
    model's predictions, or on the policy's own rollouts once it has outgrown the reference."""
    one_blas_thread()
    from medvidbench import benchmarks
    from medvidbench.rewards import fit as run
    from medvidbench.rewards import fit_rollouts

    if (predictions is None) == (rollouts is None):
        raise UsageError("give a prediction file (with --ground-truth) or --rollouts, not both")
    if predictions is not None and ground_truth is None:
        raise UsageError("a prediction file needs --ground-truth")
    if rollouts is not None and ground_truth is not None:
        raise UsageError(
            "--ground-truth goes with a prediction file: a rollouts file carries each "
            "completion's ground truth itself"
        )
    output_file(out)
    bench = benchmarks.get(benchmark)
    llm = judge_for(judge, judge_model, judge_cache, bench)
    common: dict[str, Any] = {
        "benchmark": bench,
        "judge": llm,
        "options": parse_options(option or []),
        "min_samples": min_samples,
    }
    if rollouts is not None:
        stats = fit_rollouts(rollouts, last=last, **common)
    else:
        assert predictions is not None and ground_truth is not None
        stats = run(predictions, ground_truth, **common)
    stats.save(out)
    from medvidbench.cli.tables import Table

    table = Table("task", "dataset", "term", "n", "p25", "p50", "p75", title=str(out))
    for (task, dataset, term), q in sorted(stats.groups.items()):
        table.add_row(task, dataset, term, str(q.n), f"{q.p25:.3f}", f"{q.p50:.3f}", f"{q.p75:.3f}")
    console().print(table)


@rewards_app.subcommand()
@friendly
def score(
    predictions: Annotated[Path, Argument(help="Prediction file.")],
    ground_truth: Annotated[Path, Option("--ground-truth", help="Ground-truth file.")],
    stats: Annotated[
        Path | None, Option(help="Normalisation statistics (from `rewards fit`).")
    ] = None,
    k: Annotated[float, Option(help="Normalisation steepness.")] = 3.0,
    judge: Judge = "none",
    judge_model: JudgeModel = None,
    judge_cache: JudgeCache = None,
    option: ScoringOption = None,
    as_json: Annotated[bool, Option("--json", help="Print the means as JSON.")] = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Mean raw and normalised rewards of a prediction file, per task and dataset: what a
    model at this level would be rewarded during training."""
    one_blas_thread()
    import numpy as np

    from medvidbench import benchmarks
    from medvidbench.rewards import Rewarder, answered_rows
    from medvidbench.rewards.rows import declared_options

    bench = benchmarks.get(benchmark)
    llm = judge_for(judge, judge_model, judge_cache, bench)
    gt = bench.load_ground_truth(ground_truth)
    matched = bench.validate_submission(predictions, gt, name=str(predictions))
    if not matched.report.ok:
        from medvidbench.cli.terminal import print_validation

        print_validation(matched.report, console(stderr=True))
        raise click.exceptions.Exit(ExitCode.INVALID_FILE)
    rows, answers = answered_rows(bench, gt, matched)
    rewarder = Rewarder(
        stats,
        k=k,
        judge=llm,
        options={bench.slug: {**declared_options(bench, matched), **parse_options(option or [])}},
    )
    out = rewarder.score_items(rows, answers)
    groups: dict[tuple[str, str], list[int]] = {}
    for n, (_, item, _) in enumerate(rows):
        groups.setdefault((item.task, item.dataset), []).append(n)
    means = [
        {
            "task": task,
            "dataset": dataset,
            "n": len(members),
            "raw": float(np.mean(out.raw[members])),
            "reward": float(np.mean(out.reward[members])),
        }
        for (task, dataset), members in sorted(groups.items())
    ]
    if as_json:
        sys.stdout.write(json.dumps(means, indent=2) + "\n")
        return
    from medvidbench.cli.tables import Table

    table = Table("task", "dataset", "n", "mean raw", "mean reward")
    for r in means:
        table.add_row(
            str(r["task"]), str(r["dataset"]), str(r["n"]), f"{r['raw']:.3f}", f"{r['reward']:.3f}"
        )
    console().print(table)
