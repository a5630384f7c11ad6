"""Training rows from a training file: the columns TRL's and verl's reward functions read,
with the pixels a vision model must see, written as JSONL or Parquet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from medvidbench.core.benchmark import Benchmark
from medvidbench.core.errors import UsageError
from medvidbench.rewards.rows import ground_truth_column, spec_of

STYLES = ("trl", "verl")
SUFFIXES = (".jsonl", ".parquet")
VERL_HINT = (
    "verl 0.9.x: reward.reward_manager.name=naive reward.custom_reward_function.path="
    "{path} reward.custom_reward_function.name=compute_score (docs/rewards.md); verl 0.9 "
    "ignores the old custom_reward_function.* and reward_model.reward_manager settings"
)


def read_records(path: Path) -> list[Mapping[str, Any]]:
    """The training file's records as plain objects (a JSON list, a dict keyed "0".., or
    JSONL), in file order: what a benchmark's ``visuals`` reads beside its items."""
    import msgspec

    from medvidbench.core.formats import read_bytes

    data = read_bytes(path)
    try:
        decoded: Any = msgspec.json.decode(data)
    except msgspec.DecodeError:
        decoded = [msgspec.json.decode(line) for line in data.splitlines() if line.strip()]
    records = list(decoded.values()) if isinstance(decoded, dict) else decoded
    if not isinstance(records, list):
        return []
    return [r if isinstance(r, dict) else {} for r in records]


def _under(media_dir: Path | None, path: str) -> str:
    if media_dir is None or os.path.isabs(path) or "://" in path:
        return path
    return os.path.join(media_dir, path)


def _visuals(found: Mapping[str, list[Any]], media_dir: Path | None) -> dict[str, list[Any]]:
    images = [_under(media_dir, str(p)) for p in found.get("images", [])]
    videos = []
    for v in found.get("videos", []):
        video = v["video"]
        where = [_under(media_dir, f) for f in video] if isinstance(video, list) else None
        videos.append({**v, "video": where if where is not None else _under(media_dir, video)})
    return {"images": images, "videos": videos}


def training_rows(
    bench: Benchmark,
    data: Path,
    style: str,
    tasks: Collection[str] | None = None,
    media_dir: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """One row per item of a task with a reward (``tasks``: only those); the file is read and
    the options checked before the first row is asked for.

    ``trl``: prompt, ground_truth, benchmark, task, dataset, media. ``verl``: data_source
    (``benchmark/task``), prompt (``<image>``/``<video>`` placeholders before the question, one
    per entry of ``images``/``videos``), images, videos, ability, reward_model, extra_info,
    media: the fields verl's RLHF dataset and reward loop read.
    """
    if style not in STYLES:
        raise UsageError(f"unknown style {style!r}; expected trl or verl")
    spec = spec_of(bench)
    unknown = sorted(set(tasks or ()) - set(spec.tasks))
    if unknown:
        raise UsageError(
            f"unknown task(s) {', '.join(unknown)}; {bench.slug} has {', '.join(spec.tasks)}"
        )
    items = [
        item
        for item in bench.load_ground_truth(data).samples
        if item.task in spec.tasks and (tasks is None or item.task in tasks)
    ]
    extras = spec.row_extras(items)
    records = read_records(data) if style == "verl" else []
    return _rows(bench, items, extras, style, records, media_dir)


def _rows(
    bench: Benchmark,
    items: list[Any],
    extras: list[dict[str, Any]],
    style: str,
    records: list[Mapping[str, Any]],
    media_dir: Path | None,
) -> Iterator[dict[str, Any]]:
    spec = spec_of(bench)
    for item, extra in zip(items, extras, strict=True):
        asked = spec.prompt(item)
        gt = ground_truth_column(bench, item, extra)
        if style == "trl":
            yield {
                "prompt": [{"role": "user", "content": asked["question"]}],
                "ground_truth": gt,
                "benchmark": bench.slug,
                "task": item.task,
                "dataset": item.dataset,
                "media": asked["media"],
            }
            continue
        record = records[item.index] if item.index < len(records) else {}
        seen = _visuals(spec.visuals(item, record), media_dir)
        tags = "<image>" * len(seen["images"]) + "<video>" * len(seen["videos"])
        question = f"{tags}\n{asked['question']}" if tags else asked["question"]
        yield {
            "data_source": f"{bench.slug}/{item.task}",
            "prompt": [{"role": "user", "content": question}],
            "images": seen["images"],
            "videos": seen["videos"],
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


def write_rows(rows: Iterator[dict[str, Any]], out: Path) -> int:
    """Write ``rows`` to ``out`` (``.jsonl``, or ``.parquet`` with the ``parquet`` extra),
    through a temporary file, and return how many were written."""
    if out.suffix not in SUFFIXES:
        raise UsageError(f"--out must name a .jsonl or .parquet file; got {out.name!r}")
    tmp = out.with_name(out.name + ".part")
    if out.suffix == ".parquet":
        count = _write_parquet(list(rows), tmp)
    else:
        count = 0
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
    tmp.replace(out)
    return count


def _write_parquet(rows: list[dict[str, Any]], tmp: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(
            "writing .parquet needs pyarrow: pip install pyarrow (the parquet extra) "
            "(or write .jsonl, which verl reads too)"
        ) from None
    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UsageError(
            f"these rows cannot share one Parquet column type ({exc}); a file that names some "
            "clips by video file and others by frame list can be written as .jsonl"
        ) from None
    pq.write_table(table, tmp)
    return len(rows)
