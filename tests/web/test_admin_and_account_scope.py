"""A researcher's and an admin's day across benchmarks (#32 items 13-15): the admin page is one
benchmark's, error pages know who is signed in, a team owner sees and removes members, the
account lists each submission's benchmark and visibility, pages show only what they have."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench import benchmarks
from medvidbench.core.config import Settings
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import seed_test_sets
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.db import upgrade
from medvidbench.server.store.models import User
from medvidbench.server.web.app import create_app
from tests.server.conftest import make_user
from tests.web.conftest import csrf, login


def _settings(data: Path) -> Settings:
    return Settings(data_dir=data, quota_per_day=0, quota_per_month=0)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """Every installed benchmark on one server (demo sets), one submission on two of them:
    built and scored once for the module; each test gets a copy of the data folder."""
    data = tmp_path_factory.mktemp("scope") / "data"
    rt = Runtime(_settings(data))
    upgrade(rt.engine)
    attach_queue(rt, immediate=True)
    seed_test_sets(rt)
    owner = make_user(rt, "owner", team="Grounders")
    demo = rt.data_dir / "demo"
    ids = {
        "medvidbench": submit(
            rt, owner, (demo / "medvidbench" / "predictions_strong.json").read_bytes(), "Video-1"
        ).id,
        "medsg": submit(
            rt,
            owner,
            (demo / "medsg" / "results_strong.json").read_bytes(),
            "Grounder-1",
            benchmark="medsg",
        ).id,
    }
    rt.engine.dispose()  # the database file is whole (no open connection) before it is copied
    return data, ids


@pytest.fixture
def site(
    seeded: tuple[Path, dict[str, int]], tmp_path: Path
) -> Iterator[tuple[TestClient, Runtime, dict[str, int]]]:
    """A fresh copy of the seeded server, for a test that changes it."""
    template, ids = seeded
    data = tmp_path / "data"
    shutil.copytree(template, data)
    rt = Runtime(_settings(data))
    attach_queue(rt, immediate=True)
    with TestClient(create_app(rt), follow_redirects=False) as client:
        yield client, rt, dict(ids)
    rt.engine.dispose()


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr data-submission="(\d+)"', page)


def test_the_admin_page_is_one_benchmarks(site: tuple[TestClient, Runtime, dict[str, int]]) -> None:
    client, rt, ids = site
    login(client, rt, "boss", "admin")
    grounding = client.get("/admin?benchmark=medsg").text
    assert _rows(grounding) == [str(ids["medsg"])]
    assert "Submissions to MedSG-Bench" in grounding
    offered = set(re.findall(r"<option ?(?:selected)?>([a-z0-9-]+)</option>", grounding))
    assert {p.name for p in benchmarks.get("medsg").profiles} <= offered
    assert not {p.name for p in benchmarks.get("medvidbench").profiles} & offered
    video = client.get("/admin?benchmark=medvidbench").text
    assert _rows(video) == [str(ids["medvidbench"])]
    # a re-score from the MedSG page works, and a promote says which board
    token = csrf(client, "/admin?benchmark=medsg")
    done = client.post(
        "/admin/rescore",
        data={
            "csrf": token,
            "confirm": "yes",
            "submission_id": ids["medsg"],
            "benchmark": "medsg",
            "kind": "rescore",
            "profile": "corrected",
        },
    )
    assert done.status_code == 303, done.text
    promoted = client.post(
        "/admin/promote",
        data={"csrf": token, "confirm": "yes", "submission_id": ids["medsg"], "benchmark": "medsg"},
    )
    assert promoted.status_code == 303
    notice = client.get(promoted.headers["location"]).text
    assert "is on the official medsg board" in notice


def test_an_error_page_knows_who_is_signed_in(
    site: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, rt, _ = site
    anonymous = client.get("/submissions/999999")
    assert anonymous.status_code == 404 and ">Log in</a>" in anonymous.text
    login(client, rt, "reader")
    for path in ("/submissions/999999", "/b/no-such-benchmark/board/community"):
        answer = client.get(path)
        assert answer.status_code in (400, 404), path
        assert ">Log in</a>" not in answer.text and "Log out" in answer.text, path


def test_a_team_owner_sees_and_removes_members(
    site: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, rt, _ = site
    make_user(rt, "member", team="Grounders")
    client.post(
        "/login",
        data={
            "username": "owner",
            "password": "owner-password-123",
            "csrf": csrf(client),
            "next": "/",
        },
    )
    page = client.get("/account").text
    members = re.findall(r"<tr><td>(\w+)(?: \(you\))?</td><td>(owner|member)</td>", page)
    assert ("owner", "owner") in members and ("member", "member") in members
    with rt.sessions() as session:
        member_id = session.scalar(select(User.id).where(User.username == "member"))
    removed = client.post(
        f"/account/team/members/{member_id}/remove", data={"csrf": csrf(client, "/account")}
    )
    assert removed.status_code == 303
    with rt.sessions() as session:
        assert session.scalar(select(User.team_id).where(User.username == "member")) is None
    # a member sees the list but cannot remove anyone
    make_user(rt, "second", team="Grounders")
    client.post("/logout", data={"csrf": csrf(client, "/")})
    client.post(
        "/login",
        data={
            "username": "second",
            "password": "second-password-123",
            "csrf": csrf(client),
            "next": "/",
        },
    )
    assert "/remove" not in client.get("/account").text
    with rt.sessions() as session:
        owner_id = session.scalar(select(User.id).where(User.username == "owner"))
    refused = client.post(
        f"/account/team/members/{owner_id}/remove", data={"csrf": csrf(client, "/account")}
    )
    assert refused.status_code == 404


def test_the_account_lists_benchmark_and_visibility(
    site: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, _, ids = site
    client.post(
        "/login",
        data={
            "username": "owner",
            "password": "owner-password-123",
            "csrf": csrf(client),
            "next": "/",
        },
    )
    page = client.get("/account").text
    table = page.split('id="my-submissions"')[1].split("</table>")[0]
    for slug, sid in ids.items():
        row = table.split(f'href="/submissions/{sid}"')[1].split("</tr>")[0]
        assert f"<td>{slug}</td>" in row and "<td>public</td>" in row


def test_pages_show_only_what_they_have(site: tuple[TestClient, Runtime, dict[str, int]]) -> None:
    client, _, ids = site
    grounding = client.get(f"/submissions/{ids['medsg']}").text
    assert 'id="per-dataset"' not in grounding  # one dataset: no table of empty cells
    video = client.get(f"/submissions/{ids['medvidbench']}").text
    table = video.split('id="per-dataset"')[1].split("</table>")[0]
    assert '<td class="num"></td>' not in table or table.count('<th scope="col"') > 1
    submit_page = client.get("/b/medvidbench/submit").text
    assert "--questions questions.json" in submit_page and "--ground-truth" not in submit_page


def test_hosted_benchmarks_are_listed_default_first_demo_last(
    site: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    _, rt, _ = site
    assert rt.hosted[0] == benchmarks.default_slug()
    published = [s for s in rt.hosted if benchmarks.get(s).presentation.links]
    assert rt.hosted[: len(published)] == published  # demo sets after every published one
