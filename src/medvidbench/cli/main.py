"""The ``medvidbench`` command line: thin adapters over the library.

Each command parses its options, calls one library function and renders the result. User
mistakes end with a one-line message and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from medvidbench import __version__
from medvidbench.cli import consoles
from medvidbench.core.errors import ExitCode, MedVidBenchError, UsageError

app = typer.Typer(
    name="medvidbench",
    help="Evaluate medical video-language models on MedVidBench, and run its leaderboard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help text: Typer's rich help pulls in a Markdown renderer (~40 ms on every --help).
    rich_markup_mode=None,
)
# soft_wrap: a line is never broken at 80 columns when stderr is a file or a pipe, so a command
# printed for the reader to copy (serve's banner) stays whole.
err = consoles.console(stderr=True, soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])


def friendly(func: F) -> F:
    """Turn our own errors into a message and an exit code instead of a traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MedVidBenchError as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        print(f"medvidbench {__version__}")
        raise typer.Exit()


BenchmarkSlug = Annotated[
    str | None,
    typer.Option(
        "--benchmark",
        envvar="MEDVIDBENCH_BENCHMARK",
        help="Benchmark slug (default: MEDVIDBENCH_BENCHMARK, else the only installed or hosted "
        "benchmark, else medvidbench).",
    ),
]


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    no_color: Annotated[
        bool,
        typer.Option(
            "--no-color",
            help="Plain output: no colour, bold or other escape sequence (as NO_COLOR=1 does).",
        ),
    ] = False,
) -> None:
    """Evaluate medical video-language models on MedVidBench, and run its leaderboard."""
    if no_color:
        consoles.use_plain_output(err)


@app.command()
@friendly
def synth(
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Folder to write the files into.")],
    samples: Annotated[
        int | None,
        typer.Option(min=1, help="Number of test samples (default: the published test set's)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same files.")] = 0,
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
    written = bench.demo.synthesise(out_dir, samples, seed)
    for name, path in written.items():
        print(f"{name:>13}  {path}")


Predictions = Annotated[
    list[Path],
    typer.Argument(
        help="Prediction file (.json or .jsonl; '-' reads standard input); several files or a "
        "folder make one submission (the per-GPU files of one MedGRPO-Code run, say)."
    ),
]
Strict = Annotated[
    bool,
    typer.Option(
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


@app.command()
@friendly
def validate(
    predictions: Predictions,
    ground_truth: Annotated[
        Path | None, typer.Option("--ground-truth", help="Ground-truth file.")
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            "--questions",
            help="The public questions file (the test file without answers), instead of "
            "--ground-truth: checks coverage, ids, qa_types, answer formats and order.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    require_complete: Annotated[
        bool, typer.Option(help="Exit non-zero for a partial submission too.")
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
        gt = bench.load_ground_truth(ground_truth)
    report = _validate(bench, predictions, gt).report
    if strict:
        report.refuse_order_only()
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_validation(report, consoles.console())
    if not report.ok or (require_complete and not report.complete):
        raise typer.Exit(ExitCode.INVALID_FILE)


@app.command()
@friendly
def evaluate(
    predictions: Predictions,
    ground_truth: Annotated[Path, typer.Option("--ground-truth", help="Ground-truth file.")],
    profile: Annotated[
        str | None,
        typer.Option(
            help="Metric profile (default: the benchmark's first; MedVidBench: leaderboard-v1, "
            "the published numbers, or strict-v2)."
        ),
    ] = None,
    judge: Annotated[
        str,
        typer.Option(
            help="Caption judge: none (caption metrics stay null) or openai (any "
            "OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY)."
        ),
    ] = "none",
    judge_model: Annotated[
        str | None, typer.Option(help="Judge model name (default: MEDVIDBENCH_JUDGE_MODEL).")
    ] = None,
    judge_cache: Annotated[
        Path | None,
        typer.Option(help="Judgement cache file (default: MEDVIDBENCH_JUDGE_CACHE_PATH)."),
    ] = None,
    similarity: Annotated[
        bool, typer.Option(help="Also report the offline caption-similarity diagnostic.")
    ] = False,
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated tasks to score (default: all).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report as JSON here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="KEY=VALUE scoring option of the benchmark, repeatable "
            "(MedSG-Bench: parser=strong|old, coordinates=pixel|0-1000|0-1).",
        ),
    ] = None,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            envvar="MEDVIDBENCH_MAX_SUBMISSION_BYTES",
            help="Largest file read, in bytes (default 1 GiB).",
        ),
    ] = None,
    ci: Annotated[
        bool,
        typer.Option(
            "--ci",
            help="Also print 95 % confidence intervals (cluster bootstrap over test items; "
            "docs/statistics.md).",
        ),
    ] = False,
    replicates: Annotated[
        int, typer.Option(min=100, max=100_000, help="Bootstrap replicates for --ci.")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed for --ci.")] = 0,
    strict: Strict = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Score a prediction file, offline.

    Prints a summary table (or the JSON report) and exits 0; an invalid file exits 4 with every
    problem listed. Tasks the file leaves out are reported as missing, never as 0.
    PREDICTIONS '-' reads standard input.
    """
    from medvidbench import library
    from medvidbench.core.formats import DEFAULT_MAX_BYTES

    bench = library.benchmark(benchmark)
    rules = bench.profile(profile)  # an unknown profile stops here, before any file is read
    limit = max_bytes or DEFAULT_MAX_BYTES
    llm = _judge(judge, judge_model, judge_cache, bench)
    gt = bench.load_ground_truth(ground_truth, limit)
    matched = _validate(bench, predictions, gt, limit)
    if strict:
        matched.report.refuse_order_only()
    from medvidbench.cli.terminal import (
        count_bar,
        print_report,
        print_validation,
        print_warnings,
        progress_bar,
    )

    if not matched.report.ok:
        print_validation(matched.report, err)
        raise typer.Exit(ExitCode.INVALID_FILE)
    print_warnings(matched.report, err)

    wanted = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    with (
        progress_bar(err, enabled=len(gt) > 20_000 and not as_json) as advance,
        count_bar(err, "judging caption pairs", enabled=llm is not None) as judged,
    ):
        report = library.evaluate(
            matched,
            gt,
            rules.name,
            benchmark=bench,
            tasks=wanted,
            progress=advance,
            judge=llm,
            judge_progress=judged,
            similarity=similarity,
            options=_options(option or []),
            bootstrap=replicates if ci else None,
            seed=seed,
        )
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
    from medvidbench.core.formats import DEFAULT_MAX_BYTES

    limit = max_bytes or DEFAULT_MAX_BYTES
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"standard input is larger than the limit of {limit:,} bytes")
    return data, "<stdin>"


def _options(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` command-line options as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _judge(judge: str, model: str | None, cache: Path | None, bench: Any) -> Any:
    """The ``--judge`` option's judge: None for ``none``; for ``openai`` the one the settings
    describe (the client is imported only for a run that judges)."""
    if judge not in ("none", "openai"):
        raise UsageError(f"unknown judge {judge!r}; expected none or openai")
    if judge == "none":
        return None
    from medvidbench.library import judge_from_settings

    return judge_from_settings(bench, model, cache)


def main() -> None:
    """Entry point of the ``medvidbench`` command."""
    import medvidbench.cli.bridges
    import medvidbench.cli.rewards
    import medvidbench.cli.server  # noqa: F401  (registers the server commands on ``app``)

    app()
