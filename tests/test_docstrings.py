"""Every ``Examples:`` block in the package's docstrings runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import medvidbench

# Alembic's migration environment runs only inside Alembic (it reads alembic.context);
# ``__main__`` runs the command line when imported.
SKIPPED = ("medvidbench.server.store.migrations", "medvidbench.__main__")


def test_docstring_examples() -> None:
    failed, attempted = [], 0
    for info in pkgutil.walk_packages(medvidbench.__path__, "medvidbench."):
        if info.name.startswith(SKIPPED):
            continue
        result = doctest.testmod(importlib.import_module(info.name), optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        if result.failed:
            failed.append(f"{info.name}: {result.failed} of {result.attempted}")
    assert attempted > 100, attempted  # a walk that found no example would pass below
    assert failed == [], failed
