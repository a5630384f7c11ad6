"""Teams: one quota shared by its members, who join by the owner's (or an admin's) approval.

Typing an existing team's name never makes anyone a member: it files a request that the team's
owner (whoever created the team) or an admin approves or declines. Creating a team with a new
name makes its creator the owner. Every decision is written to the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from medvidbench.core.errors import (
    AccountGoneError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
)
from medvidbench.server.roles import Role
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.audit import audit
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import Team, User

MAX_TEAM_NAME = 120


def clean_team_name(name: str) -> str:
    """A team name with its spacing folded; 1 to 120 printable characters."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_TEAM_NAME or any(ord(c) < 32 for c in name):
        raise UsageError(f"a team name has 1 to {MAX_TEAM_NAME} printable characters")
    return name


def find_team(session: Session, name: str) -> Team | None:
    """The team of this name, ignoring case and spacing."""
    key = " ".join(name.split()).lower()
    return session.scalar(select(Team).where(func.lower(Team.name) == key))


def join_or_request(session: Session, user: User, name: str, *, trusted: bool = False) -> str:
    """Put ``user`` in the team called ``name``: a new team is created with them as its owner;
    an existing one gets a join request (joined at once only when ``trusted``, i.e. an
    operator or admin placed them there).

    Returns ``"created"``, ``"joined"`` or ``"requested"``.
    """
    name = clean_team_name(name)
    if user.team_id is not None:
        raise ConflictError("you are in a team already; leave it first")
    team = find_team(session, name)
    if team is None and not user.approved:
        # else anyone could sign up to own any team name before an admin looked at them
        raise PermissionDeniedError(
            f"your account waits for an administrator's approval, so it cannot found the team "
            f"{name!r} yet: leave the team empty (or ask to join an existing team) and create "
            "it once approved"
        )
    if team is None:
        team = Team(name=name, owner_id=user.id)
        session.add(team)
        session.flush()
        user.team_id, user.requested_team_id = team.id, None
        audit(session, user, "team.create", f"team:{team.id}", name=name)
        return "created"
    if trusted:
        user.team_id, user.requested_team_id = team.id, None
        if team.owner_id is None:
            team.owner_id = user.id
        audit(session, None, "team.join", f"team:{team.id}", user=user.username)
        return "joined"
    user.requested_team_id = team.id
    audit(session, user, "team.request", f"team:{team.id}", name=team.name)
    return "requested"


def _may_decide(actor: User, team: Team) -> bool:
    return actor.role == Role.ADMIN or team.owner_id == actor.id


def pending_requests(session: Session, actor: User) -> list[tuple[User, Team]]:
    """Join requests the actor may decide: for teams they own (an admin: every team)."""
    query = select(User, Team).join(Team, User.requested_team_id == Team.id)
    if actor.role != Role.ADMIN:
        query = query.where(Team.owner_id == actor.id)
    return [(row[0], row[1]) for row in session.execute(query.order_by(User.id)).all()]


def decide(session: Session, actor: User, user_id: int, approve: bool) -> User:
    """Approve or decline a user's request to join a team.

    Raises:
        NotFoundError: there is no such request (or the actor may not see it).
    """
    user = session.get(User, user_id)
    team = session.get(Team, user.requested_team_id) if user and user.requested_team_id else None
    if user is None or team is None or not _may_decide(actor, team):
        raise NotFoundError(f"no request to join a team from user {user_id}")
    if approve and user.team_id is not None:
        raise ConflictError(f"{user.username} is in another team now")
    user.requested_team_id = None
    if approve:
        user.team_id = team.id
    verdict = "team.approve" if approve else "team.decline"
    audit(session, actor, verdict, f"team:{team.id}", user=user.username)
    return user


