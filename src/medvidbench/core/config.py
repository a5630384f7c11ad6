"""Settings: one class, environment prefix ``MEDVIDBENCH_``, documented field by field.

Precedence: CLI flag > environment > ``.env`` file > default. Nothing here is created at import
time; call :func:`load_settings` (or construct :class:`Settings`) where it is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from medvidbench.core.errors import UsageError
from medvidbench.core.formats import DEFAULT_MAX_BYTES


def _default_cache() -> Path:
    return Path.home() / ".cache" / "medvidbench" / "judge-cache.sqlite3"


class Settings(BaseSettings):
    """Every configurable value of medvidbench (see docs/configuration.md)."""

    model_config = SettingsConfigDict(
        env_prefix="MEDVIDBENCH_", env_file=".env", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(
        Path("medvidbench-data"),
        description="Folder for the embedded database, the job queue and stored prediction files.",
    )
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db; default: "
        "a SQLite file in the data folder.",
    )
    database_connect_timeout: float = Field(
        10,
        gt=0,
        description="Seconds a new connection to a server database (PostgreSQL) may take "
        "before it fails: a request then answers 503 instead of waiting on a database that "
        "does not answer. Whole seconds, at least 2 (libpq's rule).",
    )
    request_deadline: float = Field(
        15,
        gt=0,
        description="Seconds a page or API read (GET, HEAD) may take before the answer is a "
        "503 with Retry-After: a database that stops answering on connections already open "
        "(a partition, a frozen server) would otherwise hold every page.",
    )
    board_recheck_seconds: float = Field(
        1.0,
        ge=0,
        description="Seconds a web process answers the board page every visitor sees (not "
        "signed in, no filter or sort) from its last read of the board's version before "
        "reading it again: a change made by another process (a submission scored by a "
        "worker, a run hidden through another web process) shows there at most about twice "
        "this long later (one request reads it again while the others are answered the page "
        "held); one made by the process itself at once. 0: read every time.",
    )
    file_store: Literal["auto", "folder", "database"] = Field(
        "auto",
        description="Where uploads, the files kept between a submission's steps and test sets "
        "are stored: folder (the data folder), database (the stored_files table, compressed; "
        "workers on other machines then need no shared folder), or auto: database with "
        "MEDVIDBENCH_DATABASE_URL set to a server database such as PostgreSQL, folder with "
        "the embedded SQLite one.",
    )
    queue_url: str | None = Field(
        None,
        description="Job queue: redis://host:port/db for many workers; default: a SQLite "
        "queue in the data folder, consumed by 'medvidbench serve' itself.",
    )
    benchmarks: str = Field(
        "",
        description="Comma-separated slugs of the benchmarks this server hosts; default: every "
        "installed benchmark plug-in. The first is the default for old URLs and clients unless "
        "MEDVIDBENCH_BENCHMARK names another.",
    )
    quota_per_day: int = Field(
        5,
        ge=0,
        description="Submissions per team (or user without a team) per day and benchmark; "
        "rejected and failed ones do not count; 0 for no limit.",
    )
    quota_per_month: int = Field(
        30,
        ge=0,
        description="Submissions per team (or user) per 30 days and benchmark; 0 for no limit.",
    )
    job_lease_seconds: int = Field(
        120,
        ge=5,
        description="How long a worker owns a submission without renewing its lease; "
        "after that another worker may take the job over.",
    )
    job_requeue_seconds: float = Field(
        30.0,
        gt=0,
        description="How long a queued submission waits for its job before a "
        "worker re-enqueues it (after a queue restart lost it).",
    )
    scoring_cpu_seconds: float = Field(
        120.0,
        ge=0,
        description="CPU seconds one scoring job (a submission, or a re-score) may use before "
        "it is stopped and the submission failed with the reason, instead of a worker busy "
        "for an hour on hostile answers (a valid 6,245-answer file takes a few seconds); "
        "0 for no limit.",
    )
    job_max_attempts: int = Field(
        3,
        ge=1,
        description="Attempts at scoring or judging a submission before it is marked "
        "failed with the reason.",
    )
    secret_key: SecretStr | None = Field(
        None,
        description="Signs session cookies; at least 32 characters. Unset: a random key "
        "is generated into the data folder (fine on one machine; a public "
        "server refuses to start without a configured one).",
    )
    trusted_proxies: str = Field(
        "127.0.0.1",
        description="Comma-separated addresses or networks (CIDR) of the reverse proxies whose "
        "X-Forwarded-For and X-Forwarded-Proto headers are believed (the visitor's address, "
        "https); '*' trusts every peer. From any other address those headers change nothing.",
    )
    signup_enabled: bool = Field(
        True, description="Let visitors create submitter accounts from the sign-up page."
    )
    signup_approval: bool = Field(
        False,
        description="New self sign-ups wait for an admin's approval before they can submit "
        "(the defence against probing hidden labels with many accounts).",
    )
    signup_per_address_per_day: int = Field(
        3,
        ge=0,
        description="Accounts one network address may create by sign-up per 24 hours; "
        "0 for no limit.",
    )
    bootstrap_replicates: int = Field(
        1000,
        ge=0,
        le=100_000,
        description="Cluster-bootstrap replicates computed when a submission is scored, for the "
        "95 % intervals, paired comparisons and rank intervals; 0 for none.",
    )
    bootstrap_seed: int = Field(
        0,
        ge=0,
        description="The bootstrap's seed on a benchmark with public labels (stamped on it); "
        "with hidden labels the server derives a secret one from it and the test set.",
    )
    image_dirs: dict[str, Path] = Field(
        default_factory=dict,
        description="Per benchmark slug, the folder of its test images, as JSON "
        '(\'{"medsg": "/data/MedSG-Bench"}\'): the item browser of a public-label benchmark '
        "draws boxes on the real target image, and an ATTRIBUTION.txt (or .md) in the folder "
        "is shown as the images' attribution list. Unset: boxes on a blank canvas.",
    )
    judge_enabled: bool | None = Field(
        None,
        description="Judge the LLM-judged metrics in the background after scoring. Unset: on "
        "exactly when a judge is configured (an API key or a base URL, e.g. OPENAI_API_KEY); "
        "true without either refuses to start; false keeps judging off.",
    )
    max_submission_bytes: int = Field(
        DEFAULT_MAX_BYTES,
        gt=0,
        description="Largest prediction or ground-truth file read, in bytes.",
    )
    upload_process_bytes: int = Field(
        8 << 20,
        ge=0,
        description="Uploads of this many bytes or more, and every zip archive, are validated "
        "in a child process, so that a large file does not slow other requests or fill the web "
        "process's memory; smaller ones in the web process.",
    )
    refuse_order_only: bool = Field(
        False,
        description="Refuse an upload with predictions matched to their test question by order "
        "alone (several identical questions, no 'index', and no known pipeline order), as "
        "'medvidbench validate --strict' does; default: accept it with a warning per task.",
    )
    judge_model: str = Field(
        "gpt-4.1", description="Model name sent to the OpenAI-compatible judge endpoint."
    )
    judge_base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("MEDVIDBENCH_JUDGE_BASE_URL", "OPENAI_BASE_URL"),
        description="Judge endpoint, e.g. http://127.0.0.1:8000/v1 for vLLM; defaults to the "
        "standard OPENAI_BASE_URL, else OpenAI's own.",
    )
    judge_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("MEDVIDBENCH_JUDGE_API_KEY", "OPENAI_API_KEY"),
        description="API key for the judge endpoint; defaults to the standard OPENAI_API_KEY.",
    )
    judge_temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    judge_seed: int | None = Field(
        0,
        description="Seed sent with every request (endpoints that support it are then more "
        "reproducible); empty (or none) to send none.",
    )
    judge_concurrency: int = Field(
        32,
        ge=1,
        le=512,
        description="Requests in flight at once (32: measured to keep ~31 in flight against a "
        "200 ms endpoint; lower it for an endpoint with a tight rate limit).",
    )
    judge_rpm: int = Field(0, ge=0, description="Requests per minute at most; 0 for no limit.")
    judge_timeout: float = Field(30.0, gt=0, description="Seconds before one request times out.")
    judge_max_attempts: int = Field(
        5,
        ge=1,
        le=20,
        description="Attempts per judgement (rate limits, timeouts, malformed "
        "answers) before it counts as failed.",
    )
    judge_cache_path: Path = Field(
        default_factory=_default_cache,
        description="SQLite file caching every judgement, so re-runs make no repeated calls.",
    )
    judge_price_input_per_mtok: float | None = Field(
        None,
        ge=0,
        description="USD per million input tokens, for the cost estimate (known "
        "prices of common models are used when unset).",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, value: str) -> str:
        import ipaddress

        entries = [e.strip() for e in value.split(",") if e.strip()]
        for entry in entries:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"expected IP addresses or networks (CIDR) separated by commas, or '*'; "
                    f"got {entry!r}"
                ) from None
        return ",".join(entries)

    @field_validator("metrics_allow")
    @classmethod
    def _networks(cls, value: str) -> str:
        import ipaddress

        for net in (a.strip() for a in value.split(",") if a.strip()):
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ValueError(f"{net!r} is not an address or a network (CIDR)") from None
        return value

    @field_validator("queue_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(
                f"{value!r} is not a Redis URL: redis://HOST:PORT/DB (or rediss://, unix://)"
            )
        return value

    @field_validator("judge_seed", mode="before")
    @classmethod
    def _no_seed(cls, value: Any) -> Any:
        # "empty to send none", as documented (an empty string is not an integer)
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None
        return value

    @field_validator("metrics_token", mode="before")
    @classmethod
    def _no_empty_token(cls, value: Any) -> Any:
        # env.example's line uncommented as it is: unset, never a token anyone can send
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("secret_key")
    @classmethod
    def _strong_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("the secret key must have at least 32 characters")
        return value

    judge_price_output_per_mtok: float | None = Field(
        None, ge=0, description="USD per million output tokens, for the cost estimate."
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token a Prometheus scrape of /metrics must send; with neither "
        "this nor metrics_allow set, /metrics answers 404.",
    )
    metrics_allow: str = Field(
        "",
        description="Comma-separated addresses or networks (CIDR) that may scrape /metrics "
        "without the token.",
    )
    embedding_cache_size: int = Field(
        50_000,  # core.embeddings.DEFAULT_CACHE_SIZE (tests/test_embeddings.py checks they agree)
        ge=0,
        description="Texts whose sentence embeddings each process keeps (least recently used "
        "dropped first; 0: none).",
    )
    worker_metrics_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Port on which 'medvidbench worker' serves its own /metrics (job and judge "
        "metrics of its machine), for a worker on a machine with no web process; unset: none. "
        "Needs metrics_token or metrics_allow.",
    )
    worker_metrics_host: str = Field(
        "0.0.0.0",
        description="Address the worker's metrics listener binds (worker_metrics_port).",
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="Log lines of serve and worker: text, or one JSON object a line."
    )


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and ``.env``, with explicit overrides (CLI flags) on top.

    Raises:
        UsageError: naming each invalid setting and why.
    """
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"MEDVIDBENCH_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        raise UsageError(f"invalid setting: {problems}") from None


