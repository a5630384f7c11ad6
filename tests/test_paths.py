"""The cache folder without a home directory: the user's own folder in the temporary folder,
never one another user made or can write."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from medvidbench.core import paths


@pytest.fixture
def homeless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    def no_home() -> Path:
        raise RuntimeError("no home directory")

    monkeypatch.delenv("MEDVIDBENCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(paths, "_fallback", None, raising=False)
    return tmp_path / f"medvidbench-{os.getuid()}"


def test_the_users_own_folder_is_made_private_and_used(homeless: Path) -> None:
    assert paths.cache_dir() == homeless / "medvidbench" / "models"
    assert stat.S_IMODE(homeless.stat().st_mode) == 0o700


@pytest.mark.parametrize("planted", ["open to all", "a link"])
def test_a_folder_planted_at_the_name_is_not_used(
    homeless: Path, tmp_path: Path, planted: str
) -> None:
    if planted == "a link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        homeless.symlink_to(elsewhere)
    else:
        homeless.mkdir()
        homeless.chmod(0o777)
    chosen = paths.cache_dir()
    folder = chosen.parent.parent
    assert folder != homeless and homeless not in chosen.parents  # (a private folder's random
    # name may begin with the planted one's: compare folders, not strings)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.getuid()
    assert paths.cache_dir() == chosen  # one folder for the whole process
