"""One pass through the data: an upload is matched once, the judge step judges only the judged
tasks and merges them with the stored rule-based results, and every value stays the one a full
evaluation gives."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from medvidbench import benchmarks, library
from medvidbench.benchmarks.medsg.synth import write_synthetic as medsg_synthetic
from medvidbench.core.judge.cache import MemoryJudgeCache
from medvidbench.core.judge.client import Judge, JudgeConfig
from medvidbench.core.judge.fake_server import FakeJudgeServer
from medvidbench.core.scoring import TaskScorer
from medvidbench.server import checkpoints
from medvidbench.server.services.submissions import submit
from medvidbench.server.store.models import Evaluation, Submission, SubmissionEvent
from tests.server.conftest import build_runtime, gt_of, make_user

REPLICATES = 200


def judged_runtime(tmp_path: Path, gt: Path, url: str, slug: str = "medvidbench") -> Any:
    return build_runtime(
        tmp_path,
        None,
        gt,
        judge_enabled=True,
        judge_base_url=url,
        judge_api_key="k",
        benchmarks=slug,
        bootstrap_replicates=REPLICATES,
    )


@contextmanager
def counting(slug: str) -> Iterator[dict[str, int]]:
    """Count the benchmark's file matchings and its rule-based task scorings."""
    bench = benchmarks.get(slug)
    calls = {"matched": 0, "scored": 0}
    validate = bench.validate_submission
    evaluate = TaskScorer.evaluate

    def counted_validate(*args: Any, **kwargs: Any) -> Any:
        calls["matched"] += 1
        return validate(*args, **kwargs)

    def counted_evaluate(self: TaskScorer, *args: Any, **kwargs: Any) -> Any:
        calls["scored"] += 1
        return evaluate(self, *args, **kwargs)

    object.__setattr__(bench, "validate_submission", counted_validate)  # a frozen record
    TaskScorer.evaluate = counted_evaluate  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        object.__setattr__(bench, "validate_submission", validate)
        TaskScorer.evaluate = evaluate  # type: ignore[method-assign]


def evaluations(runtime: Any, submission_id: int) -> list[Evaluation]:
    with runtime.sessions() as session:
        return list(
            session.scalars(
                select(Evaluation)
                .where(Evaluation.submission_id == submission_id)
                .order_by(Evaluation.id)
            )
        )


