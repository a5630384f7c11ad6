"""Small hostile files for ``medvidbench import`` and a hostile folder for ``export-task``
(#32 items 8 and 9): a workbook's declared size is not believed, rows and unpacked bytes are
capped, standard input is read no further than the limit, and export-task writes neither
over files it did not write nor through a symbolic link."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from medvidbench.benchmarks.medvidbench.importers import IMPORTERS
from medvidbench.core import formats, tables
from medvidbench.core.errors import InvalidSubmissionError, UsageError
from tests.toolkit_outputs import vlmevalkit_xlsx

SHEET = "xl/worksheets/sheet1.xml"


def _rewrite(workbook: bytes, sheet: bytes) -> bytes:
    """The workbook with its first sheet's XML replaced."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(workbook)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for name in src.namelist():
            dst.writestr(name, sheet if name == SHEET else src.read(name))
    return out.getvalue()


@pytest.fixture
def small(tmp_path: Path) -> bytes:
    return vlmevalkit_xlsx(["index", "prediction"], [[0, "0.0-5.0 seconds."]], tmp_path / "s.xlsx")


def _sheet(workbook: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(workbook)) as archive:
        return archive.read(SHEET)


def _import(data: bytes) -> list[dict[str, object]]:
    return IMPORTERS["vlmevalkit"].to_submission(
        data, filename="m_MedVidBench.xlsx", questions=None
    )


def test_a_declared_size_of_a_whole_sheet_is_not_believed(small: bytes) -> None:
    """A 5 KB workbook declaring A1:XFD1048576: openpyxl would pad every row to 16,384 cells
    for a million rows (hours)."""
    sheet = re.sub(rb'<dimension ref="[^"]*"/>', b'<dimension ref="A1:XFD1048576"/>', _sheet(small))
    hostile = _rewrite(small, sheet)
    began = time.process_time()  # CPU time: what matters is the work (hours if believed)
    assert _import(hostile) == [{"index": 0, "prediction": "0.0-5.0 seconds."}]
    assert time.process_time() - began < 5


def test_a_row_far_below_or_a_cell_far_right_is_bounded(small: bytes) -> None:
    far = b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>'
    hostile = _rewrite(small, _sheet(small).replace(b"</sheetData>", far + b"</sheetData>"))
    began = time.process_time()  # CPU time: a loaded machine stretches only the wall time
    with pytest.raises(InvalidSubmissionError, match="more than 1,000,000 rows"):
        _import(hostile)
    assert time.process_time() - began < 10


def test_many_small_rows_are_refused_against_the_test_file(small: bytes) -> None:
    """600,000 rows (a 232 KB workbook inflating to 70 MB of XML): with the test file given,
    a table may hold twice its questions plus a margin, no more; read as they come."""
    rows = b"".join(
        b'<row r="%d"><c r="A%d"><v>%d</v></c></row>' % (n, n, n) for n in range(2, 600_002)
    )
    hostile = _rewrite(small, _sheet(small).replace(b"</sheetData>", rows + b"</sheetData>"))
    assert len(hostile) < 5_000_000  # a few MB that unpack to ~20 MB of rows
    questions = [{"metadata": {}, "qa_type": "tal", "conversations": []}] * 10
    with pytest.raises(InvalidSubmissionError, match="more than 1,020 rows"):
        IMPORTERS["vlmevalkit"].to_submission(hostile, filename="m.xlsx", questions=questions)


def test_a_workbook_that_unpacks_too_far_is_refused(
    small: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tables, "XLSX_UNPACKED", 64 << 10)
    padding = b"<!--" + b" " * (1 << 20) + b"-->"
    hostile = _rewrite(small, _sheet(small).replace(b"<sheetData>", padding + b"<sheetData>"))
    with pytest.raises(InvalidSubmissionError, match="unpacks to more than"):
        _import(hostile)


def test_a_header_wider_than_a_table_is_refused(tmp_path: Path) -> None:
    header = ["index", "prediction", *(f"c{i}" for i in range(300))]
    wide = vlmevalkit_xlsx(header, [[0, "x"]], tmp_path / "w.xlsx")
    with pytest.raises(InvalidSubmissionError, match="more than 256 columns"):
        _import(wide)


class _Pipe:
    """Standard input of unknown size that counts what was read from it."""

    def __init__(self, size: int) -> None:
        self.left, self.read_bytes = size, 0

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        self.read_bytes += n
        return b"x" * n


def test_standard_input_is_read_no_further_than_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = _Pipe(10_000)
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": pipe})())
    with pytest.raises(UsageError, match="larger than the limit of 1,000 bytes"):
        formats.read_stdin(1_000)
    assert pipe.read_bytes == 1_001


def _export(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "medvidbench", "export-task", "lmms-eval", str(folder), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_export_task_replaces_only_its_own_files(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "utils.py").write_text("# the researcher's own utils.py")
    refused = _export(folder)
    assert refused.returncode == 2 and "was not written by export-task" in refused.stderr
    assert (folder / "utils.py").read_text() == "# the researcher's own utils.py"
    forced = _export(folder, "--force")
    assert forced.returncode == 0, forced.stderr
    again = _export(folder)  # its own files, unchanged: replaced without --force
    assert again.returncode == 0, again.stderr
    (folder / "medvidbench.yaml").write_text("edited by hand")
    edited = _export(folder)
    assert edited.returncode == 2 and "changed" in edited.stderr
    assert (folder / "medvidbench.yaml").read_text() == "edited by hand"


def test_export_task_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    folder, outside = tmp_path / "task", tmp_path / "outside.py"
    folder.mkdir()
    outside.write_text("# not the task's")
    (folder / "utils.py").symlink_to(outside)
    for extra in ((), ("--force",)):
        refused = _export(folder, *extra)
        assert refused.returncode == 2 and "symbolic link" in refused.stderr
        assert outside.read_text() == "# not the task's"
    assert not (folder / "medvidbench.yaml").exists()  # refused before anything was written
