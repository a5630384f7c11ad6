"""Hostile archives and JSON sent through the running server: zip bombs, damaged, encrypted or
oddly compressed zips and JSON nested 200,000 deep. Each is a 422 that says what and where; no
file is stored or left in the data folder, and no quota is spent."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Submission
from medvidbench.server.web.app import create_app
from tests.server.conftest import build_runtime
from tests.web.conftest import login, token_for

LIMIT = 7 << 20  # MEDVIDBENCH_MAX_SUBMISSION_BYTES as the issue set it
BOMB = 64 << 20
GT = [
    {"task": "patch", "images": ["p0.png"], "question": "q0", "answer": [10, 10, 60, 60]},
    {"task": "patch", "images": ["p1.png"], "question": "q1", "answer": [10, 10, 60, 60]},
]
GOOD = json.dumps(
    [
        {"task": "patch", "index": 0, "prediction": "(10,10),(60,60)"},
        {"task": "patch", "index": 1, "prediction": "[10, 10, 60, 60]"},
    ]
).encode()
DEEP = b"[" * 200_000 + b"]" * 200_000


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buffer.getvalue()


def _patch_headers(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Set one field of every local (offset into it) and central header (offset + 2)."""
    out = bytearray(data)
    for magic, at in ((b"PK\x03\x04", offset), (b"PK\x01\x02", offset + 2)):
        pos = out.find(magic)
        while pos >= 0:
            struct.pack_into(fmt, out, pos + at, value)
            pos = out.find(magic, pos + 4)
    return bytes(out)


def _bomb() -> bytes:
    return _zip({"a.json": b"[" + b" " * BOMB + b"]"})


def _lying_bomb() -> bytes:
    """A bomb whose headers say it unpacks to 100 bytes: reading stops there, the CRC fails."""
    return _patch_headers(_bomb(), 22, "<I", 100)


def _many_bombs() -> bytes:
    return _zip({f"{i:02d}.json": b" " * (1 << 20) for i in range(12)})


def _bad_crc() -> bytes:
    return _patch_headers(_zip({"x.json": GOOD}), 14, "<I", 0xDEADBEEF)


def _encrypted() -> bytes:
    return _patch_headers(_zip({"x.json": GOOD}), 6, "<H", 0x1)


def _unknown_method() -> bytes:
    return _patch_headers(_zip({"x.json": GOOD}), 8, "<H", 99)


def _corrupt_data() -> bytes:
    data = bytearray(_zip({"x.json": GOOD * 50}))
    start = data.find(b"x.json") + len("x.json")
    data[start + 5 : start + 40] = b"\xff" * 35
    return bytes(data)


def _truncated() -> bytes:
    data = _zip({"x.json": GOOD * 50})
    return data[: len(data) // 2]


def _many_entries() -> bytes:
    return _zip({f"{i}.txt": b"" for i in range(2_000)}, zipfile.ZIP_STORED)


def _many_entries_zip64() -> bytes:
    """More entries than a plain end record can count: only the zip64 record says how many."""
    return _zip({str(i): b"" for i in range(70_000)}, zipfile.ZIP_STORED)


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "bomb": (_bomb, "x.zip: the zip's files say they unpack to 67,108,866 bytes"),
    "bomb with lying sizes": (_lying_bomb, "x.zip: member 'a.json' is damaged"),
    "many members over the limit": (_many_bombs, "x.zip: the zip's files say they unpack to"),
    "bad CRC": (_bad_crc, "x.zip: member 'x.json' is damaged (Bad CRC-32"),
    "encrypted": (_encrypted, "x.zip: member 'x.json' is encrypted; upload an unencrypted zip"),
    "unknown method": (_unknown_method, "x.zip: member 'x.json' uses compression method 99"),
    "corrupt data": (_corrupt_data, "x.zip: member 'x.json' is damaged"),
    "truncated": (_truncated, "x.zip: the zip file cannot be read"),
    "too many entries": (_many_entries, "x.zip: the zip holds more than 1,000 entries"),
    "too many entries, zip64": (
        _many_entries_zip64,
        "x.zip: the zip holds more than 1,000 entries",
    ),
    "deep JSON in a zip": (
        lambda: _zip({"d.json": DEEP}),
        "d.json: the submission nests arrays or objects too deeply",
    ),
    "deep JSON": (lambda: DEEP, "the submission nests arrays or objects too deeply"),
    "deep predictions": (
        lambda: b'{"predictions": ' + DEEP + b"}",
        "the submission nests arrays or objects too deeply",
    ),
}


@pytest.fixture
def medsg(tmp_path: Path) -> Iterator[tuple[TestClient, Runtime, str]]:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(GT))
    rt = build_runtime(
        tmp_path, None, gt, benchmarks="medsg", max_submission_bytes=LIMIT, quota_per_day=3
    )
    with TestClient(create_app(rt), follow_redirects=False) as client:
        login(client, rt)
        yield client, rt, token_for(client)
    rt.upload_checker.close()
    rt.engine.dispose()


def _send(client: TestClient, token: str, body: bytes, name: str, filename: str = "x.zip"):  # type: ignore[no-untyped-def]
    return client.post(
        "/api/v1/benchmarks/medsg/submissions",
        headers={"Authorization": f"Bearer {token}"},
        files={"file": (filename, body, "application/octet-stream")},
        data={"model_name": name},
    )


def _nothing_stored(rt: Runtime) -> None:
    with rt.sessions() as session:
        rows = session.scalars(select(Submission)).all()
    # a refused upload keeps only its reason (the documented "rejected" record), never the file
    assert all(r.status == "rejected" and not r.stored for r in rows)
    for folder in ("incoming", "submissions"):
        path = rt.data_dir / folder
        assert not path.exists() or list(path.iterdir()) == [], folder


