"""Database tables (SQLAlchemy 2). Tables only: queries live in the services.

One schema serves SQLite (the embedded default) and PostgreSQL. JSON columns hold metric
dictionaries and provenance; every status and role is a short string (the value of a
``Status`` or a ``Role``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from medvidbench.server.lifecycle import ACTIVE_SQL
from medvidbench.server.roles import Role


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


# Submissions in ACTIVE_SQL's states count (quota, duplicate files); the others do not.
# These hold their model name against everyone (a private run's name is nobody else's business).
HOLDS_NAME = f"{ACTIVE_SQL} AND visibility = 'public'"


class TestSet(Base):
    """A loaded test set of one benchmark plug-in (``slug``), identified by its ground-truth
    file's hash; each slug has at most one current test set, and boards belong to it."""

    __tablename__ = "benchmarks"  # the table keeps the name of earlier versions
    __test__ = False  # not a pytest test class, whatever its name
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(
        String(40), default="medvidbench", server_default="medvidbench", index=True
    )
    name: Mapped[str] = mapped_column(String(80))
    gt_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    sample_count: Mapped[int]
    task_counts: Mapped[dict[str, Any]]
    is_demo: Mapped[bool] = mapped_column(Boolean, default=False)
    is_current: Mapped[bool] = mapped_column(Boolean, default=True)
    # Bumped by every change to this benchmark's boards (see board_cache.py).
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Team(Base):
    """A team shares one quota; its owner (whoever created it) admits new members."""

    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL", use_alter=True, name="fk_teams_owner")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(40), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(20), default=Role.SUBMITTER.value)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"))
    # A request to join a team, waiting for its owner or an admin.
    requested_team_id: Mapped[int | None] = mapped_column(
        ForeignKey("teams.id", ondelete="SET NULL")
    )
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    # False while a new account waits for an admin (MEDVIDBENCH_SIGNUP_APPROVAL).
    approved: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    signup_address: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    team: Mapped[Team | None] = relationship(foreign_keys=[team_id])
    requested_team: Mapped[Team | None] = relationship(foreign_keys=[requested_team_id])


