"""A reward batch's rows: the ground-truth column a preparation writes, decoded into a
benchmark's items, and the answer text of a completion.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from medvidbench import benchmarks
from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import RewardSpec

_SURROGATE = re.compile("[\ud800-\udfff]")


class RewardInputError(UsageError):
    """A batch's ground truth or completion is unusable; the message names the row."""


def spec_of(bench: Benchmark) -> RewardSpec[Any]:
    if bench.rewards is None:
        raise UsageError(f"benchmark {bench.slug!r} offers no training rewards")
    spec: RewardSpec[Any] = bench.rewards()
    return spec


def ground_truth_column(bench: Benchmark, item: Any, extras: Mapping[str, Any]) -> str:
    """The ground-truth column's JSON for one item (what the adapters read)."""
    data = {"benchmark": bench.slug, "item": spec_of(bench).encode_item(item, extras)}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=65536)
def _decode_text(text: str) -> tuple[str, Any, dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    except RecursionError:
        raise ValueError("not JSON a reward reads (nested too deeply)") from None
    return _decode(data)


def _decode(data: Any) -> tuple[str, Any, dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("item"), dict):
        raise ValueError('expected {"benchmark": slug, "item": {...}} as the preparation writes')
    slug = data.get("benchmark")
    if not isinstance(slug, str):
        raise ValueError("benchmark must be a benchmark's slug")
    try:
        bench = benchmarks.get(slug)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    if bench.rewards is None:
        raise ValueError(f"benchmark {slug!r} offers no training rewards")
    item, extras = spec_of(bench).decode_item(data["item"])
    return slug, item, extras


def decode_row(ground_truth: Any, where: str) -> tuple[str, Any, dict[str, Any]]:
    """(benchmark slug, item, extras) from a ground-truth column value (JSON text or dict)."""
    try:
        if isinstance(ground_truth, str):
            return _decode_text(ground_truth)
        return _decode(ground_truth)
    except ValueError as exc:
        raise RewardInputError(f"{where}: {exc}") from None


def completion_text(completion: Any, where: str = "completion") -> str:
    """The answer text of a completion: a string, or chat messages (the last assistant turn's
    content, itself a string or a list of parts whose text parts are joined)."""
    if isinstance(completion, str):
        return _encodable(completion)
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content", "")
                if isinstance(content, str):
                    return _encodable(content)
                if isinstance(content, list):
                    return _encodable(
                        "".join(
                            str(p.get("text", ""))
                            for p in content
                            if isinstance(p, dict) and p.get("type", "text") == "text"
                        )
                    )
        return ""
    raise RewardInputError(
        f"{where}: expected a string or chat messages, got {type(completion).__name__}"
    )


def _encodable(text: str) -> str:
    """The text with each lone surrogate (undecodable bytes a pipeline kept with
    ``surrogateescape``) as U+FFFD: no UTF-8 encoder (the tokenizer's, a rollouts file's)
    takes one, and an answer is read the same with the replacement character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def declared_options(bench: Benchmark, matched: Any) -> dict[str, Any]:
    """The scoring options a prediction file declares that a rewarder takes (a file also
    carries what its checks recorded, MedSG-Bench's claimed IoUs and model name: not options)."""
    return {k: v for k, v in matched.options.items() if k in bench.option_names}


def answered_rows(
    bench: Benchmark, gt: Any, matched: Any
) -> tuple[list[tuple[str, Any, dict[str, Any]]], list[Any]]:
    """The (slug, item, extras) rows and answers of the items a matched prediction file
    answers, on the tasks that have a reward, in test-set order."""
    spec = spec_of(bench)
    items = list(gt.samples)
    extras = spec.row_extras(items)
    keep = [
        i
        for i, answer in enumerate(matched.predictions)
        if answer is not None and items[i].task in spec.tasks
    ]
    return [(bench.slug, items[i], extras[i]) for i in keep], [matched.predictions[i] for i in keep]
