"""Text files a user hands to rmlib (a prompt file, a CSV of preferences, the paper's CSVs), read one way.

A file is read whole, up to a stated size (a larger file, or an endless one such
as ``/dev/zero``, is refused before it fills memory), as UTF-8. What a text
editor on Windows adds is text, not data: a leading byte-order mark is dropped,
and a file whose first line ends with CRLF has its CRLF line ends read as
``"\\n"`` (a lone ``"\\r"`` inside a line is kept: the paper's CSVs hold a token
that decodes to it). Every error is one line naming the file, the problem and
the fix.
"""

from __future__ import annotations

import os
import pathlib

from ..errors import InputError

__all__ = ["MIB", "read_text", "describe_size"]

MIB = 1 << 20


def describe_size(n_bytes: int) -> str:
    """``n_bytes`` for a message: ``"1 MiB"``, ``"512 MiB"``."""
    return f"{n_bytes // MIB} MiB" if n_bytes >= MIB else f"{n_bytes} bytes"


def read_text(path, what: str, *, limit: int) -> str:
    """The text of ``path``: at most ``limit`` bytes, UTF-8, a byte-order mark dropped, CRLF read as LF.

    ``what`` names the input in errors (``"--prompt-file notes.txt"``,
    ``"data.csv"``). Raises :class:`InputError` when the file cannot be read,
    is larger than ``limit`` or is not UTF-8 (naming the byte, the line and
    the likely encoding).
    """
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as f:
            if path.is_file() and os.fstat(f.fileno()).st_size > limit:
                data = b"x" * (limit + 1)  # refused below without reading it
            else:
                data = f.read(limit + 1)  # a device or pipe: never more than the limit
    except OSError as err:
        raise InputError(f"{what}: cannot read it ({err.strerror or err})") from None
    if len(data) > limit:
        raise InputError(f"{what}: larger than {describe_size(limit)}, the most rmlib reads from one file; "
                         "give a smaller file")
    halves = (data[0::2], data[1::2])  # UTF-16 without a mark: every other byte zero, the others not
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) >= 4 and any(
            not a.strip(b"\x00") and b"\x00" not in b for a, b in (halves, halves[::-1]))):
        how = (f"it starts with the byte-order mark {data[:2]!r}" if data.startswith((b"\xff\xfe", b"\xfe\xff"))
               else "a zero byte beside every character")
        raise InputError(f"{what}: UTF-16 text ({how}), not UTF-8; save it with the UTF-8 encoding")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise InputError(f"{what}: not UTF-8 text (byte {err.start}, line {line}: {data[err.start:err.start + 1]!r}; "
                         "perhaps Latin-1 or Windows-1252); save it with the UTF-8 encoding") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    first = text.find("\n")
    if first > 0 and text[first - 1] == "\r":
        text = text.replace("\r\n", "\n")
    return text
