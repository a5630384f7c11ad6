"""Reading benchmark files: size limits, JSON and JSONL decoding with located problems.

A benchmark's loaders give :func:`decode` their record type. Decoding takes a fast path through
msgspec's typed decoder. Only when that fails do we walk the file record by record to collect
*every* problem with its location, so a valid 500k-record file costs one C-level pass and an
invalid one still gets a complete, precise error list.

Nothing here trusts an upload: a benchmark decodes submission records into structs that simply
have no field for uploaded ground truth, so such values never reach a scorer.
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from medvidbench.core.errors import Problem, ProblemList, UsageError

DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: the 531,850-sample training-scale file is ~200 MB


_PRECOMPUTED_KEYS = {"aggregated_results", "evaluated_samples"}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects.

    Bulk-loading half a million records otherwise triggers repeated full collections that
    cost more than the loading itself; nothing built here forms reference cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Decoded(msgspec.Struct):
    """The outcome of decoding a file: the records (possibly none) and what went wrong.

    Attributes:
        records: Typed structs when ``typed`` is true, else plain JSON values to be checked.
        labels: Location labels per record (dict keys or JSONL lines); None for a plain list.
        layout: ``list``, ``dict`` or ``jsonl``.
        problems: Fatal problems; when non-empty the records must not be used.
        sha256: Hex digest of the file's bytes.
        size: The file's size in bytes.
        typed: Whether every record decoded into the typed struct.
    """

    records: list[Any]
    labels: list[str] | None
    layout: str
    problems: ProblemList
    sha256: str
    size: int
    typed: bool = False


def read_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file, refusing one larger than ``max_bytes`` before reading any of it."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise UsageError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    if p.is_dir():
        raise UsageError(f"{str(p)!r} is a directory, expected a JSON or JSONL file")
    if size > max_bytes:
        raise UsageError(
            f"{str(p)!r} is {size:,} bytes, larger than the limit of {max_bytes:,} bytes"
        )
    return p.read_bytes()


def one_source(source: str | Path | bytes | Sequence[str | Path]) -> str | Path | bytes:
    """The one file (or its bytes) a benchmark that reads a single prediction file was given.

    Raises:
        UsageError: several files were given.
    """
    if isinstance(source, str | Path | bytes):
        return source
    if len(source) == 1:
        return source[0]
    raise UsageError(
        f"this benchmark reads one prediction file; {len(source)} were given (combine them)"
    )


def read_stdin(max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Standard input's bytes, refusing more than ``max_bytes`` (read no further than one byte
    past the limit: a pipe has no size to check first)."""
    import sys

    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UsageError(f"standard input is larger than the limit of {max_bytes:,} bytes")
    return data


def _position(data: bytes, message: str) -> str:
    """Turn msgspec's "(byte N)" into a line and column a person can find."""
    m = re.search(r"\(byte (\d+)\)", message)
    if not m:
        return message
    offset = int(m.group(1))
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"{message[: m.start()].rstrip()} at line {line}, column {col}"


