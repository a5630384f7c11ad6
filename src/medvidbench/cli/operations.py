"""Operating a server: backing it up and restoring it (``medvidbench backup``, ``restore``).

Thin adapters over :mod:`medvidbench.server.services.backups`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from medvidbench.cli.app import DataDir, friendly, runtime
from medvidbench.cli.params import Argument, Option


@friendly
def backup(
    dest: Annotated[
        str,
        Argument(
            help="Archive to write (.tar.gz); or a folder (existing, or any path ending in /, "
            "created if missing) to hold a new archive named by the time."
        ),
    ],
    data_dir: DataDir = None,
) -> None:
    """Back up the server's database and stored files into one archive, while it runs; the
    server is only read (its database is never migrated by a backup)."""
    from medvidbench.server.services.backups import backup as write_backup

    done = write_backup(runtime(data_dir, migrate=False), dest)
    print(f"backed up the {done.database} database and {done.files} files to {done.path}")


@friendly
def restore(
    source: Annotated[Path, Argument(help="Archive written by 'medvidbench backup'.")],
    force: Annotated[
        bool,
        Option("--force", help="Replace the database and files of a server that has data."),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Restore a backup into a stopped server with no data (checked against its manifest first);
    start the server afterwards (it migrates an older backup forward)."""
    from medvidbench.server.services.restores import restore as read_backup

    done = read_backup(runtime(data_dir, migrate=False), source, force=force)
    print(f"restored the {done.database} database and {done.files} files from {done.path}")
    if done.skipped:
        shown = ", ".join(done.skipped[:5]) + (" ..." if len(done.skipped) > 5 else "")
        print(f"left out {len(done.skipped)} archive members that are not server files: {shown}")