def _used(client: TestClient, token: str) -> int:
    quota = client.get(
        "/api/v1/benchmarks/medsg/quota", headers={"Authorization": f"Bearer {token}"}
    )
    return int(quota.json()["windows"][0]["used"])


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("where", ["in process", "in the child"])
def test_a_hostile_upload_is_a_clear_422_and_nothing_is_kept(
    medsg: tuple[TestClient, Runtime, str], case: str, where: str
) -> None:
    client, rt, token = medsg
    if where == "in the child":
        rt.upload_checker.threshold = 0  # every upload is checked in the child process
    # (a zip goes to the child either way: test_a_zip_is_checked_in_the_child_whatever_its_size)
    build, message = HOSTILE[case]
    body = build()
    assert len(body) < LIMIT  # each passes the upload limit: the attack is in what it holds
    filename = "x.json" if body[:1] in (b"[", b"{") else "x.zip"
    response = _send(client, token, body, f"Hostile {case}", filename)
    assert response.status_code == 422, response.text
    messages = [p["message"] for p in response.json()["problems"]]
    assert any(m.startswith(message) for m in messages), messages
    _nothing_stored(rt)
    assert _used(client, token) == 0
    accepted = _send(client, token, _zip({"ok.json": GOOD}), "Good after hostile")
    assert accepted.status_code == 202, accepted.text  # the server still works, quota intact
    assert _used(client, token) == 1


def test_a_bomb_is_refused_without_unpacking_it(medsg: tuple[TestClient, Runtime, str]) -> None:
    """The checker's peak memory stays near the limit, far below what the bomb unpacks to."""
    _, rt, _ = medsg
    bench = rt.definition("medsg")
    gt = rt.ground_truth(bench_sha(rt), "medsg")
    bomb = _bomb()
    tracemalloc.start()
    try:
        report = rt.upload_checker.check(bench, bomb, gt, Path("unused"), "0" * 64, "x.zip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not report.ok
    print(f"bomb of {len(bomb):,} bytes (unpacks to {BOMB:,}): checker peak {peak:,} bytes")
    assert peak < 3 * LIMIT < BOMB


def bench_sha(rt: Runtime) -> str:
    from medvidbench.server.services.submissions import current_benchmark

    return current_benchmark(rt, "medsg").gt_sha256


def test_deep_json_is_a_clear_422_for_medvidbench_too(
    client: TestClient, web_runtime: Runtime, tmp_path: Path
) -> None:
    login(client, web_runtime)
    token = token_for(client)
    for name, body in (
        ("deep.json", DEEP),
        ("deep.jsonl", b'{"id": "x", "qa_type": "tal", "prediction": ' + DEEP + b"}\n"),
    ):
        response = client.post(
            "/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": (name, body, "application/json")},
            data={"model_name": f"Deep {name}"},
        )
        assert response.status_code == 422, response.text
        assert "too deeply" in response.json()["problems"][0]["message"]
    _nothing_stored(web_runtime)


@pytest.mark.parametrize(
    ("body", "filename"),
    [
        (b"[]", "empty.json"),
        (b'{"predictions": []}', "empty.json"),
        (_zip({"empty.json": b"[]"}), "empty.zip"),
        (b'[{"patch": {"TOTAL": 0}}]', "empty.json"),  # a counters record and no item
    ],
)
def test_an_empty_file_is_refused_and_spends_no_quota(
    medsg: tuple[TestClient, Runtime, str], body: bytes, filename: str
) -> None:
    client, rt, token = medsg
    response = _send(client, token, body, "Empty", filename)
    assert response.status_code == 422, response.text
    message = response.json()["problems"][0]["message"]
    assert message.startswith(f"{filename}: no predictions: the file answers no test item")
    _nothing_stored(rt)
    assert _used(client, token) == 0


def test_an_empty_medvidbench_file_is_refused(client: TestClient, web_runtime: Runtime) -> None:
    login(client, web_runtime)
    token = token_for(client)
    for body in (b"[]", b"{}", b"", b'{"predictions": []}'):
        response = client.post(
            "/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("empty.json", body, "application/json")},
            data={"model_name": "Empty"},
        )
        assert response.status_code == 422, (body, response.text)
    _nothing_stored(web_runtime)


def test_a_hostile_zip_sent_by_the_web_form_gets_the_same_message(
    medsg: tuple[TestClient, Runtime, str],
) -> None:
    from tests.web.conftest import csrf

    client, rt, _ = medsg
    sent = client.post(
        "/b/medsg/submit",
        data={"model_name": "Form bomb", "csrf": csrf(client, "/b/medsg/submit")},
        files={"file": ("x.zip", _encrypted(), "application/zip")},
    )
    assert sent.status_code == 422
    assert "member &#39;x.json&#39; is encrypted; upload an unencrypted zip" in sent.text
    _nothing_stored(rt)


def test_a_zip_is_checked_in_the_child_whatever_its_size(
    medsg: tuple[TestClient, Runtime, str],
) -> None:
    """A small zip can unpack to the whole upload limit (a 1 MB one to 1,000 MiB took the web
    process to 2.9 GB): its check runs in the child process, a small JSON file's in the web
    process."""
    client, rt, token = medsg
    assert rt.upload_checker.threshold > len(GOOD) * 10  # both far below the threshold
    assert _send(client, token, GOOD, "Plain", "x.json").status_code == 202
    assert rt.upload_checker._pool is None  # checked in the web process
    refused = _send(client, token, _bomb(), "Bomb")
    assert refused.status_code == 422
    assert rt.upload_checker._pool is not None  # the child read it
