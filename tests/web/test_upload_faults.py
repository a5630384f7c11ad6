"""Faults while an upload is checked or stored, through the running server: the validation
child killed (as the OOM killer would) and a full disk. Each upload gets a clear answer, never a
bare 500, and nothing is left half-stored."""

from __future__ import annotations

import errno
import io
import os
import signal
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from medvidbench.server import runtime as runtime_module
from medvidbench.server import upload_check
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.models import Submission
from tests.web.test_hostile_uploads import GOOD, _nothing_stored, _send, _used, _zip, medsg

__all__ = ["medsg"]  # the fixture, shared with the hostile-upload tests


def _child_pid(rt: Runtime) -> int:
    pool = rt.upload_checker._pool
    assert pool is not None and pool._processes, "no validation child is running"
    (pid,) = pool._processes
    return int(pid)


def test_a_killed_validation_child_is_replaced(medsg: tuple[TestClient, Runtime, str]) -> None:
    client, rt, token = medsg
    rt.upload_checker.threshold = 0  # every upload is checked in the child process
    first = _send(client, token, _zip({"a.json": GOOD}), "Before the kill")
    assert first.status_code == 202, first.text
    dead = _child_pid(rt)
    os.kill(dead, signal.SIGKILL)
    for attempt in range(2):  # and again after the replacement: it keeps working
        bad = _send(client, token, b"[1]", f"Checked after the kill {attempt}", "bad.json")
        assert bad.status_code == 422, bad.text  # really checked, by a new child
        assert "record 0" in bad.json()["problems"][0]["message"]
    assert _child_pid(rt) != dead
    second = _send(client, token, _zip({"b.json": GOOD}), "After the kill", "b.zip")
    assert second.status_code == 202, second.text


def _die(*_: object) -> None:
    os._exit(9)  # what a child killed mid-check looks like to the pool


def test_a_child_that_dies_twice_is_a_503_for_that_upload_only(
    medsg: tuple[TestClient, Runtime, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, rt, token = medsg
    rt.upload_checker.threshold = 0
    monkeypatch.setattr(upload_check, "_check_in_child", _die)
    refused = _send(client, token, _zip({"a.json": GOOD}), "Dies twice")
    assert refused.status_code == 503, refused.text
    assert "stopped twice" in refused.json()["message"]
    assert int(refused.headers["Retry-After"]) > 0
    _nothing_stored(rt)
    assert _used(client, token) == 0
    monkeypatch.undo()
    accepted = _send(client, token, _zip({"a.json": GOOD}), "Next upload")
    assert accepted.status_code == 202, accepted.text


class _FullDisk(io.RawIOBase):
    """A file whose second write finds the disk full (the first lands: a partial file)."""

    def __init__(self, real: Any) -> None:
        self.real, self.writes = real, 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.writes += 1
        if self.writes > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return int(self.real.write(data))

    def close(self) -> None:
        self.real.close()
        super().close()


class _FullPath(type(Path())):  # type: ignore[misc]
    def open(self, *args: Any, **kwargs: Any) -> Any:
        return _FullDisk(super().open(*args, **kwargs))


def _leftovers(rt: Runtime) -> list[Path]:
    return [p for p in rt.data_dir.rglob("*") if p.parent.name in ("incoming", "submissions")]


@pytest.mark.parametrize("step", ["receiving", "staging"])
def test_a_full_disk_is_a_507_and_leaves_no_file(
    medsg: tuple[TestClient, Runtime, str], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    client, rt, token = medsg
    if step == "receiving":  # the upload streamed into incoming/
        made = rt.incoming_path
        monkeypatch.setattr(rt, "incoming_path", lambda: _FullPath(made()))
    else:  # the checked file compressed into incoming/ before its row is written

        def write_gzip(path: Path, chunks: Any) -> None:
            path.write_bytes(b"\x1f\x8b partial")
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(runtime_module, "write_gzip", write_gzip)
    big = _zip({"a.json": GOOD + b" " * (3 << 20)}, zipfile.ZIP_STORED)  # several chunks
    refused = _send(client, token, big, "Disk full")
    assert refused.status_code == 507, refused.text
    assert "disk is full" in refused.json()["message"]
    assert int(refused.headers["Retry-After"]) > 0
    assert _leftovers(rt) == []
    with rt.sessions() as session:
        assert session.scalars(select(Submission)).all() == []
    assert _used(client, token) == 0
    monkeypatch.undo()
    assert _send(client, token, big, "Disk freed").status_code == 202
