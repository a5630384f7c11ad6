"""Commands declared as typed functions become the click commands the docs describe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import pytest
from click.testing import CliRunner

from medvidbench.cli.params import Argument, Group, Option, command

seen: dict[str, Any] = {}


def sample(
    files: Annotated[list[Path], Argument(help="Input files.")],
    out: Annotated[Path, Option("--out", help="Where to write.")],
    count: Annotated[int | None, Option(min=1, max=9, help="How many.")] = None,
    ratio: Annotated[float, Option(help="A ratio.")] = 0.5,
    seed: Annotated[int, Option(help="Seed.")] = 0,
    similarity: Annotated[bool, Option(help="A switch pair.")] = False,
    as_json: Annotated[bool, Option("--json", help="A flag.")] = False,
    option: Annotated[list[str] | None, Option("--option", help="Repeatable.")] = None,
    slug: Annotated[str | None, Option("--benchmark", envvar="SAMPLE_SLUG", help="Slug.")] = None,
) -> None:
    """Do the sample thing.

    In detail.
    """
    seen.update(locals())


def test_the_rules_of_the_module_docstring() -> None:
    cmd = command(sample)
    assert cmd.name == "sample"
    names = {p.name: p for p in cmd.params}
    assert isinstance(names["files"], click.Argument) and names["files"].nargs == -1
    assert names["files"].required and names["out"].required
    assert names["similarity"].opts == ["--similarity"]  # type: ignore[attr-defined]
    assert names["similarity"].secondary_opts == ["--no-similarity"]  # type: ignore[attr-defined]
    assert names["as_json"].opts == ["--json"] and not names["as_json"].secondary_opts  # type: ignore[attr-defined]
    assert names["option"].multiple  # type: ignore[attr-defined]
    assert isinstance(names["count"].type, click.IntRange)

    runner = CliRunner()
    result = runner.invoke(
        cmd,
        [
            "a.json",
            "b.json",
            "--out",
            "o.json",
            "--count",
            "3",
            "--similarity",
            "--json",
            "--option",
            "k=v",
            "--option",
            "x=y",
        ],
        env={"SAMPLE_SLUG": "medsg-bench"},
    )
    assert result.exit_code == 0, result.output
    assert seen["files"] == [Path("a.json"), Path("b.json")] and seen["out"] == Path("o.json")
    assert (seen["count"], seen["ratio"], seen["similarity"], seen["as_json"]) == (
        3,
        0.5,
        True,
        True,
    )
    assert seen["option"] == ["k=v", "x=y"] and seen["slug"] == "medsg-bench"

    result = runner.invoke(cmd, ["a.json", "--out", "o.json"])
    assert result.exit_code == 0
    assert seen["option"] is None and seen["count"] is None and seen["slug"] is None

    bad = runner.invoke(cmd, ["a.json", "--out", "o.json", "--count", "0"])
    assert bad.exit_code == 2 and "'--count'" in bad.output and "1<=x<=9" in bad.output
    missing = runner.invoke(cmd, ["a.json"])
    assert missing.exit_code == 2 and "Missing option '--out'" in missing.output

    text = runner.invoke(cmd, ["--help"]).output
    assert "Do the sample thing." in text and "In detail." in text
    assert text.index("Arguments:") < text.index("Options:")
    assert "Input files." in text and "[env var: SAMPLE_SLUG]" in text
    assert text.count("Input files.") == 1  # not listed twice on click 8.5
    flat = " ".join(text.split())
    assert "Input files. [required]" in flat
    assert "[default: no-similarity]" in flat and "[default: 0.5]" in flat
    assert "Seed. [default: 0]" in flat  # 0 is a default to show, though it equals False


def test_a_group_lists_commands_in_order_and_imports_them_when_asked() -> None:
    group = Group(name="top", help="Top.")
    group.lazy("zeta", "tests.test_cli_params:sample")
    group.add(sample, "alpha")
    ctx = click.Context(group)
    assert group.list_commands(ctx) == ["zeta", "alpha"]
    found = group.get_command(ctx, "zeta")
    assert found is not None and found.name == "zeta" and group.get_command(ctx, "zeta") is found
    assert group.get_command(ctx, "nothing") is None


def test_an_undeclared_parameter_is_refused() -> None:
    def bare(x: int) -> None:
        """Nothing."""

    with pytest.raises(TypeError, match=r"Annotated\[type, Option"):
        command(bare)
