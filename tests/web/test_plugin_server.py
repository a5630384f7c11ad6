"""The seam over HTTP: TallyBench, a benchmark defined only in the test suite and installed
through the entry-point group, is hosted by an unchanged ``medvidbench serve`` next to
MedVidBench: its test set is validated, submissions through the API and the CLI are scored and
ranked in its metric's direction (lower error first), and it has its own board and About page."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx

from medvidbench import benchmarks
from tests.plugins.install import ROOT, install_tallybench
from tests.web.live import CLI, live_server


def _env(site: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MEDVIDBENCH_BENCHMARK"}
    # the inherited path last: a checkout run with PYTHONPATH=src tests its own code
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), *inherited])
    env["COLUMNS"] = "200"
    env["MEDVIDBENCH_BENCHMARKS"] = ""  # every installed benchmark
    return env


def _run(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], input=stdin, env=env, capture_output=True, text=True, timeout=180
    )


def _scored(url: str, sid: int) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        response = httpx.get(f"{url}/api/v1/submissions/{sid}")
        if response.status_code == 404:  # not public before it is scored
            time.sleep(0.2)
            continue
        body = response.json()
        if body["status"] in ("scored", "complete"):
            return body  # type: ignore[no-any-return]
        assert body["status"] not in ("rejected", "failed"), body
        time.sleep(0.2)
    raise AssertionError(f"submission {sid} not scored in time")


def test_a_plugin_benchmark_is_hosted_beside_medvidbench(tmp_path: Path) -> None:
    site = install_tallybench(tmp_path / "site")
    env = _env(site)
    data = tmp_path / "data"
    made = _run(
        env,
        "users",
        "create",
        "lab",
        "--password-stdin",
        "--data-dir",
        str(data),
        stdin="lab-password-123\n",
    )
    assert made.returncode == 0, made.stderr
    token = _run(env, "tokens", "create", "lab", "--data-dir", str(data)).stdout.strip()
    assert token.startswith("mvb_")

    with live_server(data, env=env) as live:
        # the front page lists both; each benchmark has its own pages
        home = httpx.get(live.url + "/").text
        slugs = sorted([*benchmarks.slugs(), "tallybench"])  # this process has no TallyBench
        assert all(f"/b/{slug}/" in home for slug in slugs)
        about = httpx.get(live.url + "/b/tallybench/about")
        assert about.status_code == 200
        assert "TallyBench counts objects" in about.text and "lower" in about.text
        info = httpx.get(live.url + "/api/v1/benchmarks/tallybench").json()
        assert info["labels"] == "public" and info["samples"] == 80  # 40 cases, 2 questions
        assert [m["higher_is_better"] for m in info["metrics"]] == [False, True]

        demo = data / "demo" / "tallybench"
        with (demo / "predictions_exact.json").open("rb") as fh:
            created = httpx.post(
                live.url + "/api/v1/benchmarks/tallybench/submissions",
                headers={"Authorization": f"Bearer {token}"},
                files={"file": ("exact.json", fh, "application/json")},
                data={"model_name": "Exact counter"},
            )
        assert created.status_code == 202, created.text
        exact = _scored(live.url, created.json()["id"])
        assert exact["metrics"] == {"count_err": 0.0, "present_acc": 1.0}

        sent = _run(
            env,
            "submit",
            str(demo / "predictions_sloppy.json"),
            "--server",
            live.url,
            "--token",
            token,
            "--model-name",
            "Sloppy counter",
            "--benchmark",
            "tallybench",
            "--wait",
        )
        assert sent.returncode == 0, sent.stderr
        assert "Count error" in sent.stdout  # the plug-in's display name, as on its pages

        board = httpx.get(live.url + "/api/v1/benchmarks/tallybench/boards/community").json()
        assert [r["model_name"] for r in board] == ["Exact counter", "Sloppy counter"]
        assert set(board[0]["metrics"]) == {"count_err", "present_acc"}
        page = httpx.get(live.url + "/b/tallybench/board/community").text
        assert "Count error" in page and page.index("Exact counter") < page.index("Sloppy counter")
        # MedVidBench's board and its old, single-benchmark API are untouched
        for path in ("/api/v1/benchmarks/medvidbench/boards/community", "/api/v1/boards/community"):
            assert httpx.get(live.url + path).json() == []
        wrong = httpx.post(
            live.url + "/api/v1/benchmarks/nope/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("x.json", b"[]", "application/json")},
            data={"model_name": "x"},
        )
        hosted = wrong.json()["message"].split("hosted: ")[1]
        assert wrong.status_code == 404 and hosted.startswith("medvidbench, ")  # the default first
        assert sorted(hosted.split(", ")) == slugs

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"case": "c1", "task": "weigh", "answer": "3"}]))
    refused = _run(
        env, "benchmarks", "load", str(bad), "--benchmark", "tallybench", "--data-dir", str(data)
    )
    assert refused.returncode == 5 and "record 0: unknown task 'weigh'" in refused.stderr