OPENAI_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class JudgeState:
    """Whether this server judges the LLM-judged metrics, and with what (never the key).

    Attributes:
        enabled: Caption metrics are judged in the background after scoring.
        endpoint: The base URL requests go to (OpenAI's own when none is configured).
        model: The judge model requested.
        reason: One sentence for people: why it is on or off.
    """

    enabled: bool
    endpoint: str
    model: str
    reason: str

    def describe(self) -> str:
        """The line ``serve`` and ``worker`` print at startup (the endpoint without its
        credentials: logs are read by more people than the settings file)."""
        if self.enabled:
            where = without_credentials(self.endpoint)
            return f"judge: on, model {self.model} at {where} ({self.reason})"
        return f"judge: off ({self.reason}); judged metrics stay unjudged"


def judge_configured(settings: Settings) -> bool:
    """Whether a judge endpoint is configured: an API key or a base URL."""
    key = settings.judge_api_key
    return bool(key is not None and key.get_secret_value()) or bool(settings.judge_base_url)


def judge_wanted(settings: Settings) -> bool:
    """Whether judged metrics are to be judged: as switched, else exactly when configured."""
    if settings.judge_enabled is None:
        return judge_configured(settings)
    return settings.judge_enabled


def judge_state(settings: Settings) -> JudgeState:
    """Decide from the settings whether the judge runs; a configured judge is a used judge.

    Raises:
        UsageError: judging is switched on but cannot work (no key and no endpoint, or an
            endpoint that is not an http(s) URL), so that a server fails at startup rather
            than rescheduling judge jobs forever.
    """
    endpoint = settings.judge_base_url or OPENAI_DEFAULT_ENDPOINT
    configured = judge_configured(settings)
    if settings.judge_enabled is False:
        return JudgeState(False, endpoint, settings.judge_model, "MEDVIDBENCH_JUDGE_ENABLED=false")
    if settings.judge_enabled is None and not configured:
        return JudgeState(
            False,
            endpoint,
            settings.judge_model,
            "no judge configured: set OPENAI_API_KEY and/or OPENAI_BASE_URL to judge",
        )
    if not configured:
        raise UsageError(
            "MEDVIDBENCH_JUDGE_ENABLED is true but no judge is configured: set OPENAI_API_KEY "
            "(or MEDVIDBENCH_JUDGE_API_KEY), and OPENAI_BASE_URL for a server other than "
            "OpenAI's (any key works for a local vLLM or Ollama); or set "
            "MEDVIDBENCH_JUDGE_ENABLED=false"
        )
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"the judge base URL {endpoint!r} is not an http:// or https:// address "
            "(OPENAI_BASE_URL or MEDVIDBENCH_JUDGE_BASE_URL), e.g. http://127.0.0.1:8000/v1"
        )
    why = "MEDVIDBENCH_JUDGE_ENABLED=true" if settings.judge_enabled else "a judge is configured"
    return JudgeState(True, endpoint, settings.judge_model, why)


