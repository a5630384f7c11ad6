"""Five smaller holes found in the third round of attacks, each tried through the app.

A pending account took a team name (and owned it); compare answered 500 on long entry ids; the
board's ``Link`` header reflected ``Host: evil.example``; a refused re-score still wrote an audit
line; the attribution file was read through a symlink that leaves the image folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import AuditLog, Team
from tests.server.conftest import build_runtime, postgres_url  # noqa: F401 (a fixture)
from tests.web.conftest import csrf, login


def test_an_account_waiting_for_approval_cannot_take_a_team_name(
    client: TestClient, web_runtime: Runtime
) -> None:
    web_runtime.settings.signup_approval = True
    form = {
        "username": "squatter",
        "password": "squatter-password-1",
        "team": "Famous Lab",
        "csrf": csrf(client, "/signup"),
    }
    refused = client.post("/signup", data=form)
    assert refused.status_code == 403
    assert "waits for an administrator" in refused.text and "cannot found the team" in refused.text
    assert 'value="Famous Lab"' in refused.text  # what was typed survives
    with web_runtime.sessions() as session:
        assert session.scalar(select(Team).where(Team.name == "Famous Lab")) is None
    # without a team the account is made; on its account page it still cannot found one
    assert client.post("/signup", data={**form, "team": ""}).status_code == 303
    page = client.post(
        "/account/team", data={"name": "Famous Lab", "csrf": csrf(client, "/account")}
    )
    assert page.status_code == 403 and "approval" in page.text
    with web_runtime.sessions() as session:
        assert session.scalar(select(Team).where(Team.name == "Famous Lab")) is None


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_long_ids_are_refused_not_a_500(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    from medvidbench.server.services.catalogue import seed_published
    from medvidbench.server.web.app import create_app

    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    runtime = build_runtime(tmp_path, url, synthetic["ground_truth"])
    seed_published(runtime)
    client = TestClient(create_app(runtime), raise_server_exceptions=False)
    first = client.get("/api/v1/boards/official").json()[0]["entry_id"]
    for long_id in ("99999999999999", "9" * 4400, "9" * 20, "2147483648"):
        api = client.get(f"/api/v1/compare?entries={first},{long_id}")
        assert api.status_code == 400, api.text[:300]
        assert "entry ids are whole numbers from 1 to 2147483647" in api.json()["message"]
        page = client.get(f"/b/medvidbench/compare?entries={first},{long_id}")
        assert page.status_code == 400 and f"No entry {long_id[:20]}" in page.text
        for path in (f"/submissions/{long_id}", f"/api/v1/submissions/{long_id}"):
            assert client.get(path).status_code == 422, path  # before: 500 on PostgreSQL
    assert client.get("/api/v1/compare?entries=2147483647,1").status_code == 404
    runtime.engine.dispose()


def test_the_boards_link_header_never_names_the_requests_host(client: TestClient) -> None:
    answer = client.get(
        "/api/v1/boards/official?per_page=5&page=2", headers={"Host": "evil.example"}
    )
    assert answer.status_code == 200
    link = answer.headers["Link"]
    assert "evil.example" not in link
    assert '</api/v1/boards/official?page=3&per_page=5>; rel="next"' in link


def test_a_refused_rescore_writes_no_audit_line(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime, "keeper", "admin")
    answer = client.post(
        "/admin/rescore",
        data={"submission_id": "987654", "confirm": "yes", "csrf": csrf(client, "/admin")},
    )
    assert answer.status_code == 404
    with web_runtime.sessions() as session:
        lines = session.scalars(select(AuditLog.action).where(AuditLog.target.like("submission:%")))
        assert list(lines) == []


def test_the_attribution_file_never_leads_out_of_the_image_folder(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    secret = tmp_path / "outside.txt"
    secret.write_text("operator's private notes")
    (folder / "ATTRIBUTION.txt").symlink_to(secret)
    web_runtime.settings.image_dirs = {"medvidbench": folder}
    assert client.get("/b/medvidbench/attribution").status_code == 404
    (folder / "ATTRIBUTION.txt").unlink()
    (folder / "ATTRIBUTION.md").write_text("Images: CC BY 4.0, from the MedSG-Bench authors.")
    shown = client.get("/b/medvidbench/attribution")
    assert shown.status_code == 200 and "CC BY 4.0" in shown.text
