"""Reading a zip upload without trusting it: bounded unpacking, clear refusals.

A zip's headers state each member's size, but a hostile zip can lie, and a small one can unpack
to gigabytes (a zip bomb). So members are read in chunks and reading stops as soon as the
running total passes the limit; the stated sizes only let us refuse earlier. The number of
members is capped before Python builds one object per entry of the central directory. Damaged,
encrypted or oddly compressed members are refused with their name, never raised past us.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import PurePosixPath

ZIP_MAGIC = b"PK\x03\x04"
MAX_MEMBERS = 64  # *.json members read
MAX_ENTRIES = 1_000  # entries of any kind in the archive
_CHUNK = 1 << 20
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_MAX_COMMENT = 0xFFFF
_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
# What a damaged member raises while it is read: a bad CRC, truncated or corrupt data.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, LookupError)


class ArchiveRefused(Exception):
    """The zip cannot be read within the limits; the message says what and where."""


def _declared_entries(data: bytes) -> tuple[int, int] | None:
    """The entry count and central-directory size that the end record states (what
    :mod:`zipfile` will then parse), found as :mod:`zipfile` finds it; None without one."""
    if data[-_EOCD_SIZE:][:4] == _EOCD:
        pos = len(data) - _EOCD_SIZE
    else:
        pos = data.rfind(_EOCD, max(0, len(data) - _EOCD_SIZE - _MAX_COMMENT))
        if pos < 0 or len(data) - pos < _EOCD_SIZE:
            return None
    entries, cd_size = struct.unpack("<HI", data[pos + 10 : pos + 16])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF:
        return _zip64_entries(data, pos)
    return entries, cd_size


def _zip64_entries(data: bytes, eocd: int) -> tuple[int, int]:
    """The counts of a zip64 end record (the end record's own fields are placeholders); a
    zip64 zip without a readable one counts as too many entries."""
    locator = eocd - 20
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        (record,) = struct.unpack("<Q", data[locator + 8 : locator + 16])
        if data[record : record + 4] == b"PK\x06\x06" and len(data) >= record + 48:
            entries, cd_size = struct.unpack("<QQ", data[record + 32 : record + 48])
            return int(entries), int(cd_size)
    return 0xFFFF, 0xFFFFFFFF


def _open(data: bytes, label: str) -> zipfile.ZipFile:
    declared = _declared_entries(data)
    # 46 bytes a central-directory entry at least, and no name needs more than 1 KiB
    if declared is not None and (
        declared[0] > MAX_ENTRIES or declared[1] > MAX_ENTRIES * (46 + 1024)
    ):
        raise ArchiveRefused(
            f"{label}: the zip holds more than {MAX_ENTRIES:,} entries; "
            "upload only the results files"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (*_DAMAGED, RuntimeError, NotImplementedError) as exc:
        raise ArchiveRefused(f"{label}: the zip file cannot be read: {exc}") from None
    if len(archive.infolist()) > MAX_ENTRIES:
        raise ArchiveRefused(f"{label}: the zip holds more than {MAX_ENTRIES:,} entries")
    return archive


def _check_member(info: zipfile.ZipInfo, label: str) -> None:
    where = f"{label}: member {info.filename!r}"
    if info.flag_bits & 0x1:
        raise ArchiveRefused(f"{where} is encrypted; upload an unencrypted zip")
    if info.compress_type not in _METHODS:
        raise ArchiveRefused(
            f"{where} uses compression method {info.compress_type}, which is not supported; "
            f"use one of {', '.join(_METHODS.values())} (a plain zip uses deflate)"
        )


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, label: str, limit: int
) -> bytes:
    """The member's bytes, read in chunks and stopped as soon as they pass ``budget``."""
    chunks: list[bytes] = []
    got = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(min(_CHUNK, budget - got + 1)):
                got += len(chunk)
                if got > budget:
                    raise ArchiveRefused(
                        f"{label}: the zip unpacks to more than the limit of {limit:,} bytes "
                        f"(at member {info.filename!r})"
                    )
                chunks.append(chunk)
    except _DAMAGED as exc:
        raise ArchiveRefused(
            f"{label}: member {info.filename!r} is damaged ({exc}); zip the files again"
        ) from None
    except (RuntimeError, NotImplementedError) as exc:  # encryption or method found late
        raise ArchiveRefused(f"{label}: member {info.filename!r} cannot be read: {exc}") from None
    return b"".join(chunks)


def json_members(data: bytes, max_bytes: int, name: str = "") -> list[tuple[str, bytes]]:
    """The ``*.json`` members of a zip, in name order, as (base name, bytes), their unpacked
    total at most ``max_bytes``.

    Raises:
        ArchiveRefused: the zip is damaged, encrypted, uses an unknown compression method,
            holds too many members, or unpacks past ``max_bytes``.
    """
    label = PurePosixPath(name).name or "the zip"
    archive = _open(data, label)
    infos = sorted(
        (i for i in archive.infolist() if i.filename.endswith(".json") and not i.is_dir()),
        key=lambda i: i.filename,
    )
    if len(infos) > MAX_MEMBERS:
        raise ArchiveRefused(f"{label}: the zip holds more than {MAX_MEMBERS} *.json files")
    if sum(i.file_size for i in infos) > max_bytes:
        raise ArchiveRefused(
            f"{label}: the zip's files say they unpack to "
            f"{sum(i.file_size for i in infos):,} bytes, over the limit of {max_bytes:,}"
        )
    out, total = [], 0
    for info in infos:
        _check_member(info, label)
        body = _read_member(archive, info, max_bytes - total, label, max_bytes)
        total += len(body)
        out.append((PurePosixPath(info.filename).name, body))
    return out
