"""How many private runs came before a published row: its team's, and its submitter's own,
including those from before the submitter joined the team."""

from __future__ import annotations

from pathlib import Path

from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.db import transaction
from medvidbench.server.store.models import User
from tests.server.conftest import build_runtime, make_user, variants


def test_a_members_runs_from_before_joining_the_team_count(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    rt = build_runtime(tmp_path, None, synthetic["ground_truth"], quota_per_day=0)
    try:
        erin = make_user(rt, "erin", team=None)
        bob = make_user(rt, "bob", team="Team A")
        files = variants(synthetic["weak"], 6)
        for i in range(3):  # on her own
            submit(rt, erin, files[i], f"Erin try {i}", visibility="private")
        submit(rt, bob, files[3], "Bob try", visibility="private")  # the team's
        submit(rt, make_user(rt, "carl", team=None), files[4], "Carl try", visibility="private")
        with transaction(rt.sessions) as session:  # erin joins bob's team
            joined = session.get(User, erin.id)
            assert joined is not None
            joined.team_id = bob.team_id
        submit(rt, erin, files[5], "Erin public")
        row = next(r for r in board_rows(rt, "community") if r.model_name == "Erin public")
        assert row.private_runs == 4  # her three and the team's one; not carl's
    finally:
        rt.engine.dispose()
