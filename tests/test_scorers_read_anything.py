"""No answer stops an evaluation: every scorer of every built-in benchmark, under every profile,
reads answers assembled from the pieces its formats are written with (brackets, digits,
separators, unit words, option letters) and gives each item a result, never an exception or a
NaN. Pieces, not random text: near misses of a format (``[[1, 2, 3]]``, ``1 2``, ``[ ]``) are
what broke a parser once, and random characters almost never make them."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.core import linear_re
from medvidbench.core.evaluation import plan

SLUGS = ("medvidbench", "medsg", "medframeqa", "medvidqa", "gmai-mmbench", "mcqa-demo")
BOX_PIECES = ["[[", "]]", "[", "]", "1", "23", "4.5", ",", ", ", " ", "-", "\n", "seconds", ": "]
TEXT_PIECES = [
    *BOX_PIECES,
    *("(", ")", "–", ":", "second", "s", "0.0-10.0 seconds: ", "1.0 seconds: ", "to"),
    *("A", "B", "(C)", "Answer:", "5/5", "**", "nan", "inf", "1e309", "-1", "0", "1 2", "."),
    *("99999999999999999999", "{", "}", '"', "Description:", "yes", "no"),
]
ANSWERS_PER_TASK = 400


@pytest.mark.parametrize("slug", SLUGS)
def test_every_scorer_gives_every_answer_a_result(slug: str, tmp_path: Path) -> None:
    bench = benchmarks.get(slug)
    assert bench.demo is not None
    files = bench.demo.synthesise(tmp_path, 120, 1)
    gt = bench.load_ground_truth(files["ground_truth"])
    matched = bench.validate_submission(files["strong"], gt)
    rng = random.Random(slug)
    tried = 0
    for profile in bench.profiles:
        planned = plan(bench, matched, gt, profile.name)
        rules, ctx = planned.rules, planned.ctx
        for task, scorer in bench.scorers().items():
            items, _ = planned.inputs(task)
            if not items:
                continue
            asked = [items[n % len(items)] for n in range(ANSWERS_PER_TASK)]
            texts = [
                "".join(rng.choice(BOX_PIECES if n % 2 else TEXT_PIECES) for _ in range(k))
                for n, k in enumerate(rng.randint(0, 12) for _ in asked)
            ]
            where = f"{slug} {profile.name} {task}"
            try:  # in one batch, as the evaluator reads a task (NAP embeds its answers at once)
                with linear_re.budgeted():
                    parsed = scorer.parse_all(asked, texts, rules, ctx)
            except Exception:  # the answer that did it, in the message
                for item, text in zip(asked, texts, strict=True):
                    try:
                        scorer.parse_all([item], [text], rules, ctx)
                    except Exception as exc:
                        raise AssertionError(f"{where}: reading {text!r}") from exc
                raise
            for item, text, read in zip(asked, texts, parsed, strict=True):
                try:
                    result = scorer.score_sample(read, item, rules)
                except Exception as exc:
                    raise AssertionError(f"{where}: scoring {text!r}") from exc
                for key, value in (result.values or {}).items():
                    assert value is None or not math.isnan(value), (where, key, text)
                tried += 1
    assert tried >= ANSWERS_PER_TASK * len(bench.profiles)
