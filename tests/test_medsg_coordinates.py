"""MedSG-Bench boxes in 0-1 units on pixel images (#32 item 6): the file is valid but says so,
with the remedy, and a run that scores 0 on every metric wears no medal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.library import evaluate
from medvidbench.server.services.boards import board_rows
from medvidbench.server.services.submissions import submit
from tests.server.conftest import build_runtime, make_user


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    bench = benchmarks.get("medsg")
    assert bench.demo is not None
    return bench.demo.synthesise(tmp_path_factory.mktemp("medsg"), 300, 3)


def _warnings(demo: dict[str, Path], name: str) -> list[str]:
    bench = benchmarks.get("medsg")
    gt = bench.load_ground_truth(demo["ground_truth"])
    return [p.code for p in bench.validate_submission(demo[name], gt).report.warnings.items]


def test_undeclared_normalised_boxes_are_named_with_the_remedy(demo: dict[str, Path]) -> None:
    bench = benchmarks.get("medsg")
    gt = bench.load_ground_truth(demo["ground_truth"])
    report = bench.validate_submission(demo["scaled-0-1"], gt).report
    assert report.verdict == "valid"
    [warning] = report.warnings.items
    assert warning.code == "normalised-coordinates"
    assert (
        '"coordinates": "0-1"' in warning.message and "--option coordinates=0-1" in warning.message
    )
    # every other archetype (pixels, 0-1000, prose, the official results file) is not flagged
    for name in ("perfect", "strong", "prose", "truncated", "scaled-1000", "results_strong"):
        assert "normalised-coordinates" not in _warnings(demo, name), name


def test_declaring_the_coordinates_settles_the_warning(
    demo: dict[str, Path], tmp_path: Path
) -> None:
    declared = tmp_path / "declared.json"
    records = json.loads(demo["scaled-0-1"].read_text())
    declared.write_text(json.dumps({"predictions": records, "coordinates": "0-1"}))
    bench = benchmarks.get("medsg")
    gt = bench.load_ground_truth(demo["ground_truth"])
    assert not bench.validate_submission(declared, gt).report.warnings
    given = evaluate(
        demo["scaled-0-1"],
        demo["ground_truth"],
        benchmark="medsg",
        profile="corrected",
        options={"coordinates": "0-1"},
    )
    assert given.submission["warning_totals"] == {}
    assert given.metrics["overall.miou"] > 0.5
    as_pixels = evaluate(demo["scaled-0-1"], demo["ground_truth"], benchmark="medsg")
    assert as_pixels.submission["warning_totals"] == {"normalised-coordinates": 1}


def test_a_run_that_scores_nothing_wears_no_medal(tmp_path: Path, demo: dict[str, Path]) -> None:
    rt = build_runtime(tmp_path, None, demo["ground_truth"], benchmarks="medsg")
    try:
        user = make_user(rt)
        submit(rt, user, demo["scaled-0-1"].read_bytes(), "Unit boxes", benchmark="medsg")
        submit(rt, user, demo["strong"].read_bytes(), "Pixels", benchmark="medsg")
        rows = {r.model_name: r for r in board_rows(rt, "community", slug="medsg")}
        assert rows["Pixels"].medal == 1
        zero = rows["Unit boxes"]
        assert zero.rank <= 3 and zero.medal is None  # ranked, never decorated
        assert all(v in (0.0, None) for v in zero.metrics.values())
    finally:
        rt.engine.dispose()


def test_a_misspelt_scoring_option_is_refused_not_ignored(tmp_path: Path) -> None:
    """A researcher's walk: ``coords=0-1000`` (for ``coordinates``) and a misspelt benchmark
    were scored as if in pixels, with no word; every place a user gives options refuses them."""
    from medvidbench import benchmarks, library
    from medvidbench.benchmarks.medsg.synth import write_synthetic
    from medvidbench.core.errors import UsageError
    from medvidbench.rewards import Rewarder

    files = write_synthetic(tmp_path, 40, 1)
    for options, message in (
        ({"medsg": {"coords": "0-1000"}}, "medsg has no scoring option 'coords' \\(it takes: "),
        ({"medsgg": {"coordinates": "0-1000"}}, "unknown benchmark 'medsgg'"),
        ({"medvidbench": {"parser": "old"}}, "medvidbench has no scoring option 'parser'"),
    ):
        with pytest.raises(UsageError, match=message):
            Rewarder(options=options)
    with pytest.raises(UsageError, match="no scoring option 'coords'"):
        library.evaluate(
            files["results_strong"],
            files["ground_truth"],
            "corrected",
            benchmark="medsg",
            options={"coords": "0-1000"},
        )
    # the names it takes still work, and a file's own declarations are not options to check
    assert benchmarks.get("medsg").option_names == ("parser", "coordinates")
    Rewarder(options={"medsg": {"coordinates": "0-1000", "parser": "strong"}})