def _describe(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def decode(
    data: bytes,
    record: type[Any],
    layout_hint: str = "auto",
    what: str = "file",
    single_record_field: str | None = None,
) -> Decoded:
    """Decode a JSON or JSONL file of records into ``record`` structs (a ``msgspec.Struct``
    class, say): a list of them, an object mapping keys to them, or one per JSONL line.

    Never raises on content: every problem found is returned in ``Decoded.problems``. The
    caller then walks generic records (``records`` are plain dicts when the typed pass failed)
    with its own field checks so that each record's problems are reported. An object that has
    ``single_record_field`` is reported as one record sent alone instead of a list of them.
    """
    typed: Any = list[record] | dict[str, record]  # type: ignore[valid-type]
    try:
        # Checked here, not left to msgspec: it names no place (from 0.23 it calls such bytes a
        # JSON syntax error), and its typed decoder reads a field name holding them as a field
        # it does not know (the record is then said to lack one).
        _check_utf8(data)
        return _decode(data, typed, layout_hint, what, single_record_field)
    except UnicodeDecodeError:
        result = Decoded(
            [], None, "list", ProblemList(), hashlib.sha256(data).hexdigest(), len(data)
        )
        result.problems.add(
            Problem("not-utf8", f"the {what} is not valid UTF-8: {_bad_utf8(data)}")
        )
        return result


_UTF8_STEP = 1 << 20


def _check_utf8(data: bytes) -> None:
    """Raise UnicodeDecodeError unless ``data`` is UTF-8. An ASCII file (most) is known valid
    by a scan that allocates nothing; any other is decoded a megabyte at a time, its text
    dropped, so a large upload never costs a second copy of itself (up to four times its size
    as a str)."""
    if data.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for start in range(0, len(data), _UTF8_STEP):
        decoder.decode(view[start : start + _UTF8_STEP])
    decoder.decode(b"", final=True)


def _bad_utf8(data: bytes) -> str:
    """Where the first byte sequence that is not UTF-8 sits, as a line and column."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
        line = data.count(b"\n", 0, offset) + 1
        col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        return f"byte 0x{data[offset]:02x} at line {line}, column {col} (save the file as UTF-8)"
    return "a string holds bytes that are not UTF-8"


def _decode(
    data: bytes, typed: Any, layout_hint: str, what: str, single_record_field: str | None
) -> Decoded:
    digest = hashlib.sha256(data).hexdigest()
    problems = ProblemList()
    result = Decoded([], None, "list", problems, digest, len(data))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        problems.add(Problem("empty-file", f"the {what} is empty"))
        return result
    if layout_hint == "jsonl":
        return _decode_jsonl(data, typed, result)
    try:
        result.records, result.labels, result.layout = _split(msgspec.json.decode(data, type=typed))
        result.typed = True
        return result
    except msgspec.ValidationError:
        pass  # valid JSON (or JSONL), wrong shape somewhere: fall through to the generic walk
    except msgspec.DecodeError as exc:
        return _not_json(data, typed, result, exc, layout_hint, what)
    except RecursionError:
        problems.add(Problem("too-deep", f"the {what} nests arrays or objects too deeply"))
        return result
    try:
        generic = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        return _not_json(data, typed, result, exc, layout_hint, what)
    except RecursionError:
        problems.add(Problem("too-deep", f"the {what} nests arrays or objects too deeply"))
        return result
    if isinstance(generic, list):
        result.records, result.labels, result.layout = generic, None, "list"
    elif isinstance(generic, dict):
        if _PRECOMPUTED_KEYS & generic.keys():
            problems.add(
                Problem(
                    "precomputed-results",
                    "pre-computed evaluation results are not accepted: upload the model's "
                    "predictions and the scores will be computed here",
                )
            )
        elif single_record_field is not None and single_record_field in generic:
            problems.add(
                Problem(
                    "single-record",
                    'expected a list of records or an object of records keyed "0", "1", ...; '
                    "got a single record",
                )
            )
        else:
            result.labels = [f'"{k}"' for k in generic]
            result.records, result.layout = list(generic.values()), "dict"
    else:
        problems.add(
            Problem(
                "wrong-top-level",
                f'expected a list of records or an object of records keyed "0", "1", ...; '
                f"got {_describe(generic)}",
            )
        )
    return result


def _not_json(
    data: bytes, typed: Any, result: Decoded, exc: Exception, layout_hint: str, what: str
) -> Decoded:
    """Report a JSON syntax error, unless the file is JSON Lines without the .jsonl name."""
    if layout_hint == "auto" and data.lstrip().startswith(b"{") and b"\n" in data.strip():
        retry = Decoded([], None, "jsonl", ProblemList(), result.sha256, result.size)
        jsonl = _decode_jsonl(data, typed, retry)
        if not jsonl.problems.totals.get("not-json"):
            return jsonl
    message = _position(data, str(exc))
    result.problems.add(Problem("not-json", f"the {what} is not valid JSON: {message}"))
    return result


def _split(decoded: list[Any] | dict[str, Any]) -> tuple[list[Any], list[str] | None, str]:
    if isinstance(decoded, dict):
        return list(decoded.values()), [f'"{k}"' for k in decoded], "dict"
    return decoded, None, "list"


def _decode_jsonl(data: bytes, typed: Any, result: Decoded) -> Decoded:
    result.layout = "jsonl"
    item_type = typed.__args__[0].__args__[0]  # list[X] | dict[str, X] -> X
    typed_decoder = msgspec.json.Decoder(item_type)
    records: list[Any] = []
    labels: list[str] = []
    all_typed = True
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        labels.append(f"line {lineno}")
        try:
            records.append(typed_decoder.decode(line))
            continue
        except msgspec.ValidationError:
            pass  # JSON of the wrong shape: keep it generic for the caller's field checks
        except (msgspec.DecodeError, RecursionError):
            pass  # reported just below
        all_typed = False
        try:
            records.append(msgspec.json.decode(line))
        except (msgspec.DecodeError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            result.problems.add(
                Problem(
                    "not-json", f"line {lineno} is not valid JSON: {reason}", record=len(records)
                )
            )
            records.append(None)
    if not all_typed:
        # Turn the lines that did decode into plain values so that the caller walks one kind.
        records = [msgspec.to_builtins(r) if isinstance(r, msgspec.Struct) else r for r in records]
    result.records, result.labels, result.typed = records, labels, all_typed
    return result


def record_label(decoded: Decoded, i: int) -> str:
    """How a person finds record ``i``: ``record 17``, ``record "17"`` or ``line 18``."""
    if decoded.labels is None:
        return f"record {i}"
    label = decoded.labels[i]
    return label if label.startswith("line") else f"record {label}"


_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _expected(kinds: tuple[type, ...]) -> str:
    names = [_KIND_NAMES[k] for k in kinds if not (k is float and int in kinds)]
    if int in kinds and float in kinds:
        names = [n if n != "an integer" else "a number" for n in names]
    return " or ".join(names)


def _matches(value: object, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # JSON true/false is never a number here
        return False
    return isinstance(value, kinds)


def check_fields(
    obj: dict[str, Any],
    where: str,
    required: dict[str, tuple[type, ...]],
    optional: dict[str, tuple[type, ...]] | None = None,
    record: int | None = None,
    sid: str | None = None,
) -> list[Problem]:
    """Check an object's fields against expected JSON kinds; one problem per bad field.

    Examples:
        >>> check_fields({"prediction": None}, "record 17", {"prediction": (str,)})[0].message
        "record 17: expected field 'prediction' to be a string, got null"
    """
    found: list[Problem] = []
    for name, kinds in required.items():
        if name not in obj:
            found.append(Problem("missing-field", f"{where}: missing field {name!r}", record, sid))
        elif not _matches(obj[name], kinds):
            found.append(_wrong(where, name, kinds, obj[name], record, sid))
    for name, kinds in (optional or {}).items():
        if (
            name in obj
            and not (obj[name] is None and type(None) in kinds)
            and not _matches(obj[name], tuple(k for k in kinds if k is not type(None)))
        ):
            found.append(_wrong(where, name, kinds, obj[name], record, sid))
    return found


def _wrong(
    where: str,
    name: str,
    kinds: tuple[type, ...],
    value: object,
    record: int | None,
    sid: str | None,
) -> Problem:
    message = f"{where}: expected field {name!r} to be {_expected(kinds)}, got {_describe(value)}"
    return Problem("wrong-type", message, record, sid)
