"""Settings: every one documented, validated, and read from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from medvidbench.core.config import Settings, load_settings
from medvidbench.core.errors import UsageError

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
    from medvidbench.server.web.asgi import app

    monkeypatch.delenv("MEDVIDBENCH_SECRET_KEY", raising=False)
    monkeypatch.setenv("MEDVIDBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(UsageError, match="MEDVIDBENCH_SECRET_KEY"):
        app()


JUDGE_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEDVIDBENCH_JUDGE_API_KEY",
    "MEDVIDBENCH_JUDGE_BASE_URL",
    "MEDVIDBENCH_JUDGE_ENABLED",
)


@pytest.mark.parametrize(
    ("env", "enabled", "endpoint", "reason"),
    [
        ({}, False, None, "no judge configured"),
        ({"OPENAI_API_KEY": "sk-x"}, True, "https://api.openai.com/v1", "a judge is configured"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, True, "http://127.0.0.1:9/v1", "configured"),
        ({"OPENAI_API_KEY": "sk-x", "MEDVIDBENCH_JUDGE_ENABLED": "false"}, False, None, "=false"),
        (
            {"MEDVIDBENCH_JUDGE_API_KEY": "k", "MEDVIDBENCH_JUDGE_ENABLED": "true"},
            True,
            "https://api.openai.com/v1",
            "=true",
        ),
    ],
)
def test_a_configured_judge_is_used(
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    enabled: bool,
    endpoint: str | None,
    reason: str,
) -> None:
    from medvidbench.core.config import judge_state, judge_wanted

    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    state = judge_state(settings)
    assert (state.enabled, judge_wanted(settings)) == (enabled, enabled)
    assert reason in state.reason
    if endpoint:
        assert state.endpoint == endpoint and endpoint in state.describe()
    assert "sk-x" not in state.describe()


def test_credentials_in_a_judge_url_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The startup line and the health check name the endpoint without its user, password or
    query (#32: the anonymous health check showed http://user:pass@host)."""
    from medvidbench.core.config import judge_state, judge_summary

    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://judge:hunter2@10.20.30.40:8000/v1?token=t0k")
    settings = load_settings()
    line = judge_state(settings).describe()
    assert "http://10.20.30.40:8000/v1" in line
    assert judge_summary(settings)["endpoint"] is None  # anyone
    assert judge_summary(settings, show_endpoint=True)["endpoint"] == "10.20.30.40:8000/v1"
    for shown in (line, str(judge_summary(settings, show_endpoint=True))):
        assert "hunter2" not in shown and "judge:" not in shown.replace("judge: on", "")
        assert "t0k" not in shown


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEDVIDBENCH_JUDGE_ENABLED": "true"}, "no judge is configured"),
        (
            {"MEDVIDBENCH_JUDGE_ENABLED": "true", "OPENAI_BASE_URL": "localhost:8000"},
            "is not an http:// or https:// address",
        ),
    ],
)
def test_a_misconfigured_judge_fails_fast(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    from medvidbench.core.config import judge_state

    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=message):
        judge_state(load_settings())


def test_an_environment_file_is_read_as_systemd_reads_it(tmp_path: Path) -> None:
    """``--env-file``: what a shell's ``.`` would run (spaces, ``$``, ``&``, ``;``) is read as
    text, with systemd's quoting and escapes (a review compared them with systemd's
    env-file.c: ``\\$`` in double quotes, a backslash outside quotes, parts joined, lines
    continued); comments skipped, a bad line named."""
    from medvidbench.core.envfile import read_environment_file

    env = tmp_path / "env"
    env.write_text(
        "# comment\n; another\n\nMEDVIDBENCH_METRICS_ALLOW=10.0.0.0/8, ::1\n"
        'A="x$y&z;w"\nB=\'single "q" $x\'\nC="say \\"hi\\" \\\\ bye \\$HOME"\n'
        '  D = spaced  \nE=\nF=a\\ b\nG="two" tail\nH=one \\\ntwo\n'
        'I="multi\nline"\nK=" v "\nL="keep \\n"\n',
        encoding="utf-8",
    )
    assert read_environment_file(env) == {
        "MEDVIDBENCH_METRICS_ALLOW": "10.0.0.0/8, ::1",
        "A": "x$y&z;w",
        "B": 'single "q" $x',
        "C": 'say "hi" \\ bye $HOME',
        "D": "spaced",
        "E": "",
        "F": "a b",
        "G": "two tail",
        "H": "one two",
        "I": "multi\nline",
        "K": " v ",
        "L": "keep \\n",
    }
    env.write_text("A=1\nnot a setting\n", encoding="utf-8")
    with pytest.raises(UsageError, match="line 2: expected KEY=value"):
        read_environment_file(env)
    env.write_text('A="open\n', encoding="utf-8")
    with pytest.raises(UsageError, match="line 1: a quote is not closed"):
        read_environment_file(env)
    with pytest.raises(UsageError, match="--env-file"):
        read_environment_file(tmp_path / "missing")


def test_an_empty_judge_seed_sends_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """As documented: ``MEDVIDBENCH_JUDGE_SEED=`` (or ``none``) sends no seed; it once stopped
    every process with 'Input should be a valid integer'."""
    for empty in ("", " ", "none", "None"):
        monkeypatch.setenv("MEDVIDBENCH_JUDGE_SEED", empty)
        assert load_settings().judge_seed is None
    monkeypatch.setenv("MEDVIDBENCH_JUDGE_SEED", "7")
    assert load_settings().judge_seed == 7
    monkeypatch.setenv("MEDVIDBENCH_JUDGE_SEED", "seven")
    with pytest.raises(UsageError, match="MEDVIDBENCH_JUDGE_SEED"):
        load_settings()


def test_the_settings_read_only_from_the_environment_are_named() -> None:
    """configuration.md names the variables that are not ``Settings`` fields (and so are not
    read from ``.env``): an operator's walk put MEDVIDBENCH_BENCHMARK in .env to no effect."""
    import re

    documented = set(re.findall(r"\| `(MEDVIDBENCH_[A-Z_]+)`", DOC))
    fields = {f"MEDVIDBENCH_{name.upper()}" for name in Settings.model_fields}
    intro = DOC.split("| variable |", 1)[0]
    for name in documented - fields:
        assert f"`{name}`" in intro, name
