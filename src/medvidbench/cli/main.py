"""The ``medvidbench`` command line: thin adapters over the library and the services.

This module assembles the command line: it imports each command module and adds its commands
and command groups to the app of :mod:`medvidbench.cli.app` (no module registers itself by being
imported). Each command parses its options, calls one library or service function and renders
the result. User mistakes end with a one-line message and a non-zero exit code, never a
traceback.
"""

from __future__ import annotations

from medvidbench.cli import bridges, offline, operations, rewards, server
from medvidbench.cli.app import app

__all__ = ["app", "main"]

# Top-level commands, in the order --help lists them.
app.command()(offline.synth)
app.command()(offline.validate)
app.command()(offline.evaluate)
app.command("import")(bridges.import_)
app.command("export-task")(bridges.export_task)
app.command()(server.worker)
app.command()(server.rescore)
app.command()(server.export)
app.command()(server.serve)
app.command("submit")(server.submit)
app.command()(operations.backup)
app.command()(operations.restore)
# Command groups.
app.add_typer(server.db_app, name="db")
app.add_typer(server.users_app, name="users")
app.add_typer(server.tokens_app, name="tokens")
app.add_typer(server.bench_app, name="benchmarks")
app.add_typer(rewards.rewards_app, name="rewards")


def main() -> None:
    """Entry point of the ``medvidbench`` command."""
    app()
