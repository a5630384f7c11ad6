"""The bootstrap of a hidden test set is drawn with a seed only the server can know.

With the seed known, anyone can draw the same resamples offline, and the intervals of two
submissions that differ on a few items then tell which of those items each got right: an
attacker who changed 8 next-action answers narrowed 36 possibilities (what the score difference
allows) to the one true pattern. So for a benchmark whose labels are not public the server
derives the seed from the test set's contents and never shows it; a bootstrap stored with a
known seed (by an earlier release) is not used or shown until a re-score draws it again; a
benchmark with public labels keeps the configured seed, which anyone may use to draw its
intervals again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench import library
from medvidbench.core.config import Settings
from medvidbench.server.jobs import attach_queue
from medvidbench.server.runtime import Runtime
from medvidbench.server.services.catalogue import seed_test_sets
from medvidbench.server.services.evaluations import rescore
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.db import upgrade
from medvidbench.server.store.models import Entry, Evaluation
from medvidbench.server.web.app import create_app
from tests.server.conftest import gt_of, make_user


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[TestClient, Runtime, dict[str, int]]]:
    """Two MedVidBench submissions (hidden labels) and one MedSG-Bench one (public labels),
    scored with the default bootstrap."""
    settings = Settings(data_dir=tmp_path / "data", quota_per_day=0, quota_per_month=0)  # type: ignore[call-arg]
    rt = Runtime(settings)
    upgrade(rt.engine)
    attach_queue(rt, immediate=True)
    seed_test_sets(rt)
    owner = make_user(rt, "owner", team="Seeds")
    demo = rt.data_dir / "demo"
    ids = {
        name: submit(
            rt, owner, (demo / "medvidbench" / f"predictions_{name}.json").read_bytes(), name
        ).id
        for name in ("strong", "weak")
    }
    ids["medsg"] = submit(
        rt, owner, (demo / "medsg" / "results_strong.json").read_bytes(), "G", benchmark="medsg"
    ).id
    try:
        with TestClient(create_app(rt), follow_redirects=False) as client:
            yield client, rt, ids
    finally:
        rt.engine.dispose()


def _evaluation(rt: Runtime, submission_id: int) -> Evaluation:
    with rt.sessions() as session:
        found = session.scalar(select(Evaluation).where(Evaluation.submission_id == submission_id))
        assert found is not None
        return found


def _entries(rt: Runtime, *ids: int) -> str:
    with rt.sessions() as session:
        found = session.scalars(select(Entry.id).where(Entry.submission_id.in_(ids))).all()
    return ",".join(str(e) for e in sorted(found))


def _offline(rt: Runtime, name: str, seed: int, slug: str = "medvidbench") -> dict[str, Any]:
    """What anyone holding the labels draws offline with ``seed``."""
    demo = rt.data_dir / "demo" / slug
    preds = demo / ("results_strong.json" if slug == "medsg" else f"predictions_{name}.json")
    report = library.evaluate(
        preds, demo / "ground_truth.json", benchmark=slug, bootstrap=1000, seed=seed
    )
    assert report.statistics is not None
    return dict(report.statistics["intervals"])


def test_a_hidden_test_sets_seed_is_its_own_secret_and_is_never_shown(
    server: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, rt, ids = server
    stored = _evaluation(rt, ids["strong"]).statistics
    assert stored is not None and stored["seed_secret"] is True
    secret = stored["seed"]
    definition = rt.definition("medvidbench")
    assert secret == rt.bootstrap_seed(definition, gt_of(rt, ids["strong"]))
    assert secret != rt.settings.bootstrap_seed and secret > 2**32  # nothing to guess

    shown = client.get(f"/api/v1/submissions/{ids['strong']}").json()["statistics"]
    assert shown["seed"] is None and shown["seed_secret"] is True and "values" not in shown
    # the intervals are those of the secret seed, not of the configured (known) one, which
    # an attacker would draw offline
    assert {k: list(v) for k, v in _offline(rt, "strong", secret).items() if v} == {
        k: v for k, v in shown["intervals"].items() if v
    }
    assert _offline(rt, "strong", rt.settings.bootstrap_seed) != shown["intervals"]

    entries = _entries(rt, ids["strong"], ids["weak"])
    everything = [
        f"/api/v1/submissions/{ids['strong']}",
        f"/submissions/{ids['strong']}",
        f"/submissions/{ids['strong']}/report.json",
        "/api/v1/benchmarks/medvidbench/boards/community",
        "/api/v1/benchmarks/medvidbench/boards/community?format=csv",
        "/api/v1/benchmarks/medvidbench/boards/community?format=json",
        "/b/medvidbench/board/community",
        f"/api/v1/benchmarks/medvidbench/compare?entries={entries}",
        f"/b/medvidbench/compare?entries={entries}",
        "/api/v1/consensus",
        "/consensus",
        "/consensus.csv",
    ]
    for path in everything:
        response = client.get(path)
        assert response.status_code == 200, path
        assert str(secret) not in response.text, path
    page = client.get(f"/submissions/{ids['strong']}").text
    assert "a seed this server keeps secret" in page and "seed 0" not in page


def test_public_labels_keep_the_configured_seed(
    server: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, rt, ids = server
    shown = client.get(f"/api/v1/submissions/{ids['medsg']}").json()["statistics"]
    assert shown["seed"] == rt.settings.bootstrap_seed and not shown.get("seed_secret")
    offline = _offline(rt, "strong", rt.settings.bootstrap_seed, slug="medsg")
    assert {k: list(v) for k, v in offline.items() if v} == {
        k: v for k, v in shown["intervals"].items() if v
    }
    assert "seed 0;" in client.get(f"/submissions/{ids['medsg']}").text


def test_a_bootstrap_drawn_with_a_known_seed_is_withheld_until_a_rescore(
    server: tuple[TestClient, Runtime, dict[str, int]],
) -> None:
    client, rt, ids = server
    known = _offline(rt, "strong", 0)
    # as an earlier release stored it: the configured seed, no mark of a secret one
    with rt.sessions() as session:
        ev = session.scalar(select(Evaluation).where(Evaluation.submission_id == ids["strong"]))
        assert ev is not None
        old = dict(ev.statistics or {})
        old.pop("seed_secret")
        old["seed"] = 0
        ev.statistics = old
        session.commit()

    assert client.get(f"/api/v1/submissions/{ids['strong']}").json()["statistics"] is None
    page = client.get(f"/submissions/{ids['strong']}").text
    assert not any(json.dumps(v) in page for v in known.values() if v)
    rows = {
        r["model_name"]: r
        for r in client.get("/api/v1/benchmarks/medvidbench/boards/community").json()
    }
    assert rows["strong"]["rank_interval"] is None
    assert "a seed anyone knows" in rows["strong"]["interval_note"]
    assert rows["weak"]["rank_interval"] is not None  # drawn with the secret seed: shown
    entries = _entries(rt, ids["strong"], ids["weak"])
    (pair,) = client.get(f"/api/v1/benchmarks/medvidbench/compare?entries={entries}").json()[
        "differences"
    ]
    assert all(m["interval"] is None for m in pair["metrics"].values())

    assert rescore(rt, ids["strong"], _evaluation(rt, ids["strong"]).profile)
    drawn = _evaluation(rt, ids["strong"]).statistics
    assert drawn is not None and drawn["seed_secret"] is True and drawn["seed"] != 0
    shown = client.get(f"/api/v1/submissions/{ids['strong']}").json()["statistics"]
    assert shown["seed"] is None and shown["intervals"]["stg_miou"] is not None


def test_the_generated_secret_key_is_written_whole_once(tmp_path: Path) -> None:
    """A key generated into the data folder is written whole before it is linked into place,
    and read back by every later process; an empty file (a crash of an earlier release between
    creating and writing it) is refused with what to do, never used as the key nor replaced
    under processes that may have read another."""
    from medvidbench.core.errors import UsageError

    data = tmp_path / "data"
    first = Runtime(Settings(data_dir=data)).secret_key  # type: ignore[call-arg]
    assert len(first) >= 32 and (data / "secret_key").stat().st_mode & 0o777 == 0o600
    assert Runtime(Settings(data_dir=data)).secret_key == first  # type: ignore[call-arg]
    assert [p.name for p in data.iterdir() if "secret" in p.name] == ["secret_key"]
    (data / "secret_key").write_text("")
    with pytest.raises(UsageError, match="secret_key is empty: delete it"):
        Runtime(Settings(data_dir=data)).secret_key  # type: ignore[call-arg]  # noqa: B018


def _key_after(barrier: Any, data: str, out: Any) -> None:
    barrier.wait()  # every process asks at the same instant
    out.put(Runtime(Settings(data_dir=Path(data))).secret_key)  # type: ignore[call-arg]


def test_processes_starting_at_once_share_one_generated_key(tmp_path: Path) -> None:
    """Eight processes that need the key at the same instant, on a data folder that has none,
    all read one key (the first link wins; the others read it), and leave no temporary file."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    data = tmp_path / "data"
    data.mkdir()
    keys: list[str] = []
    for _ in range(5):  # five races, each on a fresh folder
        (data / "secret_key").unlink(missing_ok=True)
        barrier, out = context.Barrier(8), context.Queue()
        workers = [
            context.Process(target=_key_after, args=(barrier, str(data), out)) for _ in range(8)
        ]
        for w in workers:
            w.start()
        race = [out.get(timeout=60) for _ in workers]
        for w in workers:
            w.join(timeout=60)
            assert w.exitcode == 0
        assert len(set(race)) == 1 and race[0] == (data / "secret_key").read_text().strip()
        keys.append(race[0])
    assert len(set(keys)) == 5  # a fresh key each time: the races really made them
    assert [p.name for p in data.iterdir()] == ["secret_key"]
