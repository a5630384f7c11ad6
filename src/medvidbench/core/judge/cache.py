"""The judgement cache: a paid call is never made twice for the same question.

A judgement is keyed by everything that could change it: judge model, endpoint identity, prompt
version, temperature, seed, task type, prediction text and reference text. Each judgement is
committed as soon as it arrives, so a crash loses nothing that finished. The evaluator uses
:class:`SQLiteJudgeCache`; the server plugs in its own database behind :class:`JudgeCache`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Judgement:
    """One judge answer, as stored."""

    scores: dict[str, int]
    model_reported: str
    tokens_in: int
    tokens_out: int
    created_at: str


def cache_key(config_id: str, task: str, prediction: str, reference: str) -> str:
    """A stable key for one judgement under one judge configuration."""
    blob = json.dumps([config_id, task, prediction, reference], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgeCache(Protocol):
    """Where judgements are kept between runs."""

    def get_many(self, keys: list[str]) -> dict[str, Judgement]: ...

    def put(self, key: str, judgement: Judgement) -> None: ...


class MemoryJudgeCache:
    """A cache that lives as long as the process (tests, one-off runs)."""

    def __init__(self) -> None:
        self._data: dict[str, Judgement] = {}

    def get_many(self, keys: list[str]) -> dict[str, Judgement]:
        return {k: self._data[k] for k in keys if k in self._data}

    def put(self, key: str, judgement: Judgement) -> None:
        self._data[key] = judgement

    def __len__(self) -> int:
        return len(self._data)


class SQLiteJudgeCache:
    """A cache in one SQLite file (WAL mode, safe for several processes on one machine)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            # Durable across a crash of this process (what resuming needs) without an fsync per
            # judgement, which would stall the event loop thousands of times.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._db.commit()

    def get_many(self, keys: list[str]) -> dict[str, Judgement]:
        out: dict[str, Judgement] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, value FROM judgements WHERE key IN ({marks})", chunk
                ).fetchall()
                out.update({k: Judgement(**json.loads(v)) for k, v in rows})
        return out

    def put(self, key: str, judgement: Judgement) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgements VALUES (?, ?)",
                (key, json.dumps(asdict(judgement))),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
