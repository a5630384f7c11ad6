"""The plug-in contract and its guide stay in step (datasette's docs test is the model): every
field and capability of ``Benchmark`` and every method of the scorer, test-set and importer
contracts appears in docs/adding-a-benchmark.md with its signature, as the code declares it."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from medvidbench import benchmarks
from medvidbench.core import benchmark as kernel
from medvidbench.core import rewards, scoring

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "adding-a-benchmark.md"
# The kernel and each capability, the records they are made of: every field, as `name: type`.
RECORDS = (
    kernel.Benchmark,
    kernel.Presentation,
    kernel.Uncertainty,
    kernel.DemoData,
    kernel.JudgedScoring,
    kernel.Task,
    kernel.Metric,
    kernel.Profile,
    kernel.Rule,
    rewards.RewardSpec,
    rewards.TaskReward,
)
# The protocols and base classes a plug-in implements: their attributes and methods.
CONTRACTS = {
    kernel.TestSetFormat: ("load_ground_truth", "validate_submission", "load_questions"),
    kernel.Importer: ("to_submission",),
    kernel.TaskWriter: ("task_files",),
    scoring.TaskScorer: (
        "parse",
        "parse_all",
        "score_sample",
        "linearise",
        "compute",
        "aggregate",
        "evaluate",
        "score_all",
    ),
    scoring.JudgedScorer: ("plan", "aggregate", "linearise", "compute", "similarity"),
    kernel.Profile: ("variant",),
}


def _text() -> str:
    return " ".join(GUIDE.read_text(encoding="utf-8").split())  # wrapped lines joined


def _field_signatures() -> list[str]:
    out = [f"`{f.name}: {f.type}`" for r in RECORDS for f in dataclasses.fields(r)]
    for contract in CONTRACTS:
        own = inspect.get_annotations(contract)
        out += [f"`{name}: {kind}`" for name, kind in own.items()]
    return out


def _method_signature(owner: type, name: str) -> str:
    sig = inspect.signature(getattr(owner, name))
    params: list[str] = []
    for p in list(sig.parameters.values())[1:]:  # without self
        if p.kind is p.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        params.append(p.name)
    return f"`{name}({', '.join(params)}) -> {sig.return_annotation}`"


def _method_signatures() -> list[str]:
    return [_method_signature(c, n) for c, names in CONTRACTS.items() for n in names]


@pytest.mark.parametrize("signature", _field_signatures())
def test_every_field_and_capability_is_documented_with_its_type(signature: str) -> None:
    assert signature in _text(), f"docs/adding-a-benchmark.md does not show {signature}"


@pytest.mark.parametrize("signature", _method_signatures())
def test_every_contract_method_is_documented_with_its_signature(signature: str) -> None:
    assert signature in _text(), f"docs/adding-a-benchmark.md does not show {signature}"


def test_the_lists_cover_every_capability_and_every_abstract_method() -> None:
    """The two lists above are complete: a new capability field (a record-typed field of
    Benchmark) or a new abstract method cannot slip past them."""
    capability_types = {
        f.type.split(" | ")[0]
        for f in dataclasses.fields(kernel.Benchmark)
        if f.type.split(" | ")[0] in vars(kernel)
        and dataclasses.is_dataclass(vars(kernel)[f.type.split(" | ")[0]])
    }
    assert capability_types <= {r.__name__ for r in RECORDS}
    # a capability given as a factory (rewards: () -> RewardSpec) is listed by what it makes
    made = {
        f.type.removeprefix("Callable[[], ").split("]")[0].split("[")[0]
        for f in dataclasses.fields(kernel.Benchmark)
        if f.type.startswith("Callable[[], ")
    }
    assert made - {"Mapping"} <= {r.__name__ for r in RECORDS} | {"Embedder"}
    for base in (scoring.TaskScorer, scoring.JudgedScorer):
        assert base.__abstractmethods__ <= set(CONTRACTS[base])
    protocol_methods = {
        n
        for n, v in vars(kernel.TestSetFormat).items()
        if inspect.isfunction(v) and not n.startswith("_")
    }
    assert protocol_methods <= set(CONTRACTS[kernel.TestSetFormat])


def test_the_plugin_cache_key_is_described_as_the_registry_builds_it() -> None:
    """The guide names what the discovery cache is keyed by (metadata folder names and their
    entry_points.txt), not a modification time of sys.path entries."""
    text = _text()
    for suffix in benchmarks._METADATA:
        assert f"`*{suffix}`" in text
    assert "`entry_points.txt`" in text and "modification time of each one's" in text
