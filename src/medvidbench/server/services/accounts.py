"""Accounts: users, roles, teams and API tokens. No default password exists anywhere.

Passwords are stored as argon2 hashes. API tokens are 256-bit random secrets shown once and
stored as their SHA-256 (a fast hash is right for high-entropy secrets; a slow one would only
slow every API call).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from medvidbench.core.errors import (
    AccountGoneError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    UsageError,
)
from medvidbench.server.roles import Role, role_named
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.audit import audit
from medvidbench.server.store.db import aware, transaction
from medvidbench.server.store.models import ApiToken, User, WebSession

_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{2,39}$")
MIN_PASSWORD = 12
TOKEN_PREFIX = "mvb_"
SESSION_DAYS = 14


def _hasher() -> Any:
    from argon2 import PasswordHasher

    return PasswordHasher()


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise UsageError(f"the password must have at least {MIN_PASSWORD} characters")


def check_username(username: str) -> None:
    if not _USERNAME.match(username):
        raise UsageError(
            "a username has 3 to 40 letters, digits, '.', '_' or '-', starting "
            "with a letter or digit"
        )


def hash_password(password: str) -> str:
    """The argon2 hash of an acceptable password (slow by design: call it outside any
    transaction, as SQLite's write lock would be held meanwhile)."""
    check_password(password)
    hashed: str = _hasher().hash(password)
    return hashed


def create_user(
    session: Session,
    username: str,
    password: str,
    role: str = Role.SUBMITTER,
    team: str | None = None,
    actor: User | None = None,
    *,
    trusted_team: bool = False,
    approved: bool = True,
    address: str | None = None,
    hashed: str | None = None,
) -> User:
    """Create a user; the username is 3-40 letters, digits, '.', '_' or '-'.

    Args:
        team: A team to create (the user owns it) or to ask to join (its owner decides).
        trusted_team: Join an existing ``team`` at once (an operator or admin says so).
        approved: False for a self sign-up that waits for an admin's approval.
        address: The network address a self sign-up came from (for the sign-up throttle).
        hashed: ``password``'s hash from :func:`hash_password`, made before the transaction.
    """
    check_username(username)
    role = role_named(role)
    hashed = hashed or hash_password(password)
    if session.scalar(select(User).where(func.lower(User.username) == username.lower())):
        raise ConflictError(f"the username {username!r} is taken")
    user = User(
        username=username,
        password_hash=hashed,
        role=role,
        approved=approved,
        signup_address=address[:64] if address else None,
    )
    session.add(user)
    session.flush()
    if actor is None and address:  # a web sign-up: the new user did it
        audit(session, user, "user.signup", f"user:{user.id}", username=username, role=role)
    else:
        audit(session, actor, "user.create", f"user:{user.id}", username=username, role=role)
    if team:
        from medvidbench.server.services.teams import join_or_request

        join_or_request(session, user, team, trusted=trusted_team)
    return user


def _active_user(session: Session, username: str) -> User | None:
    """The active user named ``username`` (any case), or None."""
    user = session.scalar(select(User).where(func.lower(User.username) == username.lower()))
    return user if user is not None and user.is_active else None


def _verified(user: User | None, password: str) -> User:
    """``user`` if ``password`` is theirs (argon2: slow by design, so no transaction is open).

    Raises:
        AuthenticationError: for no user or a wrong password (one message for both).
    """
    from argon2.exceptions import VerificationError

    try:
        # an unknown name costs the same work as a wrong password: timing tells nothing
        _hasher().verify(user.password_hash if user else _DUMMY_HASH, password)
    except VerificationError:
        raise AuthenticationError("wrong username or password") from None
    if user is None:
        raise AuthenticationError("wrong username or password")
    return user


# The hash of a discarded random string: verifying against it makes an unknown username cost
# the same time as a wrong password, so login timing does not reveal which usernames exist.
_DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$iVevmpaY5AiNNj5NNcJyag$"
    "/IFFwAx4TaIHFnE5L1ZbhXjEfc8GylWnW2/whV1zZ04"
)


