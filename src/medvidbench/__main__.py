"""``python -m medvidbench``: the same CLI as the ``medvidbench`` command."""

from medvidbench.cli.main import main

main()
