"""The command line's kept copy of a test set: read back only while the file and the code are as
they were, checked on every read, never in the way of a refusal."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing as mp
import os
import shutil
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medvidbench import benchmarks
from medvidbench.cli.main import app
from medvidbench.core import testset_cache, testsets
from medvidbench.core.errors import InvalidGroundTruthError, UsageError
from tests.conftest import gt_record, small_records


class Counting:
    """A benchmark whose reader counts the files it reads."""

    def __init__(self, slug: str = "medvidbench") -> None:
        self.bench = benchmarks.get(slug)
        self.slug, self.version, self.testset = (
            self.bench.slug,
            self.bench.version,
            self.bench.testset,
        )
        self.reads = 0

    def load_ground_truth(self, source: Any, max_bytes: int | None = None) -> Any:
        self.reads += 1
        return self.bench.load_ground_truth(source, max_bytes)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder; files written a moment ago get copies (the racy-time rule has
    a test of its own)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(folder))
    monkeypatch.delenv(testset_cache.SWITCH, raising=False)
    monkeypatch.setattr(testset_cache, "RACY_NS", 0)
    return folder / "testsets"


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records))
    return path


def test_the_second_run_reads_the_copy_and_gets_the_same_test_set(
    cache: Path, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    gt = tmp_path / "gt.json"
    shutil.copy(synthetic["ground_truth"], gt)
    bench = Counting()
    first = testset_cache.load(bench, gt, 10**9)
    second = testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 1
    assert second == first == bench.bench.load_ground_truth(gt)
    assert second.sha256 == first.sha256 and len(second) == 600
    assert [p.name for p in cache.iterdir()] and all(
        (p.stat().st_mode & 0o777) == 0o600 for p in cache.iterdir()
    )


def test_warnings_come_back_with_the_copy(cache: Path, tmp_path: Path) -> None:
    twins = [*small_records(), gt_record()]  # the first record again: indistinguishable
    gt = _write(tmp_path / "gt.json", twins)
    bench = Counting()
    first = testset_cache.load(bench, gt, 10**9)
    second = testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 1
    assert first.warnings.items and second.warnings == first.warnings


def test_an_edited_file_is_read_again_even_with_its_size_and_time_put_back(
    cache: Path, tmp_path: Path
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    before = testset_cache.load(bench, gt, 10**9)
    st = gt.stat()
    text = gt.read_text().replace("1.0-2.0 seconds.", "3.0-4.0 seconds.")
    gt.write_text(text)
    os.utime(gt, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same modification time
    assert gt.stat().st_size == st.st_size and gt.stat().st_mtime_ns == st.st_mtime_ns
    after = testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 2
    assert before.samples[0].answer == "1.0-2.0 seconds."
    assert after.samples[0].answer == "3.0-4.0 seconds."


def test_a_corrupt_or_foreign_copy_is_not_used(cache: Path, tmp_path: Path) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    truth = testset_cache.load(bench, gt, 10**9)
    (entry,) = cache.iterdir()
    body = bytearray(entry.read_bytes())
    at = body.index(b"1.0-2.0 seconds.")
    body[at : at + 3] = b"9.9"  # a changed answer: the copy's own digest no longer holds
    entry.write_bytes(bytes(body))
    assert testset_cache.load(bench, gt, 10**9) == truth
    assert bench.reads == 2
    entry.write_bytes(b"not msgpack at all")
    assert testset_cache.load(bench, gt, 10**9) == truth
    assert bench.reads == 3


def test_a_change_of_code_rebuilds_the_copy(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    testset_cache.load(bench, gt, 10**9)
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 1
    monkeypatch.setattr(testset_cache, "_code_stamp", {"medvidbench": "medvidbench:edited"})
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 2


def test_the_size_limit_and_a_bad_file_are_refused_as_without_a_copy(
    cache: Path, tmp_path: Path
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    testset_cache.load(bench, gt, 10**9)
    with pytest.raises(UsageError, match="larger than the limit of 100 bytes"):
        testset_cache.load(bench, gt, 100)
    bad = _write(tmp_path / "bad.json", [gt_record(qa_type="nonsense")])
    for _ in range(2):
        with pytest.raises(InvalidGroundTruthError, match="unknown qa_type"):
            testset_cache.load(bench, bad, 10**9)
    assert len(list(cache.iterdir())) == 1  # the refused file left no copy


def test_no_copy_when_switched_off_or_the_folder_cannot_be_made(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    monkeypatch.setenv(testset_cache.SWITCH, "0")
    testset_cache.load(bench, gt, 10**9)
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 2 and not cache.exists()
    monkeypatch.delenv(testset_cache.SWITCH)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("MEDVIDBENCH_CACHE_DIR", str(blocked))
    assert testset_cache.load(bench, gt, 10**9) == bench.bench.load_ground_truth(gt)


def test_a_benchmark_that_does_not_declare_its_class_is_read_every_time(
    cache: Path, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    bench = Counting("mcqa-demo")
    declared = bench.testset
    assert isinstance(declared, testsets.TestSetFunctions)
    bench.testset = dataclasses.replace(declared, kept_as=None)  # a reader without it
    example = bench.bench.demo
    assert example is not None
    files = example.synthesise(tmp_path / "mcqa", 50, 1)
    testset_cache.load(bench, files["ground_truth"], 10**9)
    testset_cache.load(bench, files["ground_truth"], 10**9)
    assert bench.reads == 2 and not cache.exists()


def test_evaluate_twice_scores_the_same_and_keeps_one_copy(
    cache: Path, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    gt = tmp_path / "gt.json"
    shutil.copy(synthetic["ground_truth"], gt)
    reports = []
    for n in range(2):
        out = tmp_path / f"report{n}.json"
        result = CliRunner().invoke(
            app,
            ["evaluate", str(synthetic["strong"]), "--ground-truth", str(gt), "--out", str(out)],
        )
        assert result.exit_code == 0, result.output
        report = json.loads(out.read_text())
        reports.append((report["metrics"], report["per_task"], report["ground_truth"]))
    assert reports[0] == reports[1]
    assert len(list(cache.iterdir())) == 1


def test_a_file_just_changed_gets_no_copy(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system with coarse times, a rewrite within the same tick keeps every stamp:
    a file changed less than RACY_NS ago is read, never kept."""
    monkeypatch.setattr(testset_cache, "RACY_NS", 3_600 * 10**9)
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    testset_cache.load(bench, gt, 10**9)
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 2 and not list(cache.iterdir())


