"""``medvidbench import`` and ``medvidbench export-task``: bridges to the evaluation toolkits
researchers already run (lmms-eval, VLMEvalKit), through the benchmark's importers.

(``export-task``, not ``export``: ``medvidbench export`` prints a server's board.)"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from medvidbench.cli.app import BenchmarkSlug, friendly, output_file, output_folder
from medvidbench.cli.consoles import console, escape
from medvidbench.cli.params import Argument, Option
from medvidbench.core.errors import (
    InvalidGroundTruthError,
    Problem,
    ProblemList,
    UsageError,
)

Questions = Annotated[
    Path | None,
    Option(
        "--questions",
        help="The test file (the public questions file will do): fills in each answer's id "
        "and qa_type and checks it belongs to the question at its index.",
    ),
]


def _importers(bench: Any) -> Mapping[str, Any]:
    found: Mapping[str, Any] = bench.importers  # the benchmark's importers capability
    return found


def _pick(bench: Any, name: str) -> Any:
    found = _importers(bench)
    if name not in found:
        known = ", ".join(found) or "none"
        raise UsageError(f"benchmark {bench.slug!r} has no importer {name!r} (it has: {known})")
    return found[name]


def _source(path: Path) -> tuple[bytes, str]:
    """A file's bytes and name; ``-`` is standard input (both within the size limit)."""
    from medvidbench.core.formats import read_bytes, read_stdin

    if str(path) == "-":
        return read_stdin(), "-"
    return read_bytes(path), path.name


def _questions(path: Path | None) -> list[dict[str, Any]] | None:
    """The test file's records as plain objects: a JSON list, a dict keyed "0".., JSONL, or
    a toolkit's question table (VLMEvalKit's dataset ``.tsv`` or ``.xlsx``)."""
    if path is None:
        return None
    import msgspec

    from medvidbench.core.errors import InvalidSubmissionError
    from medvidbench.core.formats import read_bytes
    from medvidbench.core.tables import read_table

    data = read_bytes(path)
    if path.suffix.lower() in (".tsv", ".xlsx"):
        try:
            return read_table(data, path.name)
        except InvalidSubmissionError as exc:
            raise _bad_questions(path, "; ".join(p.message for p in exc.problems.items)) from None
    try:
        decoded: Any = msgspec.json.decode(data)
    except msgspec.DecodeError:
        try:
            decoded = [msgspec.json.decode(line) for line in data.splitlines() if line.strip()]
        except msgspec.DecodeError as exc:
            raise _bad_questions(path, f"not JSON or JSONL: {exc}") from None
    records = list(decoded.values()) if isinstance(decoded, dict) else decoded
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise _bad_questions(path, "expected a list of question records")
    return records


def _bad_questions(path: Path, message: str) -> InvalidGroundTruthError:
    problems = ProblemList()
    problems.add(Problem("unreadable", message))
    return InvalidGroundTruthError(problems, str(path))


