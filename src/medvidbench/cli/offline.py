"""The offline commands: ``synth``, ``validate`` and ``evaluate`` (no server, no database)."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import click

from medvidbench.cli import consoles
from medvidbench.cli.app import (
    BenchmarkSlug,
    err,
    friendly,
    judge_for,
    output_file,
    output_folder,
    parse_options,
)
from medvidbench.cli.consoles import escape
from medvidbench.cli.params import Argument, Option
from medvidbench.core.errors import ExitCode, UsageError


@friendly
def synth(
    out_dir: Annotated[Path, Option("--out-dir", help="Folder to write the files into.")],
    samples: Annotated[
        int | None,
        Option(min=1, help="Number of test samples (default: the published test set's)."),
    ] = None,
    seed: Annotated[int, Option(help="Random seed; the same seed gives the same files.")] = 0,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Write a synthetic test set and predictions of model archetypes.

    Writes OUT_DIR/ground_truth.json and OUT_DIR/predictions_<archetype>.json, one per
    archetype of the benchmark (MedVidBench: perfect, strong, weak, format-noisy, garbage,
    shuffled and partial).
    """
    from medvidbench import benchmarks

    bench = benchmarks.get(benchmark)
    if bench.demo is None:
        raise UsageError(f"benchmark {bench.slug!r} has no synthetic generator")
    output_folder(out_dir, "--out-dir")
    written = bench.demo.synthesise(out_dir, samples, seed)
    for name, path in written.items():
        print(f"{name:>13}  {path}")


Predictions = Annotated[
    list[Path],
    Argument(
        help="Prediction file (.json or .jsonl; '-' reads standard input); several files or a "
        "folder make one submission (the per-GPU files of one MedGRPO-Code run, say)."
    ),
]
Strict = Annotated[
    bool,
    Option(
        "--strict",
        help="Refuse predictions matched to their question by order alone (several identical "
        "questions, no 'index', and no known pipeline order).",
    ),
]


def _validate(bench: Any, predictions: list[Path], gt: Any, *limit: int) -> Any:
    """The benchmark's validation of one file, several files or a folder."""
    if len(predictions) == 1:
        source, name = read_input(predictions[0], *limit)
        return bench.validate_submission(source, gt, *limit, name=name)
    if any(str(p) == "-" for p in predictions):
        raise UsageError("'-' (standard input) can only be the one prediction file")
    try:
        return bench.validate_submission(predictions, gt, *limit)
    except TypeError:  # a benchmark that reads one file (or a folder) only
        raise UsageError(
            f"benchmark {bench.slug!r} reads one prediction file or a folder, not several files"
        ) from None