def _add_token(
    session: Session, user: User, name: str = "cli", secret: str | None = None
) -> tuple[str, ApiToken]:
    """A new API token for ``user``: returns the secret (shown once) and its stored record.

    ``secret``: one made by the caller (the web page derives it, to show it after a redirect);
    by default a random one.
    """
    if secret is None or not secret.startswith(TOKEN_PREFIX) or len(secret) < 40:
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user_id=user.id,
        name=name[:80] or "token",
        token_hash=hashlib.sha256(secret.encode()).hexdigest(),
        prefix=secret[:12],
    )
    session.add(token)
    session.flush()
    audit(session, user, "token.create", f"token:{token.id}", name=token.name)
    return secret, token


def user_for_token(session: Session, secret: str) -> User:
    """The active user owning an unrevoked token; records the token's last use.

    Raises:
        AuthenticationError: for an unknown or revoked token.
    """
    digest = hashlib.sha256(secret.encode()).hexdigest()
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if token is None or token.revoked_at is not None or not token.user.is_active:
        raise AuthenticationError("invalid or revoked API token")
    token.last_used_at = datetime.now(UTC)
    return token.user


def require_role(user: User | None, *roles: Role) -> User:
    """The user, if they hold one of ``roles`` (admins hold every role)."""
    if user is None:
        raise AuthenticationError("log in first")
    if user.role != Role.ADMIN and user.role not in roles:
        raise PermissionDeniedError("you are not allowed to do this")
    return user


def _set_role(session: Session, actor: User, username: str, role: str) -> User:
    require_role(actor, Role.ADMIN)
    role = role_named(role)
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFoundError(f"no user {username!r}")
    old, user.role = user.role, role
    audit(session, actor, "user.role", f"user:{user.id}", old=old, new=role)
    return user


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _session_user(session: Session, secret: str) -> User | None:
    """The active user of an unexpired browser session, or None."""
    row = session.get(WebSession, _digest(secret)) if secret else None
    if row is None:
        return None
    expires = aware(row.expires_at)
    user = session.get(User, row.user_id)
    if expires <= datetime.now(UTC) or user is None or not user.is_active:
        return None
    return user


def check_signup_rate(session: Session, address: str, per_day: int) -> None:
    """Refuse another self sign-up from an address that made ``per_day`` in 24 hours.

    Raises:
        RateLimitedError: naming the limit.
    """
    if not per_day or not address:
        return
    since = datetime.now(UTC) - timedelta(days=1)
    made = session.scalar(
        select(func.count())
        .select_from(User)
        .where(User.signup_address == address[:64], User.created_at >= since)
    )
    if (made or 0) >= per_day:
        raise RateLimitedError(
            f"{per_day} accounts were created from your network address in the last 24 hours, "
            "the limit; try again tomorrow or ask an admin"
        )


def _approve(session: Session, actor: User, username: str) -> User:
    """Let a self-signed-up account submit (admins only)."""
    require_role(actor, Role.ADMIN)
    user = session.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None:
        raise NotFoundError(f"no user {username!r}")
    user.approved = True
    audit(session, actor, "user.approve", f"user:{user.id}", username=user.username)
    return user


def user_named(session: Session, username: str) -> User:
    """The user with this username (any case).

    Raises:
        NotFoundError: when there is none.
    """
    user = session.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None:
        raise NotFoundError(f"no user {username!r}")
    return user


# --- Use cases for the web and the command line: each owns its transaction. -----------------


def _me(session: Session, user: User) -> User:
    """``user``'s row in this session (re-read: it may have changed since it was loaded)."""
    row = session.get(User, user.id)
    if row is None:
        raise AccountGoneError()
    return row


def caller(
    runtime: Runtime, bearer: str | None = None, web_session: str | None = None
) -> User | None:
    """Who is calling: the user of an API token (an unknown, revoked or inactive one raises
    :class:`AuthenticationError`), else of a web session (None when it ended or expired)."""
    if bearer is not None:
        with transaction(runtime.sessions) as session:
            return user_for_token(session, bearer)
    if not web_session:
        return None
    with runtime.sessions() as session:
        user = _session_user(session, web_session)
        if user is not None:
            session.expunge(user)
        return user


def sign_in(runtime: Runtime, username: str, password: str) -> User:
    """The user whose password this is.

    Raises:
        AuthenticationError: for a wrong name or password, or an inactive account.
    """
    with runtime.sessions() as session:
        user = _active_user(session, username)
        if user is not None:
            session.expunge(user)
    # verified after the session has closed: SQLite holds its write lock while one is open
    return _verified(user, password)


