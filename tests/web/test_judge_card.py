"""The judge agreement card on the About page: made on the hosted test set, stored by the
administrator's command after its check, shown beside the judged metrics with no caption; a
card of another test set, or with text where numbers belong, is refused and nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from fastapi.testclient import TestClient

from medvidbench import benchmarks
from medvidbench.cli.main import app
from medvidbench.core.judge.card import Design, ask, build, collect
from medvidbench.core.judge.client import judge_from_spec
from medvidbench.core.judge.fake_server import (
    FakeJudgeServer,
    noisy_responder,
    pair_of,
    steady_responder,
)
from medvidbench.server.runtime import Runtime
from medvidbench.server.store.files import FolderFiles


def _card(synthetic: dict[str, Path], folder: Path) -> tuple[dict, set[str]]:
    bench = benchmarks.get("medvidbench")
    assert bench.judging is not None
    rubric = bench.judging.rubric
    with (
        FakeJudgeServer(responder=steady_responder, model="reference-judge") as a,
        FakeJudgeServer(responder=noisy_responder(0.2, True, 1), model="local-judge") as b,
    ):
        judges = [
            judge_from_spec(f"{j.model}@{j.url}", rubric.version, folder / "c.sqlite")
            for j in (a, b)
        ]
        models = {k: synthetic[k] for k in ("strong", "weak", "shuffled")}
        collected = collect(bench, synthetic["ground_truth"], models, 60)
        card = build(collected, ask(judges, collected, rubric, 10), Design(50))
        texts = {t for p in a.prompts for t in pair_of(p)}
    return card, texts


def test_about_page_shows_the_stored_card_and_no_caption(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    about = client.get("/b/medvidbench/about").text
    assert "No judge agreement card is stored for this test set" in about
    card, texts = _card(synthetic, tmp_path)
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card))
    data = ["--data-dir", str(web_runtime.settings.data_dir)]
    stored = CliRunner().invoke(app, ["benchmarks", "judge-card", str(path), *data])
    assert stored.exit_code == 0, stored.output
    assert "judge card stored for medvidbench (reference-judge, local-judge" in stored.output
    page = client.get("/b/medvidbench/about")
    assert page.status_code == 200
    html = page.text
    assert "How far the judge agrees" in html and "<code>local-judge</code> against" in html
    kappa = card["comparisons"][0]["kappa"]["all"]["R2"]
    assert f'{kappa["value"]:.2f} <span class="muted">({kappa["low"]:.2f} to' in html
    assert "DVC_llm" in html or "dvc_llm" in html.lower()
    assert "Test-retest" in html and "Krippendorff" in html and "both judges" in html
    for judge in card["judges"]:  # a judge's endpoint is for administrators (health, #32)
        assert judge["endpoint"] not in html
    for text in texts:  # hidden labels: no reference or answer of a judged pair
        if len(text) > 20:
            assert text not in html
    # other boards' About pages: MCQA-Demo has no judge, so no section
    removed = CliRunner().invoke(app, ["benchmarks", "judge-card", "--remove", *data])
    assert removed.exit_code == 0 and "judge card removed" in removed.output
    assert "No judge agreement card" in client.get("/b/medvidbench/about").text


def test_a_bad_card_is_refused_and_the_stored_one_kept(
    client: TestClient, web_runtime: Runtime, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    card, texts = _card(synthetic, tmp_path)
    data = ["--data-dir", str(web_runtime.settings.data_dir)]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(card))
    assert CliRunner().invoke(app, ["benchmarks", "judge-card", str(good), *data]).exit_code == 0
    caption = max(texts, key=len)
    attacks = {
        "a text where the card holds numbers": lambda c: c["comparisons"][0]["kappa"]["all"][
            "R2"
        ].update(value=caption),
        "unexpected key": lambda c: c["design"].update({caption[:30]: 1}),
        "another test set": lambda c: c.update(test_set="f" * 64),
        "not a finite number": lambda c: c["alpha"]["all"]["R3"].update(value=float("inf")),
        "<script>": None,
    }
    for expected, change in attacks.items():
        bad = json.loads(json.dumps(card))
        if change is None:
            bad["judges"][0]["model"] = "<script>alert(1)</script>" + caption
            expected = "a text where"
        else:
            change(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        got = CliRunner().invoke(app, ["benchmarks", "judge-card", str(path), *data])
        assert got.exit_code == 2, (expected, got.output)
        assert expected in got.output, got.output
    huge = tmp_path / "huge.json"  # a card of 2 MB: refused before it is read
    huge.write_text(json.dumps({**card, "pad": "x" * (2 << 20)}))
    got = CliRunner().invoke(app, ["benchmarks", "judge-card", str(huge), *data])
    assert got.exit_code == 2 and "larger than the limit of 1,048,576 bytes" in got.output
    not_json = tmp_path / "x.json"
    not_json.write_text("{")
    got = CliRunner().invoke(app, ["benchmarks", "judge-card", str(not_json), *data])
    assert got.exit_code == 2 and "not JSON" in got.output
    html = client.get("/b/medvidbench/about").text
    assert "<code>local-judge</code> against" in html and "<script>alert" not in html
    files = FolderFiles(web_runtime.settings.data_dir)
    assert files.exists("judge-card", card["test_set"])
