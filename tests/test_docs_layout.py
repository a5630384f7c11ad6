"""docs/architecture.md's package layout names every module of src/medvidbench, and only those."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "src" / "medvidbench"
# A line that names entries: names ending in .py or / (comma-separated), then a description.
NAMES = re.compile(r"^((?:\w+(?:\.py|/))(?:, \w+(?:\.py|/))*)(?:\s{2,}.*)?$")
DEEPEST_NAME = 12  # names sit at most this far in; descriptions continue further right


def documented(text: str) -> tuple[set[str], dict[str, bool]]:
    """The modules of the layout block in ``text``, and its folders (True: entries are listed
    under it; False: described as a whole), as paths relative to the package."""
    block = text.split("## Package layout", 1)[1].split("```", 2)[1]
    lines = [line for line in block.splitlines()[1:] if line.strip()]
    assert lines[0] == "src/medvidbench/", "the layout starts at src/medvidbench/"
    parents: list[str] = []  # the folder (its path) at each depth
    files: set[str] = set()
    folders: dict[str, bool] = {"": True}
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        match = NAMES.match(line.strip())
        if indent > DEEPEST_NAME or not match:
            continue  # a description's continuation
        depth = indent // 2 - 1
        assert indent % 2 == 0 and 0 <= depth <= len(parents), f"misplaced: {line!r}"
        del parents[depth:]
        folders[parents[-1] if parents else ""] = True
        for name in match.group(1).split(", "):
            path = "/".join([*parents[-1:], name.rstrip("/")])
            if name.endswith("/"):
                folders.setdefault(path, False)
            else:
                files.add(path)
        if match.group(1).endswith("/"):
            parents.append(path)
    return files, folders


def problems(files: set[str], folders: dict[str, bool], actual: set[str]) -> list[str]:
    """What the layout gets wrong about ``actual`` (module paths relative to the package)."""
    whole = [f for f, listed in folders.items() if not listed]
    found = [f"documented but missing: {m}" for m in sorted(files - actual)]
    found += [
        f"documented but missing: {f}/"
        for f in sorted(folders)
        if f and not any(m.startswith(f + "/") for m in actual) and not (PACKAGE / f).is_dir()
    ]
    for module in sorted(actual - files):
        folder = module.rpartition("/")[0]
        if module.endswith("__init__.py") and folder in folders:
            continue  # a package's __init__.py is covered by its folder's line
        parts = module.split("/")
        if parts[0] == "benchmarks" and len(parts) > 2 and f"benchmarks/{parts[1]}" not in folders:
            continue  # a benchmark plug-in the layout does not describe: benchmarks/'s own line
            # says what each sub-package is (adding a benchmark adds no line here)
        if not any(module.startswith(f + "/") for f in whole):
            found.append(f"not documented: {module}")
    return found


def test_the_layout_names_every_module_and_only_existing_ones() -> None:
    files, folders = documented((ROOT / "docs" / "architecture.md").read_text())
    actual = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert len(files) > 100
    assert problems(files, folders, actual) == []


def test_a_new_benchmark_folder_needs_no_line_but_a_described_one_must_be_right() -> None:
    text = (
        "## Package layout\n\n```\nsrc/medvidbench/\n  benchmarks/\n    __init__.py  registry\n"
        "    known/\n      a.py   described\n```\n"
    )
    files, folders = documented(text)
    actual = {"benchmarks/__init__.py", "benchmarks/known/a.py", "benchmarks/known/b.py"}
    actual |= {"benchmarks/newcomer/__init__.py", "benchmarks/newcomer/scoring.py"}
    assert problems(files, folders, actual) == ["not documented: benchmarks/known/b.py"]


def test_the_check_reports_a_missing_and_an_undocumented_module() -> None:
    text = (
        "## Package layout\n\n```\nsrc/medvidbench/\n  cli/\n    app.py   the app\n"
        "    gone.py, main.py\n                         a description that goes on\n"
        "  server/\n    web/\n      templates/   described as a whole\n```\n"
    )
    files, folders = documented(text)
    assert files == {"cli/app.py", "cli/gone.py", "cli/main.py"}
    assert folders == {
        "": True,
        "cli": True,
        "server": True,
        "server/web": True,
        "server/web/templates": False,
    }
    actual = {
        "cli/app.py",
        "cli/main.py",
        "cli/new.py",
        "cli/__init__.py",
        "x/__init__.py",
        "server/web/templates/t.py",
    }
    assert problems(files, folders, actual) == [
        "documented but missing: cli/gone.py",
        "not documented: cli/new.py",
        "not documented: x/__init__.py",
    ]