@friendly
def import_(
    toolkit: Annotated[
        str, Argument(help="The toolkit that wrote SOURCE: lmms-eval or vlmevalkit.")
    ],
    source: Annotated[
        Path,
        Argument(
            help="Its output: lmms-eval's --log_samples samples_<task>.jsonl; VLMEvalKit's "
            "<model>_<dataset>.xlsx, .tsv or .json. '-' reads standard input."
        ),
    ],
    out: Annotated[Path, Option("--out", "-o", help="The submission file to write.")],
    questions: Questions = None,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Convert another toolkit's output into a submission file keyed by 'index'.

    Each record's 'index' is its question's position in the test file, so the submission
    matches exactly whatever order the toolkit wrote. A file whose answers do not line up with
    the test file is refused (exit 4) with every problem listed.
    """
    from medvidbench import benchmarks

    output_file(out)
    bench = benchmarks.get(benchmark)
    importer = _pick(bench, toolkit)
    data, name = _source(source)
    records = importer.to_submission(data, filename=name, questions=_questions(questions))
    import msgspec

    out.write_bytes(msgspec.json.format(msgspec.json.encode(records), indent=1) + b"\n")
    err = console(stderr=True, soft_wrap=True)
    err.print(
        f"wrote {len(records):,} answers, keyed by test-file index, to {escape(str(out))}",
        highlight=False,
    )
    if questions is None:
        err.print(
            "note: without --questions the answers were not checked against the test file; "
            "'medvidbench validate' will check them",
            highlight=False,
        )


@friendly
def export_task(
    toolkit: Annotated[str, Argument(help="The toolkit to write a task for: lmms-eval.")],
    folder: Annotated[Path, Argument(help="The folder to write it into.")],
    questions: Annotated[
        Path | None,
        Option(
            "--questions",
            help="The test file (the public questions file will do): its questions become the "
            "task's documents.",
        ),
    ] = None,
    force: Annotated[
        bool,
        Option("--force", help="Replace files in FOLDER that export-task did not write."),
    ] = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Write a task for another toolkit whose output is a ready submission file.

    lmms-eval: medvidbench.yaml, utils.py and the questions as JSONL; run lmms-eval with
    --tasks medvidbench --include_path FOLDER. Its aggregation writes
    OUTPUT_PATH/submissions/medvidbench-submission-<time>.json.
    """
    from medvidbench import benchmarks
    from medvidbench.core.benchmark import TaskWriter

    bench = benchmarks.get(benchmark)
    makers = {name: imp for name, imp in _importers(bench).items() if isinstance(imp, TaskWriter)}
    if toolkit not in makers:
        known = ", ".join(makers) or "none"
        raise UsageError(
            f"benchmark {bench.slug!r} has no task for {toolkit!r} (it has tasks for: {known})"
        )
    output_folder(folder, "FOLDER")
    files = makers[toolkit].task_files(_questions(questions), folder)
    _write_task(folder, files, force)
    err = console(stderr=True, soft_wrap=True)
    err.print(f"wrote {', '.join(files)} to {escape(str(folder))}", highlight=False)
    if questions is None:
        err.print(
            f"note: no --questions given; run again with --questions TEST.json to write the "
            f"task's documents into {escape(str(folder))}",
            highlight=False,
        )


# What export-task wrote into a folder, by name and sha256: a later run replaces those files
# (unchanged since), and nothing else without --force.
WRITTEN = ".medvidbench-export.json"


def _write_task(folder: Path, files: Mapping[str, bytes], force: bool) -> None:
    """Write ``files`` into ``folder``: never through a symbolic link, never over a file this
    command did not write (or that was changed since) unless ``force``; each file whole or
    not at all."""
    import hashlib
    import json
    import os

    folder.mkdir(parents=True, exist_ok=True)
    record = folder / WRITTEN
    try:
        earlier = json.loads(record.read_text()) if record.is_file() else {}
    except (OSError, ValueError):
        earlier = {}
    for name in [*files, WRITTEN]:
        target = folder / name
        if "/" in name or name in ("", ".", ".."):
            raise UsageError(f"refusing to write {name!r}: not a plain file name")
        if target.is_symlink():
            raise UsageError(
                f"{str(target)!r} is a symbolic link: export-task never writes through one"
            )
        if name == WRITTEN or not target.exists() or force:
            continue
        digest = hashlib.sha256(target.read_bytes()).hexdigest() if target.is_file() else None
        if digest is None or earlier.get(name) != digest:
            raise UsageError(
                f"{str(target)!r} exists and was not written by export-task (or was changed "
                "since): move it away, choose another folder, or pass --force to replace it"
            )
    written = {}
    for name, content in [*files.items()]:
        partial = folder / f".{name}.partial"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        with os.fdopen(os.open(partial, flags, 0o644), "wb") as out:
            out.write(content)
        os.replace(partial, folder / name)
        written[name] = hashlib.sha256(content).hexdigest()
    record.write_text(json.dumps(written, indent=1) + "\n")
