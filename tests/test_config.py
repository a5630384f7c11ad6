"""Settings: every one documented, validated, and read from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from medvidbench.config import Settings, load_settings
from medvidbench.errors import UsageError

DOC = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()


def test_every_setting_is_documented_and_described() -> None:
    for name, field in Settings.model_fields.items():
        assert f"`MEDVIDBENCH_{name.upper()}`" in DOC, name
        assert field.description, name


def test_environment_and_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEDVIDBENCH_JUDGE_CONCURRENCY", "7")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    settings = load_settings(judge_cache_path=tmp_path / "c.sqlite3", judge_model=None)
    assert settings.judge_concurrency == 7
    assert settings.judge_base_url == "http://127.0.0.1:1/v1"
    assert settings.judge_cache_path == tmp_path / "c.sqlite3"
    assert settings.judge_model == "gpt-4.1"


def test_invalid_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDVIDBENCH_JUDGE_CONCURRENCY", "0")
    with pytest.raises(ValidationError):
        Settings()
    with pytest.raises(UsageError, match="MEDVIDBENCH_JUDGE_CONCURRENCY: Input should be greater"):
        load_settings()


def test_short_secret_keys_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDVIDBENCH_SECRET_KEY", "too-short")
    with pytest.raises(UsageError, match="at least 32 characters"):
        load_settings()


def test_production_app_needs_a_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from medvidbench.web.asgi import app

    monkeypatch.delenv("MEDVIDBENCH_SECRET_KEY", raising=False)
    monkeypatch.setenv("MEDVIDBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(UsageError, match="MEDVIDBENCH_SECRET_KEY"):
        app()