def endpoint_identity(url: str) -> str:
    """An endpoint as it may be shown: host, port and path, without credentials or query.

    Examples:
        >>> endpoint_identity("http://user:pass@10.0.0.5:8000/v1?key=x")
        '10.0.0.5:8000/v1'
    """
    parts = urlsplit(url)
    return f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def without_credentials(url: str) -> str:
    """A URL as it may be logged: no user, password, query or fragment.

    Examples:
        >>> without_credentials("http://user:pass@10.0.0.5:8000/v1?key=x")
        'http://10.0.0.5:8000/v1'
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{endpoint_identity(url)}"


def judge_summary(settings: Settings, show_endpoint: bool = False) -> dict[str, Any]:
    """The judge as the health check reports it: on or off, model (never the key), and why;
    its endpoint (without credentials) only when ``show_endpoint`` (an administrator asks:
    an internal address is nobody else's business). A misconfigured judge is reported, not
    raised: this process may only serve pages while workers judge."""
    try:
        state = judge_state(settings)
    except UsageError as exc:
        return {
            "enabled": True,
            "endpoint": None,
            "model": settings.judge_model,
            "reason": exc.message,
        }
    return {
        "enabled": state.enabled,
        "endpoint": endpoint_identity(state.endpoint) if state.enabled and show_endpoint else None,
        "model": state.model if state.enabled else None,
        "reason": state.reason,
    }
