"""Where the ``medvidbench`` command starts (its console script and ``python -m medvidbench``),
before any module of the command line is imported.

A command in :data:`RUN_ONCE` reads its files, prints and exits: for it the cyclic garbage
collector is off from here to the exit. What such a run builds holds no reference cycles worth
collecting before the process ends, and the collections the imports and the scoring would
start took about 4 % of a cold ``evaluate`` (docs/performance.md). An ``evaluate`` with a judge
turns it back on (its calls leave cycles); every other command (a server, a worker) keeps it.
"""

from __future__ import annotations

import gc
import sys

RUN_ONCE = frozenset({"evaluate", "validate"})


def main() -> None:
    """Run the command named on the command line (:func:`medvidbench.cli.main.main`)."""
    if sys.argv[1:2] and sys.argv[1] in RUN_ONCE:
        gc.disable()
    from medvidbench.cli.main import main as command_line

    command_line()
