"""The ``medvidbench`` command line: thin adapters over the library and the services.

This module assembles the command line: it names each command's function (or command group) in
its command module, and the app imports that module when the command runs or ``--help`` lists
it, so a run imports its own command's module only (no module registers itself by being
imported). Each command parses its options, calls one library or service function and renders
the result. User mistakes end with a one-line message and a non-zero exit code, never a
traceback.
"""

from __future__ import annotations

from medvidbench.cli.app import app

__all__ = ["COMMANDS", "app", "main"]

# Every command, in the order --help lists them: name -> module:function (or :group).
COMMANDS = {
    "synth": "medvidbench.cli.offline:synth",
    "validate": "medvidbench.cli.offline:validate",
    "evaluate": "medvidbench.cli.offline:evaluate",
    "rank": "medvidbench.cli.rank:rank",
    "import": "medvidbench.cli.bridges:import_",
    "export-task": "medvidbench.cli.bridges:export_task",
    "worker": "medvidbench.cli.server:worker",
    "rescore": "medvidbench.cli.server:rescore",
    "export": "medvidbench.cli.server:export",
    "serve": "medvidbench.cli.server:serve",
    "submit": "medvidbench.cli.server:submit",
    "backup": "medvidbench.cli.operations:backup",
    "restore": "medvidbench.cli.operations:restore",
    "db": "medvidbench.cli.server:db_app",
    "users": "medvidbench.cli.server:users_app",
    "tokens": "medvidbench.cli.server:tokens_app",
    "benchmarks": "medvidbench.cli.server:bench_app",
    "rewards": "medvidbench.cli.rewards:rewards_app",
    "judge": "medvidbench.cli.judge:judge_app",
}
for _name, _target in COMMANDS.items():
    app.lazy(_name, _target)


def main() -> None:
    """Entry point of the ``medvidbench`` command: numpy's products on one thread unless the
    environment says otherwise (:mod:`medvidbench.core.blas`), then the command."""
    from medvidbench.core.blas import one_blas_thread

    one_blas_thread()
    app()