@friendly
def validate(
    predictions: Predictions,
    ground_truth: Annotated[
        Path | None, Option("--ground-truth", help="Ground-truth file.")
    ] = None,
    questions: Annotated[
        Path | None,
        Option(
            "--questions",
            help="The public questions file (the test file without answers), instead of "
            "--ground-truth: checks coverage, ids, qa_types, answer formats and order.",
        ),
    ] = None,
    as_json: Annotated[bool, Option("--json", help="Print the report as JSON.")] = False,
    require_complete: Annotated[
        bool, Option(help="Exit non-zero for a partial submission too.")
    ] = False,
    strict: Strict = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Check a prediction file the way the leaderboard server does, offline.

    Exit code 0: valid (or partial: some tasks left out, reported as missing); 4: invalid;
    5: the ground truth is unusable. PREDICTIONS '-' reads standard input.
    """
    from medvidbench import benchmarks
    from medvidbench.cli.terminal import print_validation

    bench = benchmarks.get(benchmark)
    if (ground_truth is None) == (questions is None):
        raise UsageError("give either --ground-truth or --questions")
    if questions is not None:
        gt = bench.load_questions(questions)
    elif ground_truth is not None:
        from medvidbench.core import testset_cache

        gt = testset_cache.load(bench, ground_truth)
    report = _validate(bench, predictions, gt).report
    if strict:
        report.refuse_order_only()
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_validation(report, consoles.console())
    if not report.ok or (require_complete and not report.complete):
        raise click.exceptions.Exit(ExitCode.INVALID_FILE)


@friendly
def evaluate(
    predictions: Predictions,
    ground_truth: Annotated[Path, Option("--ground-truth", help="Ground-truth file.")],
    profile: Annotated[
        str | None,
        Option(
            help="Metric profile (default: the benchmark's first; MedVidBench: leaderboard-v1, "
            "the published numbers, or strict-v2)."
        ),
    ] = None,
    judge: Annotated[
        str,
        Option(
            help="Caption judge: none (caption metrics stay null) or openai (any "
            "OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY)."
        ),
    ] = "none",
    judge_model: Annotated[
        str | None, Option(help="Judge model name (default: MEDVIDBENCH_JUDGE_MODEL).")
    ] = None,
    judge_cache: Annotated[
        Path | None,
        Option(help="Judgement cache file (default: MEDVIDBENCH_JUDGE_CACHE_PATH)."),
    ] = None,
    similarity: Annotated[
        bool, Option(help="Also report the offline caption-similarity diagnostic.")
    ] = False,
    tasks: Annotated[
        str | None, Option(help="Comma-separated tasks to score (default: all).")
    ] = None,
    out: Annotated[Path | None, Option("--out", help="Write the report as JSON here.")] = None,
    as_json: Annotated[bool, Option("--json", help="Print the report as JSON.")] = False,
    option: Annotated[
        list[str] | None,
        Option(
            "--option",
            help="KEY=VALUE scoring option of the benchmark, repeatable "
            "(MedSG-Bench: parser=strong|old, coordinates=pixel|0-1000|0-1).",
        ),
    ] = None,
    max_bytes: Annotated[
        int | None,
        Option(
            envvar="MEDVIDBENCH_MAX_SUBMISSION_BYTES",
            help="Largest file read, in bytes (default 1 GiB).",
        ),
    ] = None,
    ci: Annotated[
        bool,
        Option(
            "--ci",
            help="Also print 95 % confidence intervals (cluster bootstrap over test items; "
            "docs/statistics.md).",
        ),
    ] = False,
    replicates: Annotated[
        int, Option(min=100, max=100_000, help="Bootstrap replicates for --ci.")
    ] = 1000,
    seed: Annotated[int, Option(help="Bootstrap seed for --ci.")] = 0,
    per_item: Annotated[
        bool,
        Option(
            "--per-item",
            help="Keep every item's value of every metric in the report (per_item; with the "
            "--ci bootstrap, which it turns on): what 'medvidbench rank' pools.",
        ),
    ] = False,
    model_name: Annotated[
        str, Option("--model-name", help="The model's name, written in the report.")
    ] = "",
    strict: Strict = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Score a prediction file, offline.

    Prints a summary table (or the JSON report) and exits 0; an invalid file exits 4 with every
    problem listed. Tasks the file leaves out are reported as missing, never as 0.
    PREDICTIONS '-' reads standard input.
    """
    from medvidbench import benchmarks
    from medvidbench.core import testset_cache
    from medvidbench.core.formats import DEFAULT_MAX_BYTES
    from medvidbench.library import evaluate as run

    bench = benchmarks.get(benchmark)
    rules = bench.profile(profile)  # an unknown profile stops here, before any file is read
    limit = max_bytes or DEFAULT_MAX_BYTES
    if out is not None:
        output_file(out)
    llm = judge_for(judge, judge_model, judge_cache, bench)
    if llm is not None:
        # cli/launch.py turned the collector off for a short run; a judged one makes a reference
        # cycle per call (its retries and futures: about 2 KB each) and may make 100,000
        gc.enable()
    gt = testset_cache.load(bench, ground_truth, limit)
    matched = _validate(bench, predictions, gt, limit)
    # The test set and the predictions live until the process ends and hold no cycles: the
    # collector need not walk them again in every full collection (about 10 % of a cold run).
    gc.freeze()
    if strict:
        matched.report.refuse_order_only()
    from medvidbench.cli.terminal import count_bar, print_validation, print_warnings, progress_bar

    if not matched.report.ok:
        print_validation(matched.report, err)
        raise click.exceptions.Exit(ExitCode.INVALID_FILE)
    print_warnings(matched.report, err)

    wanted = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    with (
        progress_bar(err, enabled=len(gt) > 20_000 and not as_json) as advance,
        count_bar(err, "judging caption pairs", enabled=llm is not None) as judged,
    ):
        report = run(
            matched,
            gt,
            rules.name,
            benchmark=bench,
            tasks=wanted,
            progress=advance,
            judge=llm,
            judge_progress=judged,
            similarity=similarity,
            options=parse_options(option or []),
            bootstrap=replicates if ci or per_item else None,
            seed=seed,
            per_item=per_item,
        )
    report.model = model_name
    _write_report(report, bench, out, as_json)


def _write_report(report: Any, bench: Any, out: Path | None, as_json: bool) -> None:
    """The report as JSON to ``out`` and/or standard output, else as the summary tables."""
    from medvidbench.cli.terminal import print_report

    body = json.dumps(report.to_dict(), indent=2)
    if out is not None:
        out.write_text(body + "\n", encoding="utf-8")
    if as_json:
        sys.stdout.write(body + "\n")
    else:
        print_report(report, bench, consoles.console())
        if out is not None:
            consoles.console().print(f"report written to {escape(str(out))}", highlight=False)


def read_input(path: Path, max_bytes: int | None = None) -> tuple[Path | bytes, str]:
    """A file argument as given, or for ``-`` the bytes of standard input (named so)."""
    if str(path) != "-":
        return path, str(path)
    from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_stdin

    return read_stdin(max_bytes or DEFAULT_MAX_BYTES), "<stdin>"
