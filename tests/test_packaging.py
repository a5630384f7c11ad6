"""The wheel a user installs: licence text, type marker, links and dependency ranges.

Built from this checkout with pip (hatchling in an isolated build environment, from PyPI), the
way ``pip install .`` builds it.
"""

from __future__ import annotations

import email.parser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("medvidbench-*.whl")
    return zipfile.ZipFile(built)


def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode("utf-8"))


def test_the_wheel_carries_the_licence_it_declares(wheel: zipfile.ZipFile) -> None:
    meta = metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    (licence,) = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = wheel.read(licence).decode("utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text == (ROOT / "LICENSE").read_text(encoding="utf-8")


def test_the_wheel_is_marked_typed(wheel: zipfile.ZipFile) -> None:
    assert "medvidbench/py.typed" in wheel.namelist()


def test_the_wheel_links_the_benchmark_and_its_official_code(wheel: zipfile.ZipFile) -> None:
    urls = dict(value.split(", ", 1) for value in metadata(wheel).get_all("Project-URL") or [])
    assert urls["MedVidBench paper"].startswith("https://arxiv.org/")
    assert urls["Official inference code"] == "https://github.com/UII-AI/MedGRPO-Code"
    assert all(url.startswith("https://") for url in urls.values())


def test_current_click_releases_are_allowed(wheel: zipfile.ZipFile) -> None:
    """The command line is built on click (no upper bound, so it installs beside any tool); no
    Typer, whose releases from 0.29 import pydantic for every command (0.2 s per run)."""
    requires = metadata(wheel).get_all("Requires-Dist") or []
    names = [r.split(";")[0].split(">")[0].split("<")[0].split("=")[0].strip() for r in requires]
    (click,) = [r for r, name in zip(requires, names, strict=True) if name == "click"]
    assert "<" not in click, f"click is capped: {click}"
    assert "typer" not in names
