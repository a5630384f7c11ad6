"""Server administration commands: database, users, tokens, benchmarks, workers, exports.

Thin adapters over the service layer; each builds a :class:`Runtime` from settings (flags on
top of the environment) and calls one service function.
"""

from __future__ import annotations

import errno
import getpass
import json
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from medvidbench.cli.app import BenchmarkSlug, DataDir, err, friendly, runtime
from medvidbench.cli.params import Argument, Group, Option
from medvidbench.core.blas import one_blas_thread
from medvidbench.core.display import count
from medvidbench.core.errors import UsageError

if TYPE_CHECKING:
    from medvidbench.server.runtime import Runtime
    from medvidbench.server.store.models import TestSet

db_app = Group(help="The server's database.", no_args_is_help=True)
users_app = Group(help="User accounts.", no_args_is_help=True)
tokens_app = Group(help="API tokens.", no_args_is_help=True)
bench_app = Group(help="Benchmarks and their test sets.", no_args_is_help=True)


@db_app.subcommand("upgrade")
@friendly
def db_upgrade(data_dir: DataDir = None) -> None:
    """Create or migrate the database schema to the newest version, and say which it did."""
    before, after = runtime(data_dir, migrate=False).upgrade_database()
    if before is None:
        print(f"created the schema at revision {after}")
    elif before != after:
        print(f"upgraded the schema from revision {before} to {after}")
    else:
        print(f"the schema is already at revision {after}")


@db_app.subcommand("move-files-into-database")
@friendly
def db_move_files(data_dir: DataDir = None) -> None:
    """Move stored files (uploads, kept step files, test sets) from the data folder into the
    database, for a server whose files are stored there (MEDVIDBENCH_FILE_STORE)."""
    rt = runtime(data_dir)
    move = getattr(rt.files, "move_folder_into_database", None)
    if move is None:
        raise UsageError(
            "this server keeps its files in the data folder (the embedded database, or "
            "MEDVIDBENCH_FILE_STORE=folder); nothing to move"
        )
    moved = move()
    print(", ".join(f"{kind}: {n:,}" for kind, n in moved.items()) + " moved into the database")