def test_the_name_the_file_is_read_under_is_part_of_the_copy(cache: Path, tmp_path: Path) -> None:
    """The reader reads a ``.jsonl`` name as JSON Lines: one record file read through a link
    named ``.json`` is refused, as without the cache, after a copy was made under ``.jsonl``."""
    lines = tmp_path / "one.jsonl"
    lines.write_text(json.dumps(gt_record()) + "\n")
    other = tmp_path / "one.json"
    other.symlink_to(lines.name)
    bench = Counting()
    assert len(testset_cache.load(bench, lines, 10**9)) == 1
    with pytest.raises(InvalidGroundTruthError) as fresh:
        bench.bench.load_ground_truth(other)
    with pytest.raises(InvalidGroundTruthError) as cached:
        testset_cache.load(bench, other, 10**9)
    assert str(cached.value) == str(fresh.value)
    assert len(testset_cache.load(bench, lines, 10**9)) == 1 and bench.reads == 2


def test_code_that_cannot_be_listed_gets_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader in a zipped package cannot be stamped (no copy); a namespace package is
    stamped over every folder, a plug-in of one module by its file."""
    archive = tmp_path / "zplug.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zplug/__init__.py", "")
    zipped = types.ModuleType("zplug")
    zipped.__path__ = [str(archive / "zplug")]
    spread = types.ModuleType("spread")
    one, two = tmp_path / "a" / "spread", tmp_path / "b" / "spread"
    for folder in (one, two):
        folder.mkdir(parents=True)
        (folder / "reader.py").write_text("x = 1\n")
    spread.__path__ = [str(one), str(two)]
    single = types.ModuleType("single")
    single.__file__ = str(tmp_path / "single.py")
    Path(single.__file__).write_text("y = 1\n")
    for module in (zipped, spread, single):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    assert testset_cache._stamp_code("zplug") is None
    before = testset_cache._stamp_code("spread")
    (two / "reader.py").write_text("x = 22\n")
    assert before is not None and testset_cache._stamp_code("spread") not in (None, before)
    stamped = testset_cache._stamp_code("single")
    Path(single.__file__).write_text("y = 22\n")
    assert stamped is not None and testset_cache._stamp_code("single") not in (None, stamped)


def test_a_folder_others_can_write_and_a_planted_link_are_not_used(
    cache: Path, tmp_path: Path
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    testset_cache.load(bench, gt, 10**9)
    (entry,) = cache.iterdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    entry.unlink()
    entry.symlink_to(victim)  # a link planted where the copy goes
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 2 and victim.read_text() == "precious"
    assert not entry.is_symlink()  # replaced by a copy of its own
    cache.chmod(0o777)  # writable by anyone: a copy there could be anyone's
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 3
    cache.chmod(0o700)
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 3
    (entry,) = cache.iterdir()
    entry.chmod(0o666)  # a copy anyone could have written is not read (and is replaced)
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 4
    cache.parent.chmod(0o770)  # a cache folder shared with one's own group holds a private one
    testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 4


def test_only_the_copies_written_last_are_kept(cache: Path, tmp_path: Path) -> None:
    bench = Counting()
    for n in range(testset_cache.KEEP + 3):
        testset_cache.load(bench, _write(tmp_path / f"gt{n}.json", small_records()), 10**9)
    assert len(list(cache.glob("*.msgpack"))) == testset_cache.KEEP
    last = tmp_path / f"gt{testset_cache.KEEP + 2}.json"
    testset_cache.load(bench, last, 10**9)
    assert bench.reads == testset_cache.KEEP + 3  # the newest one is still kept


@pytest.mark.parametrize(
    "slug",
    [s for s in benchmarks.discovered() if getattr(benchmarks.get(s).testset, "kept_as", None)],
)
def test_every_benchmark_that_declares_its_class_reads_back_what_it_read(
    cache: Path, tmp_path: Path, slug: str
) -> None:
    bench = Counting(slug)
    example = bench.bench.demo
    assert example is not None
    gt = example.synthesise(tmp_path / slug, 300, 3)["ground_truth"]
    first = testset_cache.load(bench, gt, 10**9)
    second = testset_cache.load(bench, gt, 10**9)
    assert bench.reads == 1 and second == first == bench.bench.load_ground_truth(gt)
    assert type(second) is getattr(bench.testset, "kept_as")()  # noqa: B009


def test_a_file_whose_name_is_not_utf8_is_kept_too(cache: Path, tmp_path: Path) -> None:
    gt = Path(os.fsdecode(os.fsencode(tmp_path) + b"/gt-\xff.json"))
    _write(gt, small_records())
    bench = Counting()
    first = testset_cache.load(bench, gt, 10**9)
    assert testset_cache.load(bench, gt, 10**9) == first and bench.reads == 1


def _load_in_a_process(path: str) -> tuple[str, int]:
    loaded = testset_cache.load(benchmarks.get("medvidbench"), Path(path), 10**9)
    return loaded.sha256, len(loaded)


def test_processes_racing_on_one_file_all_get_it_and_leave_one_whole_copy(
    cache: Path, tmp_path: Path, synthetic: dict[str, Path]
) -> None:
    gt = tmp_path / "gt.json"
    shutil.copy(synthetic["ground_truth"], gt)
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=mp.get_context("fork")) as pool:
        got = set(pool.map(_load_in_a_process, [str(gt)] * 8))
    fresh = benchmarks.get("medvidbench").load_ground_truth(gt)
    assert got == {(fresh.sha256, len(fresh))}
    assert [p.suffix for p in cache.iterdir()] == [".msgpack"]  # no temporary file left
    bench = Counting()
    assert testset_cache.load(bench, gt, 10**9) == fresh and bench.reads == 0


def test_what_a_run_killed_halfway_leaves_is_never_read_and_is_cleared(
    cache: Path, tmp_path: Path
) -> None:
    gt = _write(tmp_path / "gt.json", small_records())
    bench = Counting()
    truth = testset_cache.load(bench, gt, 10**9)
    (entry,) = cache.iterdir()
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2])  # cut off mid-write
    leftover = cache / f"{entry.name}.abc123.tmp"
    leftover.write_bytes(whole[:100])
    os.utime(leftover, (1, 1))  # left long ago
    assert testset_cache.load(bench, gt, 10**9) == truth and bench.reads == 2
    assert not leftover.exists() and entry.read_bytes() != whole[: len(whole) // 2]
