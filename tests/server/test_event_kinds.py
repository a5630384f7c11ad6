"""A submission's event kinds: stored values that never change, each written somewhere, and
every kind a reader replays one that a writer writes."""

from __future__ import annotations

import ast
from pathlib import Path

from medvidbench.server.services import evaluations, events, private_runs
from medvidbench.server.services.events import Kind

SERVER = Path(events.__file__).parent.parent

# The values rows already hold: a new kind may be added, a value is never changed or removed
# (older logs would stop being read as what they are).
STORED = {
    "RECEIVED": "received",
    "VALIDATED": "validated",
    "REJECTED": "rejected",
    "WARNING": "warning",
    "WAITING": "waiting",
    "SCORE_STARTED": "score started",
    "JUDGE_STARTED": "judge started",
    "SCORED": "scored",
    "JUDGED": "judged",
    "ERROR": "error",
    "FAILED": "failed",
    "JUDGE_FAILED": "judge failed",
    "HIDDEN": "hidden",
    "SHOWN": "shown",
    "PUBLISHED": "published",
    "UNPUBLISHED": "unpublished",
    "WITHDRAWN": "withdrawn",
    "REJUDGE": "rejudge",
    "RESCORE_REQUESTED": "rescore-requested",
    "RESCORE_STARTED": "rescore-started",
    "RESCORED": "rescored",
    "RESCORE_FAILED": "rescore-failed",
}


def _kinds_named(path: Path) -> set[str]:
    """The ``Kind.X`` names a module's code uses."""
    tree = ast.parse(path.read_text())
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Kind"
    }


def _record_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "record"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "events"
    ]


def _may_be_a_string(value: ast.expr) -> bool:
    """Whether an expression's value may be a string written out (``"x"``, ``f"{y} x"``, or
    either side of ``a if c else b``)."""
    if isinstance(value, ast.IfExp):
        return _may_be_a_string(value.body) or _may_be_a_string(value.orelse)
    return isinstance(value, ast.JoinedStr) or (
        isinstance(value, ast.Constant) and isinstance(value.value, str)
    )


def test_the_stored_values_never_change() -> None:
    assert {k.name: k.value for k in Kind} == STORED


def test_every_kind_is_written_by_some_service_and_only_through_the_class() -> None:
    modules = sorted(SERVER.rglob("*.py"))
    written: set[str] = set()
    for path in modules:
        if path.name == "events.py":
            continue
        written |= _kinds_named(path)
        for call in _record_calls(path):
            kind = call.args[2] if len(call.args) > 2 else None
            assert kind is None or not _may_be_a_string(kind), (
                f"{path.name}:{call.lineno}: an event kind written as a string: use Kind"
            )
    written |= {"WARNING"}  # record_warnings, in events.py itself
    assert {k.name for k in Kind} <= written, {k.name for k in Kind} - written


def test_the_kinds_readers_replay_are_kinds_writers_write() -> None:
    replayed = {*private_runs.VISIBILITY_EVENTS, *private_runs.OFF_EVENTS} - {private_runs.DELETED}
    assert replayed <= set(Kind), replayed - set(Kind)
    assert {
        Kind.PUBLISHED,
        Kind.UNPUBLISHED,
        Kind.WITHDRAWN,
        Kind.HIDDEN,
        Kind.SHOWN,
        Kind.FAILED,
        Kind.REJUDGE,
    } <= replayed
    assert set(evaluations.RESCORE_EVENTS) <= set(Kind)
    assert set(events.PRIVATE_KINDS) == {Kind.ERROR, Kind.FAILED, Kind.WARNING}