@users_app.subcommand("create")
@friendly
def users_create(
    name: Annotated[str, Argument(help="Username (3-40 letters, digits, . _ -).")],
    admin: Annotated[bool, Option("--admin", help="Give the user the admin role.")] = False,
    role: Annotated[str, Option(help="Role: submitter, maintainer or admin.")] = "submitter",
    team: Annotated[str | None, Option(help="Team (organisation) name.")] = None,
    password_stdin: Annotated[
        bool, Option("--password-stdin", help="Read the password from standard input.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Create a user. The password is asked for (or read from stdin); there is no default."""
    from medvidbench.server.roles import Role
    from medvidbench.server.services.accounts import register

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise UsageError("the passwords differ")
    user = register(runtime(data_dir), name, password, Role.ADMIN if admin else role, team)
    print(f"created user {user.username!r} with role {user.role}")


@tokens_app.subcommand("create")
@friendly
def tokens_create(
    user: Annotated[str, Argument(help="Username.")],
    name: Annotated[str, Option(help="A label for the token.")] = "cli",
    data_dir: DataDir = None,
) -> None:
    """Create an API token for a user and print it (it is shown only this once)."""
    from medvidbench.server.services.accounts import create_token

    secret = create_token(runtime(data_dir), user, name)
    err.print("store this token now; it is not shown again:", highlight=False)
    print(secret)


@bench_app.subcommand("list")
@friendly
def benchmarks_list(
    as_json: Annotated[bool, Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """The installed benchmarks (built-in and plug-ins): what --benchmark accepts."""
    from medvidbench import benchmarks

    rows = []
    for slug in benchmarks.slugs():
        bench = benchmarks.get(slug)
        rows.append(
            {
                "slug": slug,
                "title": bench.title,
                "version": bench.version,
                "tasks": [t.name for t in bench.tasks],
                "profiles": [p.name for p in bench.profiles],
            }
        )
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    for row in rows:
        print(
            f"{row['slug']}  {row['title']} (version {row['version']}): "
            f"{count(len(row['tasks']), 'task')}; profiles {', '.join(row['profiles'])}"
        )


@bench_app.subcommand("load")
@friendly
def benchmarks_load(
    ground_truth: Annotated[Path, Argument(help="Ground-truth file (SFT format).")],
    name: Annotated[str, Option(help="Display name (default: the benchmark's title).")] = "",
    demo: Annotated[bool, Option(help="Label it as demo data.")] = False,
    benchmark: BenchmarkSlug = None,
    data_dir: DataDir = None,
) -> None:
    """Validate a ground-truth file and make it its benchmark's current test set."""
    from medvidbench.server.services.catalogue import load_benchmark

    bench = load_benchmark(
        runtime(data_dir),
        ground_truth,
        name=name,
        demo=demo,
        slug=benchmark,
    )
    print(
        f"{bench.slug} test set {bench.id}: {count(bench.sample_count, 'test question')}, "
        f"sha256 {bench.gt_sha256}"
    )


@bench_app.subcommand("judge-card")
@friendly
def benchmarks_judge_card(
    card: Annotated[
        Path | None,
        Argument(help="A card written by 'medvidbench judge agreement --out CARD.json'."),
    ] = None,
    remove: Annotated[bool, Option(help="Remove the current test set's card.")] = False,
    benchmark: BenchmarkSlug = None,
    data_dir: DataDir = None,
) -> None:
    """Show a judge agreement card on the About page of the current test set's judged metrics
    (checked first: its benchmark, its test set, numbers and names only)."""
    from medvidbench.core.formats import read_bytes
    from medvidbench.server.services import judge_cards

    rt = runtime(data_dir)
    if remove:
        had = judge_cards.remove(rt, benchmark)
        print("judge card removed" if had else "no judge card was stored")
        return
    if card is None:
        raise UsageError("give a card file, or --remove")
    stored = judge_cards.store(rt, read_bytes(card, judge_cards.MAX_BYTES), benchmark)
    judges = ", ".join(j["model"] for j in stored["judges"])
    print(
        f"judge card stored for {stored['benchmark']} ({judges}; {stored['design']['pairs']} pairs)"
    )


@friendly
def worker(
    workers: Annotated[int, Option(min=1, max=64, help="Jobs run at once.")] = 2,
    metrics_port: Annotated[
        int | None,
        Option(
            min=0,
            max=65535,
            help="Serve this machine's job and judge metrics on http://HOST:PORT/metrics "
            "(default: MEDVIDBENCH_WORKER_METRICS_PORT; unset: none). Needs "
            "MEDVIDBENCH_METRICS_TOKEN or MEDVIDBENCH_METRICS_ALLOW.",
        ),
    ] = None,
    metrics_host: Annotated[
        str | None,
        Option(help="Address to listen on (default: MEDVIDBENCH_WORKER_METRICS_HOST)."),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Consume background jobs (scoring, judging) until stopped; run any number of them."""
    from medvidbench.server.metrics import prepare_multiprocess_dir

    one_blas_thread()  # before numpy is first imported (main() did, unless run otherwise)
    prepare_multiprocess_dir()  # before prometheus_client is first imported
    from medvidbench.core.config import judge_state
    from medvidbench.server.jobs import run_worker, wait_for_database
    from medvidbench.server.logs import configure_logging
    from medvidbench.server.services.submission_reads import benchmark_of

    rt = runtime(data_dir, migrate=False)  # 'medvidbench db upgrade' migrates, once
    configure_logging(rt.settings, lambda sid: benchmark_of(rt, sid))
    judge = judge_state(rt.settings)  # misconfigured: stop here
    wait_for_database(rt)  # refuses a database not at this code's migration
    _say(rt, judge.describe(), highlight=False)
    port = rt.settings.worker_metrics_port if metrics_port is None else metrics_port
    listener = None
    if port is not None:
        from medvidbench.server.metrics_listener import MetricsListener

        listener = MetricsListener(rt, metrics_host or rt.settings.worker_metrics_host, port)
        _say(rt, f"metrics on port {listener.port} (/metrics)", highlight=False)
    _warm_up_in_background(rt)
    try:
        run_worker(rt, workers)
    finally:
        if listener is not None:
            listener.close()


@friendly
def rescore(
    profile: Annotated[str, Option(help="Profile to add evaluations under.")] = "strict-v2",
    benchmark: BenchmarkSlug = None,
    data_dir: DataDir = None,
) -> None:
    """Queue a re-scoring of a benchmark's scored submissions (old evaluations are kept)."""
    from medvidbench.server.jobs import attach_queue
    from medvidbench.server.services.evaluations import on_board, queue_rescore

    rt = runtime(data_dir)
    slug = rt.definition(benchmark).slug
    rt.definition(slug).profile(profile)  # unknown names stop here
    attach_queue(rt)
    ids = on_board(rt, slug)
    for sid in ids:
        queue_rescore(rt, sid, profile)
    print(f"queued {count(len(ids), 're-scoring job')} under {profile}")


@friendly
def export(
    board: Annotated[str, Option(help="official or community.")] = "official",
    fmt: Annotated[str, Option("--format", help="csv or json.")] = "csv",
    benchmark: BenchmarkSlug = None,
    data_dir: DataDir = None,
) -> None:
    """Print a ranked board with every metric and its provenance."""
    from medvidbench.server.services.exports import export_board

    sys.stdout.write(export_board(runtime(data_dir), board, fmt, slug=benchmark))


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _say(rt: Runtime, text: str, **style: object) -> None:
    """A startup line of serve or worker: on standard error, or as a JSON log line when the
    logs are JSON (every line of the stream is then one object)."""
    if rt.settings.log_format == "json":
        banner = logging.getLogger("medvidbench.cli")
        banner.setLevel(logging.INFO)  # shown whatever the level of the rest
        banner.info(text)
    else:
        err.print(text, **style)  # type: ignore[arg-type]


def _warm_up_in_background(rt: Runtime, pages: bool = False) -> None:
    """Load models, test set and boards (and compile the page templates) on a thread, so
    that the first submission and the first page view after a start do not wait for them."""
    import threading

    from medvidbench.server.services.warmup import warm_up

    def run() -> None:
        if pages:
            from medvidbench.server.web.render import compile_templates

            compile_templates()
        warm_up(rt)  # boards first, then the scoring models

    threading.Thread(target=run, name="warm-up", daemon=True).start()


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a clear error when the port is taken."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} is in use on {host}; try --port {port + 1} (or stop what uses it)"
            ) from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@friendly
def serve(
    host: Annotated[str, Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, Option(min=1, max=65535, help="Port.")] = 8000,
    data_dir: DataDir = None,
    ground_truth: Annotated[
        Path | None,
        Option(
            "--ground-truth", help="The real test set; without it a synthetic demo set is used."
        ),
    ] = None,
    workers: Annotated[
        int,
        Option(
            min=0,
            max=32,
            help="Job threads in this process; 0 when separate 'medvidbench worker' "
            "processes run the jobs.",
        ),
    ] = 2,
) -> None:
    """Run the whole leaderboard in one process: pages, REST API and the job consumer."""
    import uvicorn

    from medvidbench.server.metrics import prepare_multiprocess_dir

    prepare_multiprocess_dir()  # before prometheus_client is first imported
    from medvidbench.core.config import judge_state
    from medvidbench.server.jobs import attach_queue, start_embedded_consumer
    from medvidbench.server.logs import configure_logging
    from medvidbench.server.services.accounts import has_admin
    from medvidbench.server.services.catalogue import seed_test_sets
    from medvidbench.server.services.submission_reads import benchmark_of
    from medvidbench.server.web.app import create_app

    listener = _listen(host, port)  # before anything is printed or started
    rt = runtime(data_dir)
    judge = judge_state(rt.settings)  # misconfigured: stop here
    # Warnings and errors only (a failed job, with its submission): a worker logs every job.
    configure_logging(rt.settings, lambda sid: benchmark_of(rt, sid), level=logging.WARNING)
    admin_made = has_admin(rt)
    if host not in LOOPBACK:
        _refuse_public_start(rt, admin_made)
    hosted = seed_test_sets(rt, ground_truth)
    attach_queue(rt)
    consumer = start_embedded_consumer(rt, workers) if workers else None
    app_ = create_app(rt)
    _warm_up_in_background(rt, pages=True)
    _banner(rt, f"http://{host}:{port}", hosted, judge.describe(), admin_made)
    try:
        # Behind a reverse proxy named in MEDVIDBENCH_TRUSTED_PROXIES, the app itself reads
        # X-Forwarded-For (the visitor's address: the nearest untrusted hop) and
        # X-Forwarded-Proto (https: the session cookie Secure); uvicorn's own reading is off
        # (under '*' it believes the first entry, which the visitor writes).
        # uvicorn's own lines go through our handler (text or JSON) instead of its own.
        config = uvicorn.Config(app_, log_level="warning", proxy_headers=False, log_config=None)
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        if consumer is not None:
            consumer.stop(graceful=False)


def _refuse_public_start(rt: Runtime, admin_made: bool) -> None:
    """A server reachable from other machines starts only with a strong secret and an admin."""
    key = rt.settings.secret_key
    if key is None or len(key.get_secret_value()) < 32 or not admin_made:
        raise UsageError(
            "a server reachable from other machines needs "
            "MEDVIDBENCH_SECRET_KEY (32+ characters) and an admin account "
            "('medvidbench users create NAME --admin'); refusing to start"
        )


def _banner(rt: Runtime, base: str, hosted: list[TestSet], judge: str, admin_made: bool) -> None:
    """Where the leaderboard answers, each hosted benchmark and its demo files, the judge."""
    where = rt.data_dir
    _say(rt, f"leaderboard on {base}/  (data in {where})", highlight=False)
    for bench in hosted:
        _say(
            rt,
            f"  {bench.name}: {base}/b/{bench.slug}/  ({count(bench.sample_count, 'test question')}"
            f"{', synthetic demo data' if bench.is_demo else ''})",
            highlight=False,
        )
        if bench.is_demo:
            _say(
                rt,
                f"  example prediction files to submit: {where / 'demo' / bench.slug}",
                highlight=False,
                soft_wrap=True,
            )
    _say(rt, judge, highlight=False)
    if not admin_made:
        _say(
            rt,
            "no admin account yet: create one with 'medvidbench users create NAME "
            f"--admin --data-dir {where}'",
            highlight=False,
        )
    venv = os.environ.get("VIRTUAL_ENV")
    _say(
        rt,
        "this terminal now runs the server (Ctrl-C stops it); run other medvidbench commands "
        "(users create, submit) in a second terminal"
        + (f", after '. {venv}/bin/activate'" if venv else ""),
        highlight=False,
        soft_wrap=True,
    )


@friendly
def submit(
    predictions: Annotated[Path, Argument(help="Prediction file (.json or .jsonl).")],
    server: Annotated[
        str,
        Option(envvar="MEDVIDBENCH_SERVER", help="Leaderboard URL, e.g. http://127.0.0.1:8000."),
    ],
    token: Annotated[str, Option(envvar="MEDVIDBENCH_TOKEN", help="API token.")],
    model_name: Annotated[str, Option(help="Model name (unique on the board).")],
    organisation: Annotated[str, Option(help="Organisation.")] = "",
    model_url: Annotated[str, Option(help="Model URL (http or https).")] = "",
    wait: Annotated[bool, Option(help="Wait until scored and print the scores.")] = False,
    timeout: Annotated[float, Option(help="Seconds to wait at most.")] = 600.0,
    benchmark: Annotated[
        str | None,
        Option(
            envvar="MEDVIDBENCH_BENCHMARK",
            help="Benchmark slug on the server (default: the server's default benchmark).",
        ),
    ] = None,
    private: Annotated[
        bool,
        Option(
            "--private",
            help="Score it without publishing: only you see it, and where it would rank.",
        ),
    ] = False,
    as_json: Annotated[
        bool, Option("--json", help="Print the server's JSON result (or error).")
    ] = False,
) -> None:
    """Upload predictions to a leaderboard server (and wait for the scores).

    Exit codes: 0 accepted (with --wait: scored); 6 refused for good (invalid file, taken
    name, no permission); 7 refused for now or not answering (quota used up, server busy or
    unreachable: try again later).
    """
    from medvidbench.cli.client import ServerError, submit_file

    try:
        result = submit_file(
            predictions,
            server,
            token,
            model_name,
            organisation,
            model_url,
            wait,
            timeout,
            benchmark,
            visibility="private" if private else "public",
            as_json=as_json,
        )
    except ServerError as exc:
        if as_json:
            sys.stdout.write(json.dumps(exc.body, indent=2) + "\n")
        raise
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
