"""Checking a judge agreement card that arrives from outside before it is stored or shown.

A card (:mod:`medvidbench.core.judge.card`) holds numbers and the judges' names only; :func:`check`
makes sure one read from a file does too: its kind and version, the benchmark and test set it was
computed on, texts only where a card names something, keys only from a card's vocabulary, and
every figure the About page reads where it reads it.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from medvidbench.core.errors import UsageError

if TYPE_CHECKING:
    from medvidbench.core.benchmark import Benchmark

KIND = "medvidbench.judge-agreement"
VERSION = 1
ALL = "all"  # a card's key of every task together

_TEXT_AT = re.compile(
    r"card\.(kind|benchmark|test_set|created_at)"
    r"|card\.(aspects|tasks)\[\d+\]"
    r"|card\.judges\[\d+\]\.(model|endpoint|config_id|prompt_version)"
)
_FIELDS = frozenset(
    (
        "kind",
        "version",
        "benchmark",
        "test_set",
        "created_at",
        "aspects",
        "tasks",
        "judges",
        "design",
        "comparisons",
        "alpha",
        "retest",
        "model",
        "endpoint",
        "config_id",
        "prompt_version",
        "answered",
        "items",
        "pairs",
        "pairs_per_task",
        "clusters",
        "models",
        "long_pairs",
        "retest_pairs",
        "replicates",
        "seed",
        "calibration_share",
        "judge",
        "kappa",
        "exact",
        "spearman",
        "difference",
        "length_bias",
        "board_tau",
        "calibration",
        "value",
        "low",
        "high",
        "n",
        "estimate",
        "weight",
        "labelled",
        "reference_mean",
        "judge_mean",
    )
)


def _only_numbers(value: Any, where: str, names: frozenset[str]) -> None:
    """Raise unless ``value`` holds numbers (finite), booleans and nulls, with texts only where
    a card names something (:data:`_TEXT_AT`) and object keys only among ``names``."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: not a finite number")
        return
    if isinstance(value, str):
        if not _TEXT_AT.fullmatch(where) or len(value) > 120:
            raise ValueError(f"{where}: a text where the card holds numbers")
        return
    if isinstance(value, list) and len(value) <= 64:
        for i, v in enumerate(value):
            _only_numbers(v, f"{where}[{i}]", names)
        return
    if isinstance(value, dict) and len(value) <= 64:
        for k, v in value.items():
            if k not in names:
                raise ValueError(f"{where}: unexpected key {str(k)[:40]!r}")
            _only_numbers(v, f"{where}.{k}", names)
        return
    raise ValueError(f"{where}: unexpected {type(value).__name__} (or over 64 entries)")


def check(card: Any, bench: Benchmark, test_set: str) -> dict[str, Any]:
    """A card from outside, checked before it is stored or shown: its kind and version, the
    benchmark and test set it was computed on, its tasks and aspects those of the benchmark,
    nothing in it but numbers, and texts only where a card names its benchmark, test set,
    date, tasks, aspects and judges (room for names, none for a caption).

    Raises:
        UsageError: naming the first thing wrong.
    """
    if not isinstance(card, dict) or card.get("kind") != KIND:
        raise UsageError(f"not a judge agreement card (its kind must be {KIND!r})")
    if card.get("version") != VERSION:
        raise UsageError(
            f"a judge agreement card of version {card.get('version')!r}; "
            f"this release reads version {VERSION}"
        )
    if card.get("benchmark") != bench.slug:
        raise UsageError(f"the card is of benchmark {card.get('benchmark')!r}, not {bench.slug!r}")
    if card.get("test_set") != test_set:
        raise UsageError(
            "the card was computed on another test set (sha256 "
            f"{str(card.get('test_set'))[:12]}...; the current one is {test_set[:12]}...)"
        )
    if bench.judging is None:
        raise UsageError(f"no LLM judge scores benchmark {bench.slug!r}")
    if card.get("aspects") != list(bench.judging.rubric.codes):
        raise UsageError("the card's rubric aspects are not this benchmark's")
    judged = set(bench.judged_scorers())
    tasks = card.get("tasks")
    if not isinstance(tasks, list) or not tasks or not set(tasks) <= judged:
        raise UsageError(f"the card's tasks must be some of {sorted(judged)}")
    names = _FIELDS | set(tasks) | set(card["aspects"]) | {ALL}
    try:
        _only_numbers(card, "card", frozenset(names))
    except ValueError as exc:
        raise UsageError(f"the card holds something it should not: {exc}") from None
    try:
        _check_shape(card, [*tasks, ALL], card["aspects"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"the card is not whole: {exc}") from None
    return card


_ESTIMATE = ("value", "low", "high", "n")
_DESIGN = ("items", "pairs", "clusters", "models", "retest_pairs", "replicates")


def _estimate(e: Any, where: str) -> None:
    if not isinstance(e, dict) or any(k not in e for k in _ESTIMATE):
        raise ValueError(f"{where} is not an estimate ({', '.join(_ESTIMATE)})")


def _check_shape(card: dict[str, Any], rows: list[str], aspects: list[str]) -> None:
    """Everything the About page reads is where it reads it (a card that passed the value
    check could still name a judge it does not list, or leave a task out)."""
    judges = card["judges"]
    if not isinstance(judges, list) or len(judges) < 2:
        raise ValueError("it lists fewer than two judges")
    for j in judges:
        if not all(isinstance(j.get(k), str) for k in ("model", "endpoint", "config_id")):
            raise ValueError("a judge without its model, endpoint and configuration")
        if not isinstance(j.get("answered"), int):
            raise ValueError("a judge without the count of pairs it answered")
    design = card["design"]
    if not all(isinstance(design.get(k), int) for k in _DESIGN):
        raise ValueError(f"its design needs {', '.join(_DESIGN)} as whole numbers")
    comparisons = card["comparisons"]
    if not isinstance(comparisons, list) or len(comparisons) != len(judges) - 1:
        raise ValueError("it must compare every judge but the first with the first")
    for n, comp in enumerate(comparisons, start=1):
        if comp["judge"] != n:
            raise ValueError(f"comparison {n} is of judge {comp['judge']!r}")
        for row in rows:
            for key in ("kappa", "exact"):
                for aspect in aspects:
                    _estimate(comp[key][row][aspect], f"{key} of {aspect} on {row}")
            for key in ("spearman", "difference", "length_bias", "board_tau"):
                _estimate(comp[key][row], f"{key} on {row}")
            calibration = comp["calibration"][row]
            if calibration is not None and not all(
                isinstance(calibration.get(k), int | float)
                for k in ("estimate", "low", "high", "pairs", "labelled")
            ):
                raise ValueError(f"the calibration on {row} is not whole")
    for row in rows:
        for aspect in aspects:
            _estimate(card["alpha"][row][aspect], f"alpha of {aspect} on {row}")
    retest = card["retest"]
    if not isinstance(retest, list) or len(retest) != len(judges):
        raise ValueError("it needs one test-retest entry per judge")
    for r in retest:
        _estimate(r["kappa"], "a test-retest kappa")
        if not isinstance(r.get("pairs"), int):
            raise ValueError("a test-retest entry without its count of pairs")