def test_an_upload_is_matched_once_and_the_judge_step_scores_only_judged_tasks(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with FakeJudgeServer() as judge:
        runtime = judged_runtime(tmp_path, synthetic["ground_truth"], judge.url)
        user = make_user(runtime)
        with counting("medvidbench") as calls:
            sub = submit(runtime, user, synthetic["strong"].read_bytes(), "Once")
        with runtime.sessions() as session:
            assert session.get(Submission, sub.id).status == "complete"  # type: ignore[union-attr]
        rule_based = len(benchmarks.get("medvidbench").scorers())
        # matched once (the web process's check), each rule-based task scored once (the score
        # step); the judge step read both back
        assert calls == {"matched": 1, "scored": rule_based}
        scored, judged = evaluations(runtime, sub.id)
        assert judged.judge_id and judged.metrics["vs_llm"] is not None
        # the rule-based intervals drawn once: the judged evaluation holds the same ones
        assert scored.statistics is not None and judged.statistics is not None
        for key, bounds in scored.statistics["intervals"].items():
            assert judged.statistics["intervals"][key] == bounds


def test_the_merged_judged_evaluation_equals_a_full_evaluation(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    with FakeJudgeServer() as judge:
        runtime = judged_runtime(tmp_path, synthetic["ground_truth"], judge.url)
        sub = submit(runtime, make_user(runtime), synthetic["weak"].read_bytes(), "Merged")
        _, judged = evaluations(runtime, sub.id)
        judging = benchmarks.get("medvidbench").judging
        assert judging is not None
        config = JudgeConfig.from_settings(runtime.settings, prompt_version=judging.rubric.version)
        full = library.evaluate(
            synthetic["weak"],
            synthetic["ground_truth"],
            judge=Judge(config, MemoryJudgeCache()),
            bootstrap=REPLICATES,
            # the server's own seed for a hidden test set (secret: derived from its contents)
            seed=runtime.bootstrap_seed(runtime.definition("medvidbench"), gt_of(runtime, sub.id)),
        )
    assert judged.metrics == full.metrics
    assert judged.per_task == full.per_task
    assert judged.per_dataset == full.per_dataset
    assert full.statistics is not None and "seed_secret" not in full.statistics
    assert judged.statistics == {**full.statistics, "seed_secret": True}


@pytest.mark.parametrize("lose", [checkpoints.matched_path, checkpoints.scored_path])
def test_a_submission_without_its_kept_files_is_scored_from_its_upload(
    tmp_path: Path, synthetic: dict[str, Path], lose: Callable[[Path], Path]
) -> None:
    """Submissions stored before the files were kept (or whose file is lost) score the same."""
    with FakeJudgeServer() as judge:
        first = judged_runtime(tmp_path / "a", synthetic["ground_truth"], judge.url)
        sub = submit(first, make_user(first), synthetic["weak"].read_bytes(), "Kept")
        kept = [(e.metrics, e.per_task, e.statistics) for e in evaluations(first, sub.id)]
        second = judged_runtime(tmp_path / "b", synthetic["ground_truth"], judge.url)
        second.queue.huey.immediate = False  # type: ignore[attr-defined]
        again = submit(second, make_user(second), synthetic["weak"].read_bytes(), "Lost")
        upload = second.submission_path(again.id)
        lose(upload).unlink(missing_ok=True)
        second.queue.score.call_local(again.id)  # type: ignore[attr-defined]
        lose(upload).unlink(missing_ok=True)
        second.queue.judge.call_local(again.id)  # type: ignore[attr-defined]
        lost = [(e.metrics, e.per_task, e.statistics) for e in evaluations(second, again.id)]
    assert len(kept) == 2 and lost == kept


def test_a_benchmark_without_judged_tasks_runs_no_judge_step(tmp_path: Path) -> None:
    files = medsg_synthetic(tmp_path / "synth", samples=120, seed=3)
    with FakeJudgeServer() as judge:
        runtime = judged_runtime(tmp_path, files["ground_truth"], judge.url, slug="medsg")
        sub = submit(
            runtime, make_user(runtime), files["strong"].read_bytes(), "No judge", benchmark="medsg"
        )
        with runtime.sessions() as session:
            row = session.get(Submission, sub.id)
            assert row is not None and row.status == "complete" and row.finished_at is not None
            kinds = list(
                session.scalars(
                    select(SubmissionEvent.kind).where(SubmissionEvent.submission_id == sub.id)
                )
            )
        assert "scored" in kinds and not [k for k in kinds if k.startswith("judge")]
        assert judge.requests == 0
        assert not checkpoints.scored_path(runtime.submission_path(sub.id)).exists()


@pytest.mark.parametrize("count", [0, 1, 15, 16, 4095, 4096, 4097, 9000, 70_000])
def test_the_matched_submission_is_written_in_parts_as_one_encoding(
    count: int, tmp_path: Path
) -> None:
    """The parts are msgspec's one-shot encoding byte for byte (array headers of every size
    included), so the score step decodes them as before; the file reads back equal."""
    import gzip

    import msgspec

    from medvidbench.core.submission import MatchedSubmission, ValidationReport

    report = ValidationReport(source="s.json", sha256="0" * 64, size=count, records=count)
    kinds = ["an answer", None, {"bbox": [1, 2, 3, 4]}, [0.5, 1.5], "ü" * 40]
    matched = MatchedSubmission(report, [kinds[i % len(kinds)] for i in range(count)])
    parts = list(checkpoints.matched_chunks(matched))
    assert b"".join(parts) == msgspec.msgpack.encode(matched)
    assert len(parts) == 1 + -(-count // 4096)  # the head, then a part per 4,096 predictions
    path = tmp_path / "m.msgpack.gz"
    checkpoints.write_matched(path, matched)
    back = msgspec.msgpack.decode(gzip.decompress(path.read_bytes()), type=MatchedSubmission)
    assert back.predictions == matched.predictions and back.report.sha256 == report.sha256


def test_a_rescore_draws_a_judged_bootstrap_again_from_the_judge_cache(
    tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    """A judged evaluation an earlier release stored with the known seed (withheld on a
    hidden-label board) gets the bootstrap of the server's seed from a re-score: judged again
    with the same judge, every judgement from the cache (no request), and stored only because
    every metric came out as stored."""
    from medvidbench.server.services.evaluations import rescore

    with FakeJudgeServer() as judge:
        runtime = judged_runtime(tmp_path, synthetic["ground_truth"], judge.url)
        sub = submit(runtime, make_user(runtime), synthetic["strong"].read_bytes(), "Judged")
        _, judged = evaluations(runtime, sub.id)
        drawn = judged.statistics
        assert drawn is not None and drawn["seed_secret"] is True
        with runtime.sessions() as session:  # as 0.2.0 stored it: seed 0, known
            stored = session.get(Evaluation, judged.id)
            assert stored is not None
            stored.statistics = {k: v for k, v in drawn.items() if k != "seed_secret"} | {"seed": 0}
            session.commit()
        asked = judge.requests  # every judgement is in the cache: none is asked again
        assert rescore(runtime, sub.id, judged.profile) is False  # the judge-less one: as stored
        assert judge.requests == asked
        _, again = evaluations(runtime, sub.id)
    assert again.id == judged.id and again.metrics == judged.metrics
    assert again.statistics == drawn  # the server's own draw, as first stored
    runtime.engine.dispose()
