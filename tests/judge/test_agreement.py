"""The judge agreement card: its statistics against reference implementations, what it
recovers from judges scripted to a known noise and length bias, the calibrated interval's
coverage, and a card that never carries a caption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from medvidbench import benchmarks
from medvidbench.cli.main import app
from medvidbench.core.errors import UsageError
from medvidbench.core.judge import card_check as cards
from medvidbench.core.judge.agreement import (
    calibrated_mean,
    kappa_of_table,
    kendall_tau,
    length_bias,
    ordinal_alpha,
    quadratic_kappa,
    spearman,
)
from medvidbench.core.judge.fake_server import (
    FakeJudgeServer,
    noisy_responder,
    noisy_table,
    steady_responder,
)

ADDED = " The team then reviews every visible detail of the scene with great care and attention."


def test_kappa_by_hand_and_against_scikit_learn() -> None:
    # by hand: A = (1, 2, 3), B = (1, 3, 3); weights (i - j)^2 / 16; observed disagreement
    # 1/16 / 3; expected from the marginals (1, 1, 1) x (1, 0, 2) / 3
    a, b = np.array([1, 2, 3]), np.array([1, 3, 3])
    observed = (1 / 16) / 3
    expected = sum(
        (i - j) ** 2 / 16 * ra * cb / 9
        for i, ra in ((1, 1), (2, 1), (3, 1))
        for j, cb in ((1, 1), (2, 0), (3, 2))
    )
    assert quadratic_kappa(a, b) == pytest.approx(1 - observed / expected)
    # The references (scikit-learn, krippendorff, SciPy) are imported where they are used:
    # every test process collects this file, one runs it.
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 80))
        x = rng.integers(1, 6, n)
        y = np.clip(x + rng.integers(-2, 3, n), 1, 5)
        want = cohen_kappa_score(x, y, weights="quadratic", labels=[1, 2, 3, 4, 5])
        got = quadratic_kappa(x, y)
        if np.isnan(want):
            assert got is None
        else:
            assert got == pytest.approx(want, abs=1e-12)
    assert quadratic_kappa(np.array([4, 4]), np.array([4, 4])) is None  # no chance disagreement


def test_ordinal_alpha_against_krippendorff() -> None:
    import krippendorff

    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(300):
        judges, units = int(rng.integers(2, 5)), int(rng.integers(3, 60))
        ratings = rng.integers(1, 6, size=(judges, units)).astype(float)
        ratings[rng.random((judges, units)) < 0.2] = np.nan
        with np.errstate(invalid="ignore", divide="ignore"):  # its undefined cases: NaN
            want = krippendorff.alpha(
                reliability_data=ratings,
                level_of_measurement="ordinal",
                value_domain=[1, 2, 3, 4, 5],
            )
        got = ordinal_alpha(ratings)
        if got is None:
            continue
        assert got == pytest.approx(want, abs=1e-9)
        checked += 1
    assert checked > 250
    assert ordinal_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])) is None  # nobody overlaps


def test_rank_correlations_against_scipy() -> None:
    from scipy.stats import kendalltau, spearmanr

    rng = np.random.default_rng(2)
    x = rng.integers(1, 6, 50).astype(float)
    y = x + rng.normal(0, 1, 50)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    a, b = [0.1, 0.4, 0.3, 0.9], [0.2, 0.5, 0.5, 0.8]
    assert kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic)
    assert kendall_tau([1.0, 2.0], [1.0, 2.0]) is None  # two models: no tau worth a number
    assert spearman(np.ones(5), np.arange(5.0)) is None


def test_length_bias_is_the_difference_of_mean_excesses() -> None:
    diff = np.array([1.0, 0.0, 0.5, 0.0, 0.25])
    long = np.array([True, False, True, False, False])
    assert length_bias(diff, long) == pytest.approx(0.75 - 0.25 / 3)
    assert length_bias(diff, np.zeros(5, bool)) is None


def test_calibrated_interval_covers_the_reference_mean() -> None:
    """Biased, noisier judge B on every pair, both judges on a quarter: the prediction-powered
    interval covers A's mean at the rate of A's own t interval (bench_judge_agreement.py prints
    both, and B's alone, which its bias keeps from covering)."""
    rng = np.random.default_rng(3)
    sims, clusters, truth = 400, 30, 3.0
    hits = 0
    for _ in range(sims):
        sizes = 1 + rng.poisson(2, size=clusters)
        video = np.repeat(np.arange(clusters), sizes)
        names = [f"v{v}" for v in video]
        a = truth + np.repeat(rng.normal(0, 0.5, clusters), sizes) + rng.normal(0, 0.6, len(video))
        b = 0.7 * a + 1.2 + rng.normal(0, 0.5, len(video))
        picked = np.sort(rng.choice(len(video), size=len(video) // 4, replace=False))
        got = calibrated_mean(b, names, a[picked], b[picked], [names[i] for i in picked])
        assert got is not None and 0.0 <= got.weight <= 1.0
        hits += got.low <= truth <= got.high
    assert 0.915 <= hits / sims <= 0.98  # nominal 95; bench_judge_agreement.py: 93.5-94.2 %


def _verbose(strong: Path, out: Path) -> Path:
    rows = json.loads(strong.read_text())
    for row in rows:
        if row["qa_type"].startswith(("dense_captioning", "video_summary", "region_caption")):
            row["prediction"] += ADDED
    out.write_text(json.dumps(rows))
    return out


@pytest.fixture(scope="module")
def agreement(synthetic: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The card of a steady reference judge and a second judge scripted to flip 20 % of its
    aspect scores by a point and to add +0.5 to answers longer than their reference, made by
    the command line over real HTTP."""
    folder = tmp_path_factory.mktemp("agreement")
    verbose = _verbose(synthetic["strong"], folder / "verbose.json")
    out = folder / "card.json"
    with (
        FakeJudgeServer(responder=steady_responder, model="reference") as a,
        FakeJudgeServer(responder=noisy_responder(0.2, True, seed=5), model="second") as b,
    ):
        args = [
            "judge",
            "agreement",
            *(f"{k}={synthetic[k]}" for k in ("strong", "weak", "shuffled")),
            f"verbose={verbose}",
            "--ground-truth",
            str(synthetic["ground_truth"]),
            "--judge",
            f"reference@{a.url}",
            "--judge",
            f"second@{b.url}",
            "--items",
            "600",
            "--retest",
            "60",
            "--replicates",
            "200",
            "--cache",
            str(folder / "cache.sqlite"),
            "--out",
            str(out),
        ]
        result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "none", "COLUMNS": "120"})
        prompts = list(a.prompts)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), prompts, result.output


def test_card_recovers_the_scripted_kappa_and_length_bias(agreement: Any) -> None:
    card, prompts, output = agreement
    from medvidbench.core.judge.fake_server import pair_of

    # the kappa the script implies: the expected table given the reference judge's answers
    seen = {pair_of(p): p for p in prompts}  # one prompt per distinct pair (retests repeat)
    reference = [
        [int(x.split(": ")[1]) for x in steady_responder(p).splitlines()] for p in seen.values()
    ]
    long = [len(pred.split()) > len(ref.split()) for pred, ref in seen]
    assert card["design"]["long_pairs"] == sum(long) > 100
    comparison = card["comparisons"][0]
    for k, aspect in enumerate(card["aspects"]):
        scripted = kappa_of_table(noisy_table([r[k] for r in reference], long, 0.2, True))
        found = comparison["kappa"]["all"][aspect]
        assert found["value"] == pytest.approx(scripted, abs=0.05)
        assert found["low"] < found["value"] < found["high"]
        assert comparison["exact"]["all"][aspect]["value"] > found["value"] - 0.3  # shown beside
    assert comparison["length_bias"]["all"]["value"] == pytest.approx(0.5, rel=0.10)
    reference_retest, second_retest = card["retest"]
    assert reference_retest["kappa"]["value"] == 1.0 and reference_retest["pairs"] == 60
    assert second_retest["kappa"]["value"] < 0.9  # a new draw on every call
    assert (
        comparison["board_tau"]["all"]["n"] == 4
        and comparison["board_tau"]["all"]["value"] is not None
    )
    assert all(card["alpha"]["all"][a]["value"] > 0.5 for a in card["aspects"])
    calibration = comparison["calibration"]["all"]
    assert calibration["low"] <= calibration["estimate"] <= calibration["high"]
    assert "kappa R2" in output and "length bias" in output and "test-retest" in output


def test_card_never_carries_a_caption(agreement: Any, synthetic: dict[str, Path]) -> None:
    """Hidden labels: no reference (or answer) text of any judged pair is in the card, and a
    card with text where numbers belong is refused."""
    card, prompts, _ = agreement
    from medvidbench.core.judge.fake_server import pair_of

    dumped = json.dumps(card)
    for pred, ref in {pair_of(p) for p in prompts}:
        assert ref not in dumped and pred not in dumped
    bench = benchmarks.get("medvidbench")
    sha = card["test_set"]
    assert cards.check(json.loads(dumped), bench, sha)["kind"] == cards.KIND
    ref = pair_of(prompts[0])[1]
    smuggled = json.loads(dumped)
    smuggled["comparisons"][0]["kappa"]["all"]["R2"]["value"] = ref
    with pytest.raises(UsageError, match="a text where the card holds numbers"):
        cards.check(smuggled, bench, sha)
    smuggled = json.loads(dumped)
    smuggled["design"]["note"] = 1
    with pytest.raises(UsageError, match="unexpected key 'note'"):
        cards.check(smuggled, bench, sha)
    smuggled = json.loads(dumped)
    smuggled["judges"][0]["model"] = "x" * 500
    with pytest.raises(UsageError, match="a text where"):
        cards.check(smuggled, bench, sha)
    for change, said in (
        (lambda c: c["comparisons"][0].update(judge=7), "comparison 1 is of judge 7"),
        (lambda c: c["retest"].pop(), "one test-retest entry per judge"),
        (lambda c: c["alpha"]["all"].pop("R4"), "the card is not whole"),
        (lambda c: c["comparisons"][0]["kappa"]["all"]["R2"].pop("low"), "not an estimate"),
        (lambda c: c["design"].pop("pairs"), "its design needs"),
    ):
        broken = json.loads(dumped)
        change(broken)
        with pytest.raises(UsageError, match=said):
            cards.check(broken, bench, sha)
    with pytest.raises(UsageError, match="another test set"):
        cards.check(json.loads(dumped), bench, "0" * 64)
    with pytest.raises(UsageError, match="of benchmark"):
        cards.check(json.loads(dumped), benchmarks.get("mcqa-demo"), sha)


def test_agreement_command_refuses_bad_input(synthetic: dict[str, Path]) -> None:
    runner = CliRunner()
    base = ["judge", "agreement", str(synthetic["strong"])]
    gt = ["--ground-truth", str(synthetic["ground_truth"])]
    one = runner.invoke(app, [*base, *gt, "--judge", "m@http://127.0.0.1:9/v1"])
    assert one.exit_code == 2 and "at least two --judge" in one.output
    bad = runner.invoke(app, [*base, *gt, "--judge", "m@ftp://x", "--judge", "n@http://h/v1"])
    assert bad.exit_code == 2 and "must start with http" in bad.output
    same = runner.invoke(
        app,
        [
            "judge",
            "agreement",
            str(synthetic["strong"]),
            str(synthetic["strong"]),
            *gt,
            "--judge",
            "m@http://127.0.0.1:9/v1",
            "--judge",
            "n@http://127.0.0.1:9/v1",
        ],
        env={"OPENAI_API_KEY": "none"},
    )
    assert same.exit_code == 2 and "two prediction files are named" in same.output


def test_a_judge_that_answered_nothing_gives_no_number() -> None:
    """A judge whose every judgement failed (an outage) leaves its figures null, never 0."""
    from medvidbench.core.judge.card import Collected, Design, Pair, Ratings, build

    pairs = [Pair("video_summary", f"answer {i} words", "ref", f"v{i % 5}") for i in range(20)]
    collected = Collected("medvidbench", "0" * 64, 20, ["a", "b", "c"], pairs)
    collected.uses = [(m, p) for m in range(3) for p in range(20)]
    rng = np.random.default_rng(0)
    aspects = ("R2", "R3", "R8", "R5", "R4")
    answered = rng.integers(1, 6, size=(20, 5)).astype(float)
    failed = np.full((20, 5), np.nan)
    retest = np.arange(4)
    ratings = Ratings([{"model": "a"}, {"model": "b"}], aspects, [answered, failed], retest,
                      [answered[retest], failed[:4]])  # fmt: skip
    card = build(collected, ratings, Design(20))
    comparison = card["comparisons"][0]
    assert card["judges"][1]["answered"] == 0
    for row in ("video_summary", "all"):
        assert all(comparison["kappa"][row][a]["value"] is None for a in aspects)
        assert comparison["spearman"][row]["value"] is None
        assert comparison["difference"][row]["value"] is None  # not NaN: the card stays JSON
        assert comparison["board_tau"][row]["value"] is None
        assert comparison["calibration"][row] is None
    assert card["retest"][1]["kappa"]["value"] is None and card["retest"][1]["pairs"] == 0
    json.loads(json.dumps(card, allow_nan=False))  # every figure a number or null
