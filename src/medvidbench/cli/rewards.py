"""``medvidbench rewards``: training-data preparation, normalisation fitting and reward checks."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from medvidbench.cli.consoles import console
from medvidbench.cli.main import BenchmarkSlug, _judge, _options, app, friendly
from medvidbench.core.errors import ExitCode, UsageError

rewards_app = typer.Typer(
    help="Benchmark tasks as training rewards (docs/rewards.md).", no_args_is_help=True
)
app.add_typer(rewards_app, name="rewards")

Judge = Annotated[
    str,
    typer.Option(
        help="Caption judge: none (caption rewards from similarity alone) or openai (any "
        "OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY)."
    ),
]
JudgeModel = Annotated[
    str | None, typer.Option(help="Judge model name (default: MEDVIDBENCH_JUDGE_MODEL).")
]
JudgeCache = Annotated[
    Path | None, typer.Option(help="Judgement cache file (default: MEDVIDBENCH_JUDGE_CACHE_PATH).")
]
Option = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        help="KEY=VALUE scoring option, repeatable (MedSG-Bench: coordinates=pixel|0-1000|0-1).",
    ),
]


@rewards_app.command()
@friendly
def prepare(
    data: Annotated[
        Path,
        typer.Argument(help="Training or validation file in the benchmark's ground-truth format."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write the rows (.jsonl).")],
    style: Annotated[
        str,
        typer.Option(
            help="Row layout: trl (prompt, ground_truth, task, dataset) or verl "
            "(data_source, prompt, ability, reward_model, extra_info)."
        ),
    ] = "trl",
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated tasks to keep (default: all).")
    ] = None,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Turn a training file into the columns the TRL and verl reward functions read.

    One JSON object per line; each row's ground_truth is the item the scorers need, and its
    media (video clip or image paths) is left for your data loader to attach.
    """
    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of

    if style not in ("trl", "verl"):
        raise UsageError(f"unknown style {style!r}; expected trl or verl")
    if out.suffix != ".jsonl":
        raise UsageError(f"--out must name a .jsonl file; got {out.name!r}")
    bench = benchmarks.get(benchmark)
    spec = spec_of(bench)
    wanted = {t.strip() for t in tasks.split(",") if t.strip()} if tasks else None
    unknown = sorted((wanted or set()) - set(spec.tasks))
    if unknown:
        raise UsageError(
            f"unknown task(s) {', '.join(unknown)}; {bench.slug} has {', '.join(spec.tasks)}"
        )
    items = list(bench.load_ground_truth(data).samples)
    extras = spec.row_extras(items)

    def rows() -> Iterator[dict[str, Any]]:
        for item, extra in zip(items, extras, strict=True):
            if item.task not in spec.tasks or (wanted is not None and item.task not in wanted):
                continue
            asked = spec.prompt(item)
            prompt = [{"role": "user", "content": asked["question"]}]
            gt = ground_truth_column(bench, item, extra)
            if style == "trl":
                yield {
                    "prompt": prompt,
                    "ground_truth": gt,
                    "benchmark": bench.slug,
                    "task": item.task,
                    "dataset": item.dataset,
                    "media": asked["media"],
                }
            else:
                yield {
                    "data_source": bench.slug,
                    "prompt": prompt,
                    "ability": item.task,
                    "reward_model": {"style": "rule", "ground_truth": gt},
                    "extra_info": {
                        "index": item.index,
                        "task": item.task,
                        "dataset": item.dataset,
                        "id": item.sample_id,
                    },
                    "media": asked["media"],
                }

    tmp = out.with_name(out.name + ".part")
    count = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    tmp.replace(out)
    print(f"{count} rows written to {out}")


@rewards_app.command()
@friendly
def fit(
    predictions: Annotated[Path, typer.Argument(help="The reference (SFT) model's predictions.")],
    ground_truth: Annotated[Path, typer.Option("--ground-truth", help="Ground-truth file.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the statistics (JSON).")],
    judge: Judge = "none",
    judge_model: JudgeModel = None,
    judge_cache: JudgeCache = None,
    min_samples: Annotated[
        int,
        typer.Option(
            min=1,
            help="Fewest reference samples a (task, dataset) group needs "
            "for its own statistics; smaller groups use their task's pool.",
        ),
    ] = 20,
    option: Option = None,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Fit the reward normalisation (p25, p50, p75 per task, dataset and term) on a reference
    model's predictions."""
    from medvidbench import benchmarks
    from medvidbench.rewards import fit as run

    bench = benchmarks.get(benchmark)
    llm = _judge(judge, judge_model, judge_cache, bench)
    stats = run(
        predictions,
        ground_truth,
        benchmark=bench,
        judge=llm,
        options=_options(option or []),
        min_samples=min_samples,
    )
    stats.save(out)
    from rich.table import Table

    table = Table("task", "dataset", "term", "n", "p25", "p50", "p75", title=str(out))
    for (task, dataset, term), q in sorted(stats.groups.items()):
        table.add_row(task, dataset, term, str(q.n), f"{q.p25:.3f}", f"{q.p50:.3f}", f"{q.p75:.3f}")
    console().print(table)


@rewards_app.command()
@friendly
def score(
    predictions: Annotated[Path, typer.Argument(help="Prediction file.")],
    ground_truth: Annotated[Path, typer.Option("--ground-truth", help="Ground-truth file.")],
    stats: Annotated[
        Path | None, typer.Option(help="Normalisation statistics (from `rewards fit`).")
    ] = None,
    k: Annotated[float, typer.Option(help="Normalisation steepness.")] = 3.0,
    judge: Judge = "none",
    judge_model: JudgeModel = None,
    judge_cache: JudgeCache = None,
    option: Option = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the means as JSON.")] = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Mean raw and normalised rewards of a prediction file, per task and dataset: what a
    model at this level would be rewarded during training."""
    import numpy as np

    from medvidbench import benchmarks
    from medvidbench.rewards import Rewarder, answered_rows

    bench = benchmarks.get(benchmark)
    llm = _judge(judge, judge_model, judge_cache, bench)
    gt = bench.load_ground_truth(ground_truth)
    matched = bench.validate_submission(predictions, gt, name=str(predictions))
    if not matched.report.ok:
        from medvidbench.cli.terminal import print_validation

        print_validation(matched.report, console(stderr=True))
        raise typer.Exit(ExitCode.INVALID_FILE)
    rows, answers = answered_rows(bench, gt, matched)
    rewarder = Rewarder(
        stats,
        k=k,
        judge=llm,
        options={bench.slug: {**matched.options, **_options(option or [])}},
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
    from rich.table import Table

    table = Table("task", "dataset", "n", "mean raw", "mean reward")
    for r in means:
        table.add_row(
            str(r["task"]), str(r["dataset"]), str(r["n"]), f"{r['raw']:.3f}", f"{r['reward']:.3f}"
        )
    console().print(table)
