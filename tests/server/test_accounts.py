"""Accounts, roles and API tokens (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import func, select

from medvidbench.core.errors import (
    AuthenticationError,
    ConflictError,
    PermissionDeniedError,
    UsageError,
)
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.accounts import (
    create_token,
    create_user,
    has_admin,
    list_tokens,
    require_role,
    revoke_token,
    set_role,
    sign_in,
    user_for_token,
)
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import ApiToken, AuditLog, User
from tests.server.conftest import make_user


def test_a_fresh_server_has_no_users_and_no_default_password(runtime: Runtime) -> None:
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(User)) == 0
    assert not has_admin(runtime)


def test_passwords_are_argon2_and_checked(runtime: Runtime, alice: User) -> None:
    with runtime.sessions() as session:
        row = session.get(User, alice.id)
        assert row is not None and row.password_hash.startswith("$argon2id$")
    assert sign_in(runtime, "ALICE", "alice-password-123").id == alice.id
    for name, password in (("alice", "wrong-password-x"), ("nobody", "whatever-12345")):
        with pytest.raises(AuthenticationError, match="wrong username or password"):
            sign_in(runtime, name, password)


@pytest.mark.parametrize(
    ("name", "password", "message"),
    [
        ("a", "long-enough-password", "3 to 40"),
        ("<script>", "long-enough-password", "3 to 40"),
        ("../etc", "long-enough-password", "3 to 40"),
        ("ok-name", "short", "12 characters"),
    ],
)
def test_bad_usernames_and_passwords(
    runtime: Runtime, name: str, password: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message), transaction(runtime.sessions) as session:
        create_user(session, name, password)


def test_usernames_are_unique_regardless_of_case(runtime: Runtime, alice: User) -> None:
    with pytest.raises(ConflictError), transaction(runtime.sessions) as session:
        create_user(session, "Alice", "another-password-1")


def test_tokens_are_shown_once_stored_hashed_and_revocable(runtime: Runtime, alice: User) -> None:
    secret = create_token(runtime, alice, "laptop")
    assert secret.startswith("mvb_") and len(secret) > 40
    (token,) = list_tokens(runtime, alice)
    with runtime.sessions() as session:
        stored = session.get(ApiToken, token.id)
        assert (
            stored is not None and stored.token_hash == hashlib.sha256(secret.encode()).hexdigest()
        )
        assert secret not in (stored.token_hash, stored.prefix)
    with transaction(runtime.sessions) as session:
        assert user_for_token(session, secret).id == alice.id
    with runtime.sessions() as session:
        assert session.get(ApiToken, token.id).last_used_at is not None
    assert [t.name for t in list_tokens(runtime, alice)] == ["laptop"]
    revoke_token(runtime, alice, token.id)
    with pytest.raises(AuthenticationError), transaction(runtime.sessions) as session:
        user_for_token(session, secret)
    with pytest.raises(AuthenticationError), transaction(runtime.sessions) as session:
        user_for_token(session, "mvb_made-up")


def test_roles_and_audit(runtime: Runtime, alice: User, admin: User) -> None:
    with pytest.raises(PermissionDeniedError):
        require_role(alice, "admin")
    with pytest.raises(AuthenticationError):
        require_role(None, "submitter")
    with pytest.raises(PermissionDeniedError):
        set_role(runtime, alice, "alice", "admin")
    set_role(runtime, admin, "alice", "maintainer")
    with runtime.sessions() as session:
        assert session.get(User, alice.id).role == "maintainer"
        log = session.scalars(select(AuditLog).where(AuditLog.action == "user.role")).one()
        assert log.actor_name == admin.username and log.detail == {
            "old": "submitter",
            "new": "maintainer",
        }


def test_teams_are_shared_case_insensitively(runtime: Runtime) -> None:
    a = make_user(runtime, "u-one", team="Vision Lab")
    b = make_user(runtime, "u-two", team="vision  lab")
    assert a.team_id == b.team_id


def test_a_vanished_account_is_a_401_in_every_service(
    runtime: Runtime, synthetic: dict[str, Path]
) -> None:
    """Signed in, then deleted: accounts, teams and submissions all answer 401, one message."""
    from medvidbench.core.errors import AccountGoneError
    from medvidbench.server.services import teams
    from medvidbench.server.services.submissions import submit

    alice = make_user(runtime, "ghost", team=None)
    with transaction(runtime.sessions) as session:
        session.query(ApiToken).filter(ApiToken.user_id == alice.id).delete()
        session.delete(session.get(User, alice.id))
    asks = (
        lambda: create_token(runtime, alice, "late"),
        lambda: revoke_token(runtime, alice, 1),
        lambda: teams.standing_of(runtime, alice),
        lambda: teams.quit_team(runtime, alice),
        lambda: submit(runtime, alice, synthetic["weak"].read_bytes(), "Ghost"),
    )
    for ask in asks:
        with pytest.raises(AccountGoneError, match="your account no longer exists") as raised:
            ask()
        assert raised.value.http_status == 401