def leave(session: Session, user: User) -> None:
    """Leave one's team (or withdraw a request); an owner hands the team to its oldest member."""
    if user.team_id is None:
        if user.requested_team_id is None:
            raise UsageError("you are not in a team")
        user.requested_team_id = None
        return
    team = session.get(Team, user.team_id)
    user.team_id = None
    if team is not None:
        if team.owner_id == user.id:
            team.owner_id = session.scalar(
                select(func.min(User.id)).where(User.team_id == team.id, User.id != user.id)
            )
        audit(session, user, "team.leave", f"team:{team.id}", name=team.name)


def check_organisation(session: Session, user: User, organisation: str) -> None:
    """A submission's free-text organisation may not pose as a team the user is not in.

    Raises:
        PermissionDeniedError: the organisation names an existing team of which the user is
            not a member.
    """
    if not organisation.strip():
        return
    team = find_team(session, organisation)
    if team is not None and team.id != user.team_id:
        raise PermissionDeniedError(
            f"{team.name!r} is a team on this server and you are not its member: ask to join "
            "it on your account page, or leave the organisation empty"
        )


@dataclass(slots=True)
class TeamStanding:
    """A user's place in teams, as their account page shows it."""

    team: Team | None
    owner: bool
    requested: Team | None
    requests: list[tuple[int, str, str]]  # (user id, username, team name) the user may decide
    members: list[tuple[int, str, bool]] = field(default_factory=list)  # (id, name, owns it)


def standing(session: Session, user: User) -> TeamStanding:
    """The user's team (and whether they own it), their open request, and the requests to
    join that they may decide."""
    me = session.get(User, user.id)
    if me is None:
        raise AccountGoneError()
    team = session.get(Team, me.team_id) if me.team_id else None
    return TeamStanding(
        team=team,
        owner=team is not None and team.owner_id == me.id,
        requested=session.get(Team, me.requested_team_id) if me.requested_team_id else None,
        requests=[(u.id, u.username, t.name) for u, t in pending_requests(session, me)],
        members=[]
        if team is None
        else [
            (u.id, u.username, u.id == team.owner_id)
            for u in session.scalars(select(User).where(User.team_id == team.id).order_by(User.id))
        ],
    )


def remove(session: Session, actor: User, user_id: int) -> User:
    """The team's owner (or an admin) takes a member out of it (the member may rejoin only
    by asking again); an owner leaves with ``leave`` instead.

    Raises:
        NotFoundError: no such member of a team the actor owns.
        UsageError: the owner tried to remove themselves.
    """
    user = session.get(User, user_id)
    team = session.get(Team, user.team_id) if user and user.team_id else None
    if user is None or team is None or not _may_decide(actor, team):
        raise NotFoundError(f"no member {user_id} of a team you own")
    if user.id == team.owner_id:
        raise UsageError("the owner leaves the team (Leave) instead of removing themselves")
    user.team_id = None
    audit(session, actor, "team.remove", f"team:{team.id}", user=user.username)
    return user


# --- Use cases for the web: each owns its transaction. ---------------------------------------


def _me(session: Session, user: User) -> User:
    row = session.get(User, user.id)
    if row is None:
        raise AccountGoneError()
    return row


def standing_of(runtime: Runtime, user: User) -> TeamStanding:
    with runtime.sessions() as session:
        return standing(session, user)


def ask_to_join(runtime: Runtime, user: User, name: str) -> str:
    """Create the team ``name`` (``user`` owns it) or ask to join it (its owner decides)."""
    with transaction(runtime.sessions) as session:
        return join_or_request(session, _me(session, user), name)


def quit_team(runtime: Runtime, user: User) -> None:
    """Leave the team, or withdraw an open request to join one."""
    with transaction(runtime.sessions) as session:
        leave(session, _me(session, user))


def remove_member(runtime: Runtime, actor: User, user_id: int) -> User:
    """The team's owner (or an admin) removes a member."""
    with transaction(runtime.sessions) as session:
        return remove(session, _me(session, actor), user_id)


def settle_request(runtime: Runtime, actor: User, user_id: int, approve: bool) -> User:
    """The team's owner (or an admin) approves or declines a request to join."""
    with transaction(runtime.sessions) as session:
        return decide(session, _me(session, actor), user_id, approve)
