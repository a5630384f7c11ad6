"""MedSG-Bench's test set: loading and validating the official JSON files (medsg.md §2-§3).

A ground truth is one JSON file (a per-task file or one combined list) or a folder of them, read
in name order. The items have no ids: an item is (task, k), its position among that task's
records in file order, which is the order the official script scores and writes them in.
Every problem is reported with its file, record and field; nothing is guessed.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medvidbench.core.errors import InvalidGroundTruthError, Problem, ProblemList
from medvidbench.core.formats import DEFAULT_MAX_BYTES, read_bytes

TASKS = (
    "Registered_Diff",
    "Non_Registered_Diff",
    "multi_view",
    "object_tracking",
    "concept",
    "patch",
    "crossmodal",
    "referring",
)


@dataclass(frozen=True, slots=True)
class Item:
    """One test item: a question whose answer is one box in pixels of its target image."""

    index: int  # position in the whole test set
    sample_id: str  # "<task>#<k>"
    task: str
    k: int  # position among the task's items: the identity (task, k)
    question: str
    images: tuple[str, ...]
    answer: tuple[float, float, float, float]
    size: tuple[float, float] | None
    dataset: str = "all"


@dataclass
class TestSet:
    """A loaded MedSG-Bench ground truth."""

    samples: list[Item]
    sha256: str
    files: dict[str, str]  # file name -> sha256
    warnings: ProblemList = field(default_factory=ProblemList)

    def __len__(self) -> int:
        return len(self.samples)

    def by_task(self) -> dict[str, list[Item]]:
        out: dict[str, list[Item]] = {}
        for item in self.samples:
            out.setdefault(item.task, []).append(item)
        return out


def _finite_numbers(value: object, n: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == n
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    )


def _check(rec: object, where: str, i: int, problems: ProblemList) -> dict[str, Any] | None:
    if not isinstance(rec, dict):
        problems.add(Problem("wrong-type", f"{where}: expected an object", i))
        return None
    start = len(problems)
    if rec.get("task") not in TASKS:
        problems.add(
            Problem(
                "unknown-task",
                f"{where}: task must be one of {', '.join(TASKS)}; got {rec.get('task')!r}",
                i,
            )
        )
    if not isinstance(rec.get("question"), str):
        problems.add(Problem("wrong-type", f"{where}: question must be a string", i))
    images = rec.get("images")
    if not (isinstance(images, list) and images and all(isinstance(x, str) for x in images)):
        problems.add(Problem("wrong-type", f"{where}: images must be a non-empty list of paths", i))
    if not _finite_numbers(rec.get("answer"), 4):
        problems.add(Problem("bad-box", f"{where}: answer must be 4 finite numbers", i))
    size = rec.get("size")
    if size is not None and not (_finite_numbers(size, 2) and min(size) > 0):
        problems.add(Problem("bad-size", f"{where}: size must be 2 positive numbers", i))
    return rec if len(problems) == start else None


def _files(source: str | Path | bytes, max_bytes: int) -> list[tuple[str, bytes]]:
    if isinstance(source, bytes):
        return [("ground truth", source)]
    path = Path(source)
    if path.is_dir():
        names = sorted(p for p in path.glob("*.json") if p.is_file())
        if not names:
            raise InvalidGroundTruthError(_one("no-records", f"no *.json file in {path}"))
        return [(p.name, read_bytes(p, max_bytes)) for p in names]
    return [(path.name, read_bytes(path, max_bytes))]


def _one(code: str, message: str) -> ProblemList:
    problems = ProblemList()
    problems.add(Problem(code, message))
    return problems


def load_ground_truth(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> TestSet:
    """Load and validate a MedSG-Bench ground truth (a JSON file, its bytes, or a folder).

    Raises:
        InvalidGroundTruthError: listing every problem with its file, record and field.
    """
    problems = ProblemList()
    records: list[tuple[str, dict[str, Any]]] = []
    task_file: dict[str, str] = {}
    digests: dict[str, str] = {}
    for name, data in _files(source, max_bytes):
        digests[name] = hashlib.sha256(data).hexdigest()
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            problems.add(Problem("not-json", f"{name}: not JSON ({exc})"))
            continue
        except RecursionError:
            problems.add(Problem("too-deep", f"{name}: nests arrays or objects too deeply"))
            continue
        if not isinstance(raw, list):
            problems.add(Problem("wrong-type", f"{name}: expected a JSON list of records"))
            continue
        for i, rec in enumerate(raw):
            checked = _check(rec, f"{name}, record {i}", i, problems)
            if checked is None:
                continue
            owner = task_file.setdefault(checked["task"], name)
            if owner != name:
                problems.add(
                    Problem(
                        "task-split",
                        f"{name}, record {i}: task {checked['task']!r} is also in {owner}; "
                        "a task's records must be in one file (their order is its identity)",
                        i,
                    )
                )
                continue
            records.append((name, checked))
    if not problems and not records:
        problems.add(Problem("no-records", "the ground truth holds no records"))
    if problems:
        raise InvalidGroundTruthError(problems, "" if isinstance(source, bytes) else str(source))
    seen: dict[str, int] = {}
    items: list[Item] = []
    warnings = ProblemList()
    for name, rec in records:
        k = seen.get(rec["task"], 0)
        seen[rec["task"]] = k + 1
        box = tuple(rec["answer"])
        size = tuple(rec["size"]) if rec.get("size") is not None else None
        item = Item(
            len(items),
            f"{rec['task']}#{k}",
            rec["task"],
            k,
            rec["question"],
            tuple(rec["images"]),
            box,
            size,
        )
        if box[2] <= box[0] or box[3] <= box[1]:
            warnings.add(
                Problem(
                    "degenerate-gt",
                    f"{name}: {item.sample_id} has a ground-truth box without area {list(box)}",
                    item.index,
                    item.sample_id,
                )
            )
        items.append(item)
    if len(digests) == 1:
        digest = next(iter(digests.values()))
    else:
        digest = hashlib.sha256(
            "".join(f"{n}\0{d}\n" for n, d in sorted(digests.items())).encode()
        ).hexdigest()
    return TestSet(items, digest, digests, warnings)
