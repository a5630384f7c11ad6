"""pre-commit runs ruff, ruff-format, mypy and lint-imports, each at a pinned version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parent.parent
# The package that installs each tool a hook runs.
TOOLS = {"ruff": "ruff", "ruff-format": "ruff", "mypy": "mypy", "lint-imports": "import-linter"}


def _hooks() -> list[dict[str, Any]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks: list[dict[str, Any]] = []
    for repo in config["repos"]:
        if repo["repo"] not in ("local", "meta"):
            assert re.fullmatch(r"v?\d+(\.\d+)+", str(repo.get("rev", ""))), repo
        hooks += repo["hooks"]
    return hooks


def _dev_pins() -> dict[str, str]:
    """The exactly pinned (``==``) development requirements of pyproject.toml."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pins = {}
    for requirement in extras["test"] + extras["dev"]:
        name, sep, version = requirement.partition("==")
        if sep:
            pins[name.strip()] = version.strip()
    return pins


def test_the_hooks_run_the_four_checks() -> None:
    assert [h["id"] for h in _hooks()] == ["ruff", "ruff-format", "mypy", "lint-imports"]


def test_every_hook_runs_a_pinned_version() -> None:
    pins = _dev_pins()
    for hook in _hooks():
        tool = TOOLS[hook["id"]]
        if hook["language"] == "system":  # runs from the development environment
            assert tool in pins, f"{hook['id']}: pin {tool} with == in pyproject.toml"
        else:  # its own environment: pinned there, at the version the developer runs
            assert hook["additional_dependencies"] == [f"{tool}=={pins[tool]}"], hook