def open_web_session(runtime: Runtime, user: User) -> str:
    """A new logged-in browser session for ``user``; returns the secret for its cookie.

    Only the secret's SHA-256 is stored, so a copy of the database logs nobody in.
    """
    secret = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    with transaction(runtime.sessions) as session:
        session.add(
            WebSession(
                id=_digest(secret),
                user_id=user.id,
                created_at=now,
                expires_at=now + timedelta(days=SESSION_DAYS),
            )
        )
    return secret


def close_web_session(runtime: Runtime, secret: str) -> None:
    """Log a browser session out on the server: its cookie stops working at once."""
    if not secret:
        return
    with transaction(runtime.sessions) as session:
        row = session.get(WebSession, _digest(secret))
        if row is not None:
            session.delete(row)


def sign_up(runtime: Runtime, username: str, password: str, team: str | None, address: str) -> User:
    """A web sign-up: rate-limited per address, approved at once unless the server asks an
    admin to approve new accounts."""
    settings = runtime.settings
    check_username(username)
    hashed = hash_password(password)  # before the transaction: SQLite would hold its lock
    with transaction(runtime.sessions) as session:
        check_signup_rate(session, address, settings.signup_per_address_per_day)
        return create_user(
            session,
            username,
            password,
            team=team,
            approved=not settings.signup_approval,
            address=address,
            hashed=hashed,
        )


def register(runtime: Runtime, username: str, password: str, role: str, team: str | None) -> User:
    """An account created by the operator (``medvidbench users create``): its team is joined
    at once, since the operator vouches for it."""
    with transaction(runtime.sessions) as session:
        return create_user(session, username, password, role=role, team=team, trusted_team=True)


def list_tokens(runtime: Runtime, user: User) -> list[ApiToken]:
    """A user's API tokens, oldest first (revoked ones included)."""
    with runtime.sessions() as session:
        return list(
            session.scalars(
                select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)
            )
        )


def create_token(
    runtime: Runtime, user: User | str, name: str = "cli", secret: str | None = None
) -> str:
    """A new API token for a user (or a username); its secret is returned once, never stored."""
    with transaction(runtime.sessions) as session:
        owner = user_named(session, user) if isinstance(user, str) else _me(session, user)
        secret, _ = _add_token(session, owner, name[:80] or "token", secret)
        return secret


# How long after its creation the account page may still show a new token's secret.
REVEAL_SECONDS = 600


def fresh_token(runtime: Runtime, user: User, secret: str) -> bool:
    """Whether ``secret`` is a token of ``user`` made in the last minutes and not revoked."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    since = datetime.now(UTC) - timedelta(seconds=REVEAL_SECONDS)
    with runtime.sessions() as session:
        found = session.scalar(
            select(ApiToken.created_at).where(
                ApiToken.token_hash == digest,
                ApiToken.user_id == user.id,
                ApiToken.revoked_at.is_(None),
            )
        )
    if found is None:
        return False
    return bool(aware(found) >= since)


def revoke_token(runtime: Runtime, user: User, token_id: int) -> None:
    """Revoke one of ``user``'s tokens (an admin: anyone's); it stops working at once.

    Raises:
        NotFoundError: for no such token, or another user's.
    """
    with transaction(runtime.sessions) as session:
        me = _me(session, user)
        token = session.get(ApiToken, token_id)
        if token is None or (token.user_id != me.id and me.role != Role.ADMIN):
            raise NotFoundError(f"no token {token_id}")
        token.revoked_at = datetime.now(UTC)
        audit(session, me, "token.revoke", f"token:{token_id}")


def set_role(runtime: Runtime, actor: User, username: str, role: str) -> User:
    """Give a user another role (admins only); audited with the old and the new role."""
    with transaction(runtime.sessions) as session:
        return _set_role(session, actor, username, role)


def approve_user(runtime: Runtime, actor: User, username: str) -> User:
    """Let a self-signed-up account submit (admins only)."""
    with transaction(runtime.sessions) as session:
        return _approve(session, actor, username)


def has_admin(runtime: Runtime) -> bool:
    """Whether any account holds the admin role."""
    with runtime.sessions() as session:
        count = session.scalar(
            select(func.count()).select_from(User).where(User.role == Role.ADMIN)
        )
        return bool(count)
