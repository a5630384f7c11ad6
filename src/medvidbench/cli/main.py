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
from rich.console import Console
from rich.markup import escape

from medvidbench import __version__
from medvidbench.core.errors import MedVidBenchError, UsageError

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
err = Console(stderr=True, soft_wrap=True)
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
) -> None:
    """Evaluate medical video-language models on MedVidBench, and run its leaderboard."""


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
    if bench.synthesise is None:
        raise UsageError(f"benchmark {bench.slug!r} has no synthetic generator")
    written = bench.synthesise(out_dir, samples, seed)
    for name, path in written.items():
        print(f"{name:>13}  {path}")


@app.command()
@friendly
def validate(
    predictions: Annotated[Path, typer.Argument(help="Prediction file (.json or .jsonl).")],
    ground_truth: Annotated[Path, typer.Option("--ground-truth", help="Ground-truth file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    require_complete: Annotated[
        bool, typer.Option(help="Exit non-zero for a partial submission too.")
    ] = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Check a prediction file the way the leaderboard server does, offline.

    Exit code 0: valid (or partial: some tasks left out, reported as missing); 2: invalid.
    """
    from medvidbench import benchmarks
    from medvidbench.cli.terminal import print_validation

    bench = benchmarks.get(benchmark)
    gt = bench.load_ground_truth(ground_truth)
    report = bench.validate_submission(predictions, gt).report
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        print_validation(report, Console())
    if not report.ok or (require_complete and not report.complete):
        raise typer.Exit(2)


@app.command()
@friendly
def evaluate(
    predictions: Annotated[Path, typer.Argument(help="Prediction file (.json or .jsonl).")],
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
    benchmark: BenchmarkSlug = None,
) -> None:
    """Score a prediction file, offline.

    Prints a summary table (or the JSON report) and exits 0; an invalid file exits 2 with every
    problem listed. Tasks the file leaves out are reported as missing, never as 0.
    """
    from medvidbench import library

    bench = library.benchmark(benchmark)
    rules = bench.profile(profile)  # an unknown profile stops here, before any file is read
    llm = _judge(judge, judge_model, judge_cache, bench)
    gt = library.load_ground_truth(ground_truth, benchmark=bench, max_bytes=max_bytes or None)
    matched = library.validate(predictions, gt, benchmark=bench, max_bytes=max_bytes or None)
    if not matched.report.ok:
        from medvidbench.cli.terminal import print_validation

        print_validation(matched.report, err)
        raise typer.Exit(2)
    from medvidbench.cli.terminal import count_bar, print_report, progress_bar

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
        print_report(report, bench, Console())
        if out is not None:
            Console().print(f"report written to {escape(str(out))}", highlight=False)


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
    import medvidbench.cli.rewards
    import medvidbench.cli.server  # noqa: F401  (registers the server commands on ``app``)

    app()
