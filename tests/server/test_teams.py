"""Teams: joined by approval, never by typing a name; one quota that holds under concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from medvidbench.core.errors import (
    ConflictError,
    MedVidBenchError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
)
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import create_user
from medvidbench.server.services.submissions import submit
from medvidbench.server.services.teams import decide, join_or_request, leave, pending_requests
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import AuditLog, Submission, Team, User
from tests.server.conftest import HeldQueue, make_user, variants


def sign_up(runtime: Runtime, name: str, team: str | None = None) -> User:
    """A self sign-up, as the sign-up page makes one."""
    with transaction(runtime.sessions) as session:
        return create_user(session, name, f"{name}-password-123", team=team)


def reload(runtime: Runtime, user: User) -> User:
    with runtime.sessions() as session:
        row = session.get(User, user.id)
        assert row is not None
        session.expunge(row)
        return row


def test_typing_a_teams_name_asks_its_owner(runtime: Runtime) -> None:
    owner = sign_up(runtime, "owner", "Vision Lab")
    asker = sign_up(runtime, "asker", "vision  LAB")
    assert owner.team_id is not None and asker.team_id is None
    assert asker.requested_team_id == owner.team_id
    stranger = sign_up(runtime, "stranger")
    with transaction(runtime.sessions) as session:
        assert pending_requests(session, session.get(User, stranger.id)) == []
        with pytest.raises(NotFoundError):
            decide(session, session.get(User, stranger.id), asker.id, approve=True)
    with transaction(runtime.sessions) as session:
        (request,) = pending_requests(session, session.get(User, owner.id))
        assert request[0].id == asker.id and request[1].name == "Vision Lab"
        decide(session, session.get(User, owner.id), asker.id, approve=True)
    assert reload(runtime, asker).team_id == owner.team_id
    assert reload(runtime, asker).requested_team_id is None
    with runtime.sessions() as session:
        actions = list(
            session.scalars(
                select(AuditLog.action)
                .where(AuditLog.action.like("team.%"))
                .order_by(AuditLog.id)  # in the order they were written
            )
        )
    assert actions == ["team.create", "team.request", "team.approve"]


def test_declined_and_admin_decisions_and_leaving(runtime: Runtime, admin: User) -> None:
    owner = sign_up(runtime, "owner2", "Lab Two")
    a, b = sign_up(runtime, "member-a", "Lab Two"), sign_up(runtime, "member-b", "Lab Two")
    with transaction(runtime.sessions) as session:
        decide(session, session.get(User, owner.id), a.id, approve=False)
        decide(session, session.get(User, admin.id), b.id, approve=True)  # an admin may decide
    assert reload(runtime, a).team_id is None and reload(runtime, b).team_id == owner.team_id
    with transaction(runtime.sessions) as session:
        leave(session, session.get(User, owner.id))
    with runtime.sessions() as session:
        team = session.get(Team, owner.team_id)
        assert team is not None and team.owner_id == b.id  # handed to the oldest member
    with transaction(runtime.sessions) as session, pytest.raises(ConflictError):
        join_or_request(session, session.get(User, b.id), "Another")


def test_an_organisation_cannot_pose_as_someone_elses_team(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """The attack: new accounts naming a full team as organisation spent its quota."""
    runtime.settings.quota_per_day = 5
    owner = make_user(runtime, "lead", team="Full Team")
    files = variants(synthetic["weak"], 9)
    for i in range(5):
        submit(runtime, owner, files[i], f"team-model-{i}")
    with pytest.raises(QuotaExceededError):
        submit(runtime, owner, files[5], "one too many")
    for i in range(3):
        newcomer = sign_up(runtime, f"newcomer{i}")
        with pytest.raises(PermissionDeniedError, match="'Full Team' is a team on this server"):
            submit(runtime, newcomer, files[6 + i], f"posing-{i}", organisation="full team")
    with runtime.sessions() as session:
        charged = session.scalar(
            select(func.count()).select_from(Submission).where(Submission.team_id == owner.team_id)
        )
    assert charged == 5


def test_founding_a_new_team_gives_no_fresh_quota(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    runtime.settings.quota_per_day = 2
    user = make_user(runtime, "hopper", team=None)
    files = variants(synthetic["weak"], 3)
    submit(runtime, user, files[0], "m0")
    submit(runtime, user, files[1], "m1")
    with transaction(runtime.sessions) as session:
        assert join_or_request(session, session.get(User, user.id), "Fresh Team") == "created"
    with pytest.raises(QuotaExceededError, match="your team has used 2 submissions per day"):
        submit(runtime, reload(runtime, user), files[2], "m2")


def test_ten_members_at_once_get_exactly_the_quota(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """On PostgreSQL the team row is locked, so concurrent members cannot overspend."""
    runtime.settings.quota_per_day = 5
    runtime.queue = HeldQueue()  # scoring is not what is tested; keep the race tight
    members = [make_user(runtime, f"racer{i}", team="Race Team") for i in range(10)]
    files = variants(synthetic["weak"], 10)

    def attempt(i: int) -> str:
        try:
            submit(runtime, members[i], files[i], f"race-{i}")
        except QuotaExceededError:
            return "refused"
        except MedVidBenchError as exc:  # anything else would be a defect
            return f"error: {exc.message}"
        return "accepted"

    with ThreadPoolExecutor(max_workers=10) as pool:
        outcomes = list(pool.map(attempt, range(10)))
    assert sorted(outcomes) == ["accepted"] * 5 + ["refused"] * 5
