"""Install a test-only benchmark the way pip would: a ``*.dist-info`` folder whose
``entry_points.txt`` publishes it in the ``medvidbench.benchmarks`` group."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def install_tallybench(site: Path) -> Path:
    """Write the distribution metadata into ``site`` (a folder to put on ``sys.path``)."""
    info = site / "tallybench_plugin-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tallybench-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[medvidbench.benchmarks]\ntallybench = tests.plugins.tallybench:BENCHMARK\n",
        encoding="utf-8",
    )
    return site
