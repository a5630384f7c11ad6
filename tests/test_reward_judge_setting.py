"""No silent mixes: a rewarder refuses statistics fitted with another judge setting than its
own, and "no judge configured" is said once per process, however many rewarders and trainer
threads score (verl calls the reward function from a thread pool)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from medvidbench import benchmarks
from medvidbench.core.errors import UsageError
from medvidbench.core.rewards import RewardStats
from medvidbench.rewards import Rewarder, ground_truth_column

MEDVIDBENCH = benchmarks.get("medvidbench")


def _stats(judge: str | None, benchmark: str = "medvidbench") -> RewardStats:
    bench = benchmarks.get(benchmark)
    spec = bench.rewards()
    task = next(iter(spec.tasks))
    values = {(task, "AVOS", "score"): [0.1 * n for n in range(10)]}
    return RewardStats.fit(
        bench.slug, bench.scorer_version, spec.profile, values, 5, {"judge": judge}
    )


@pytest.fixture
def judge() -> Iterator[Any]:
    from medvidbench.core.judge.cache import MemoryJudgeCache
    from medvidbench.core.judge.client import Judge, JudgeConfig
    from medvidbench.core.judge.fake_server import FakeJudgeServer

    rubric = MEDVIDBENCH.judging.rubric
    with FakeJudgeServer(responder=lambda prompt: "") as server:
        config = JudgeConfig(
            model="j", base_url=server.url, api_key="k", timeout=5, prompt_version=rubric.version
        )
        yield Judge(config, MemoryJudgeCache())


def test_statistics_fitted_without_a_judge_refuse_a_rewarder_with_one(judge: Any) -> None:
    with pytest.raises(UsageError, match="fitted with no judge; this rewarder uses judge"):
        Rewarder(_stats(None), judge=judge)


def test_statistics_fitted_with_a_judge_refuse_another_or_none(judge: Any) -> None:
    with pytest.raises(UsageError, match=r"fitted with judge configuration 0123; .* no judge"):
        Rewarder(_stats("0123"))
    with pytest.raises(UsageError, match="fit them again with the judge you train with"):
        Rewarder(_stats("0123"), judge=judge)
    # the same setting on both sides is what a rewarder takes
    Rewarder(_stats(judge.config.config_id), judge=judge)
    Rewarder(_stats(None))


def test_a_benchmark_without_judged_tasks_ignores_the_judge_setting(judge: Any) -> None:
    Rewarder(_stats(None, "medsg"), judge=judge)


def test_no_judge_is_said_once_per_process(synthetic_gt: Any, tmp_path: Path) -> None:
    sample = next(s for s in synthetic_gt.samples if s.task == "video_summary")
    (tmp_path / "gt.json").write_text(ground_truth_column(MEDVIDBENCH, sample, {}))
    script = textwrap.dedent(
        f"""
        import pathlib
        from concurrent.futures import ThreadPoolExecutor
        from medvidbench.rewards import Rewarder
        from medvidbench.rewards.verl import compute_score

        gt = pathlib.Path({str(tmp_path / "gt.json")!r}).read_text()
        with ThreadPoolExecutor(8) as pool:  # as verl's reward loop calls it
            list(pool.map(lambda n: compute_score("medvidbench/video_summary", "a", gt), range(16)))
        for _ in range(3):  # other rewarders in the same process
            Rewarder().score(["a summary"], [gt])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("no judge configured") == 1, done.stderr
