"""``python -m medvidbench``: the same CLI as the ``medvidbench`` command."""

from medvidbench.cli.launch import main

main()
