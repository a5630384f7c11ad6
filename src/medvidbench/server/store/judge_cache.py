"""The judgement cache in the server's database (the evaluator uses a SQLite file instead)."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from medvidbench.core.judge.cache import Judgement
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import JudgeCacheRow


class DatabaseJudgeCache:
    """Judgements shared by every worker and submission of a deployment."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def get_many(self, keys: list[str]) -> dict[str, Judgement]:
        out: dict[str, Judgement] = {}
        with self.sessions() as session:
            for start in range(0, len(keys), 500):
                rows = session.scalars(
                    select(JudgeCacheRow).where(JudgeCacheRow.key.in_(keys[start : start + 500]))
                )
                out.update({r.key: Judgement(**r.value) for r in rows})
        return out

    def put(self, key: str, judgement: Judgement) -> None:
        try:
            with transaction(self.sessions) as session:
                if session.get(JudgeCacheRow, key) is None:
                    session.add(JudgeCacheRow(key=key, value=asdict(judgement)))
        except IntegrityError:
            pass  # another worker stored the same judgement first
