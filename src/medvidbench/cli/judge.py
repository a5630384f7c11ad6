"""``medvidbench judge agreement``: how far two or more LLM judges agree (docs/judge.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from medvidbench.cli import consoles
from medvidbench.cli.app import BenchmarkSlug, friendly, output_file
from medvidbench.cli.consoles import escape
from medvidbench.cli.params import Argument, Group, Option
from medvidbench.cli.tables import Table
from medvidbench.core.errors import UsageError

judge_app = Group(help="The LLM judge: how far judges agree (docs/judge.md).", no_args_is_help=True)


def _named(paths: list[Path]) -> dict[str, Path]:
    """Each prediction file by model name: NAME=PATH, or the file's stem."""
    out: dict[str, Path] = {}
    for given in paths:
        name, sep, rest = str(given).partition("=")
        path = Path(rest) if sep else given
        name = name if sep else given.stem
        if name in out:
            raise UsageError(f"two prediction files are named {name!r}: write NAME=PATH")
        out[name] = path
    return out


@judge_app.subcommand()
@friendly
def agreement(
    predictions: Annotated[
        list[Path],
        Argument(
            help="Prediction files, one per model (NAME=PATH names a model; default the "
            "file's stem). Three or more give the board-level Kendall tau."
        ),
    ],
    ground_truth: Annotated[Path, Option("--ground-truth", help="Ground-truth file.")],
    judges: Annotated[
        list[str],
        Option(
            "--judge",
            help="A judge: MODEL or MODEL@BASE_URL (an OpenAI-compatible endpoint), repeated; "
            "the first is the reference the others are compared with. Key, timeout and "
            "concurrency come from the settings (OPENAI_API_KEY, MEDVIDBENCH_JUDGE_*).",
        ),
    ],
    items: Annotated[
        int,
        Option(
            min=2,
            max=100_000,
            help="Test items sampled (each judged task in "
            "proportion to its size; every model's pairs on them).",
        ),
    ] = 200,
    retest: Annotated[
        int, Option(min=0, max=100_000, help="Pairs asked of every judge a second time.")
    ] = 50,
    replicates: Annotated[
        int, Option(min=0, max=10_000, help="Cluster-bootstrap replicates of the intervals.")
    ] = 1000,
    seed: Annotated[int, Option(help="Seed of the item sample and the resamples.")] = 0,
    cache: Annotated[
        Path | None, Option(help="Judgement cache (default: MEDVIDBENCH_JUDGE_CACHE_PATH).")
    ] = None,
    out: Annotated[Path | None, Option("--out", help="Write the card (JSON) here.")] = None,
    as_json: Annotated[bool, Option("--json", help="Print the card as JSON.")] = False,
    benchmark: BenchmarkSlug = None,
) -> None:
    """Ask two or more judges about the same caption pairs and print their agreement card.

    Per task and rubric aspect: quadratic-weighted kappa of each judge with the first (exact
    agreement beside it), Spearman of the pairs' mean scores, Kendall tau of the models'
    order, the length bias, a calibration example, Krippendorff's alpha of all judges and
    each judge's test-retest agreement, all with cluster-bootstrap 95 % intervals.
    """
    from medvidbench import benchmarks
    from medvidbench.core.judge.card import Design, ask, build, collect
    from medvidbench.core.judge.client import judge_from_spec

    if len(judges) < 2:
        raise UsageError("give at least two --judge options (the first is the reference)")
    if out is not None:
        output_file(out)
    bench = benchmarks.get(benchmark)
    if bench.judging is None:
        raise UsageError(f"no LLM judge scores benchmark {bench.slug!r}")
    rubric = bench.judging.rubric
    built = [judge_from_spec(spec, rubric.version, cache) for spec in judges]
    collected = collect(bench, ground_truth, _named(predictions), items, seed)
    ratings = ask(built, collected, rubric, retest, seed)
    card = build(collected, ratings, Design(replicates, seed))
    if out is not None:
        out.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps(card, indent=1))
        return
    show(card)
    if out is not None:
        print(f"card written to {out}")


def _cell(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        return "n/a"
    if e.get("low") is None:
        return f"{e['value']:.2f}"
    return f"{e['value']:.2f} [{e['low']:.2f}, {e['high']:.2f}]"


def show(card: dict[str, Any]) -> None:
    """The card as tables, one per judge compared with the reference."""
    console = consoles.console()
    d = card["design"]
    names = [f"{j['model']} ({j['endpoint']})" for j in card["judges"]]
    console.print(
        f"{d['pairs']} caption pairs from {d['items']} test items, {d['clusters']} videos, "
        f"{d['models']} models; intervals from {d['replicates']} cluster-bootstrap replicates",
        highlight=False,
    )
    columns = [*card["tasks"], "all"]
    for comp in card["comparisons"]:
        title = f"{escape(names[comp['judge']])} against {escape(names[0])}"
        table = Table(title=title, title_justify="left")
        table.add_column("")
        for task in columns:
            table.add_column(task.replace("_", " "))
        rows: list[tuple[str, str, str | None]] = [
            *((f"kappa {a}", "kappa", a) for a in card["aspects"]),
            ("Spearman", "spearman", None),
            ("board tau", "board_tau", None),
            ("B - A", "difference", None),
            ("length bias", "length_bias", None),
        ]
        for label, key, aspect in rows:
            cells = (comp[key][t] if aspect is None else comp[key][t][aspect] for t in columns)
            table.add_row(label, *map(_cell, cells))
        console.print(table)
        exact = comp["exact"]["all"]
        console.print(
            "exact agreement, all tasks (shown beside the kappas only: it overstates): "
            + ", ".join(f"{a} {_cell(exact[a])}" for a in card["aspects"]),
            highlight=False,
        )
    alpha = card["alpha"]["all"]
    console.print(
        "Krippendorff's alpha, ordinal, every judge: "
        + ", ".join(f"{a} {_cell(alpha[a])}" for a in card["aspects"]),
        highlight=False,
    )
    for name, r in zip(names, card["retest"], strict=True):
        console.print(
            f"test-retest {escape(name)}: kappa {_cell(r['kappa'])}, exact {_cell(r['exact'])} "
            f"on {r['pairs']} pairs asked twice",
            highlight=False,
        )