class WebSession(Base):
    """A logged-in browser: the cookie carries a random secret, stored here as its SHA-256.

    Logging out deletes the row, so a copied cookie stops working at once.
    """

    __tablename__ = "web_sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ApiToken(Base):
    """An API token, stored as the SHA-256 of a high-entropy secret shown once."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(12))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    user: Mapped[User] = relationship()


class Submission(Base):
    """One uploaded prediction file and its way through the lifecycle."""

    __tablename__ = "submissions"
    __table_args__ = (
        # an identical file is refused within an account and its team, under their row locks
        Index("ix_submission_file", "benchmark_id", "file_sha256"),
        Index(
            "uq_submission_public_name",
            "benchmark_id",
            "model_key",
            unique=True,
            sqlite_where=text(HOLDS_NAME),
            postgresql_where=text(HOLDS_NAME),
        ),
        Index("ix_submission_status", "status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"))
    model_name: Mapped[str] = mapped_column(String(120))
    model_key: Mapped[str] = mapped_column(String(120))  # case-folded, for uniqueness
    organisation: Mapped[str] = mapped_column(String(120), default="")
    model_url: Mapped[str | None] = mapped_column(String(500))
    contact: Mapped[str | None] = mapped_column(String(200))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)  # inference settings
    file_sha256: Mapped[str] = mapped_column(String(64))
    file_size: Mapped[int] = mapped_column(Integer, default=0)
    stored: Mapped[bool] = mapped_column(Boolean, default=False)
    # Hidden by an administrator: off every board, page and scores kept; reversible.
    hidden: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The submitter's choice: public (on the boards), private (scored, seen by them and staff
    # only: where it would rank), withdrawn (off every board for good; kept for the audit).
    visibility: Mapped[str] = mapped_column(String(12), default="public", server_default="public")
    record_count: Mapped[int] = mapped_column(Integer, default=0)
    verdict: Mapped[str] = mapped_column(String(20), default="")
    missing_tasks: Mapped[list[Any]] = mapped_column(default=list)
    status: Mapped[str] = mapped_column(String(20))  # a Status, always given
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # every claim, all steps
    step_attempts: Mapped[int] = mapped_column(
        Integer, default=0, server_default=text("0")
    )  # claims of the step now waiting or running; job_max_attempts applies to it
    lease_owner: Mapped[str | None] = mapped_column(String(80))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    scored_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    user: Mapped[User | None] = relationship()
    team: Mapped[Team | None] = relationship()


class Evaluation(Base):
    """One scoring of a submission under one profile, scorer version and judge configuration."""

    __tablename__ = "evaluations"
    __table_args__ = (UniqueConstraint("submission_id", "profile", "scorer_version", "judge_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    profile: Mapped[str] = mapped_column(String(40))
    scorer_version: Mapped[str] = mapped_column(String(20))
    judge_id: Mapped[str] = mapped_column(String(40), default="")  # "" = not judged
    metrics: Mapped[dict[str, Any]]
    per_dataset: Mapped[dict[str, Any]]
    per_task: Mapped[dict[str, Any]]
    judge: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The cluster bootstrap (medvidbench.core.statistics): intervals per metric, seed, replicate
    # count, cluster rule, and the replicates (base64 float32) that paired comparisons and rank
    # intervals need. None for evaluations stored before it existed, or with replicates set to 0.
    statistics: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # each metric per group of each of the benchmark's breakdowns (Report.per_group); None for
    # evaluations stored before breakdowns were kept
    per_group: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class EvaluationEvidence(Base):
    """An evaluation's per-item evidence (medvidbench.core.evidence), its values and statuses
    only (the items are the test set's). Kept for every evaluation of every benchmark, for
    consensus across benchmarks; for a hidden-label benchmark it never leaves the server."""

    __tablename__ = "evaluation_evidence"
    evaluation_id: Mapped[int] = mapped_column(
        ForeignKey("evaluations.id", ondelete="CASCADE"), primary_key=True
    )
    data: Mapped[bytes] = mapped_column(LargeBinary)


class EvaluationItem(Base):
    """One test item's result in an evaluation, kept for the item browser of a benchmark whose
    labels are public: stored once when scored, so that a view never re-reads the upload or
    re-parses an answer."""

    __tablename__ = "evaluation_items"
    __table_args__ = (Index("ix_evaluation_items_task", "evaluation_id", "task", "sample_index"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    evaluation_id: Mapped[int] = mapped_column(ForeignKey("evaluations.id", ondelete="CASCADE"))
    task: Mapped[str] = mapped_column(String(40))
    sample_index: Mapped[int] = mapped_column(Integer)  # the item's position in the test set
    answer: Mapped[str] = mapped_column(Text, default="")  # truncated for display
    parsed: Mapped[bool] = mapped_column(Boolean)
    value: Mapped[float | None] = mapped_column(nullable=True)  # the task's first metric
    values: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    note: Mapped[str] = mapped_column(String(200), default="")
    box: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)  # the scored box


class Board(Base):
    __tablename__ = "boards"
    __table_args__ = (UniqueConstraint("benchmark_id", "kind"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"))
    kind: Mapped[str] = mapped_column(String(20))  # official | community


class Entry(Base):
    """A row of a board: a scored submission, or numbers reported elsewhere."""

    __tablename__ = "entries"
    __table_args__ = (
        # a submission's entry follows its visibility (a private run's stays off the board), so
        # only reported results hold their name here; public submissions hold theirs above
        Index("ix_entry_name", "board_id", "model_key"),
        Index(
            "uq_entry_reported_name",
            "board_id",
            "model_key",
            unique=True,
            sqlite_where=text("submission_id IS NULL"),
            postgresql_where=text("submission_id IS NULL"),
        ),
        UniqueConstraint("board_id", "submission_id"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id", ondelete="CASCADE"))
    submission_id: Mapped[int | None] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE")
    )
    model_name: Mapped[str] = mapped_column(String(120))
    model_key: Mapped[str] = mapped_column(String(120))
    team_name: Mapped[str] = mapped_column(String(120), default="")
    model_url: Mapped[str | None] = mapped_column(String(500))
    reported_metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    reported: Mapped[bool] = mapped_column(Boolean, default=False)
    verified: Mapped[bool] = mapped_column(Boolean, default=False)
    baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str | None] = mapped_column(String(300))
    verified_date: Mapped[str | None] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    submission: Mapped[Submission | None] = relationship()


class JudgeCacheRow(Base):
    __tablename__ = "judge_cache"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SubmissionEvent(Base):
    """A step of a submission's life, with its time: what its page's log shows (received,
    validated with N warnings, scoring and judging started, scored, judged, errors). Messages
    describe the submitted file and the work done, never the ground truth."""

    __tablename__ = "submission_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    kind: Mapped[str] = mapped_column(String(30))
    message: Mapped[str] = mapped_column(String(1000), default="")


class AuditLog(Base):
    """Append-only: who did what to what, and when."""

    __tablename__ = "audit_log"
    # the private-run count finds a board's uploads and deletions by target (services/private_runs)
    __table_args__ = (Index("ix_audit_log_target_action", "target", "action"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor_name: Mapped[str] = mapped_column(String(40), default="")
    action: Mapped[str] = mapped_column(String(40))
    target: Mapped[str] = mapped_column(String(80), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)


class StoredFile(Base):
    """A stored file's gzip-compressed bytes, in parts (uploads, the files kept between a
    submission's steps, test sets), when files live in the database
    (:mod:`medvidbench.server.store.files`): ``kind`` is submission, matched, scored or
    test-set; ``name`` the zero-padded submission id or the test set's sha256."""

    __tablename__ = "stored_files"
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    part: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
