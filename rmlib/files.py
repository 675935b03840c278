"""Files written whole or not at all: a reader (another process, a run after a crash) never sees half of one.

Each write goes to a temporary file in the target's folder (same file system, so the final rename is
atomic), is flushed to disk, then replaces the target; on any error the temporary file is removed and
the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[pathlib.Path]:
    """A temporary path beside ``path`` for a writer that takes a file name (Parquet, safetensors):
    when the block ends without error it is synced and replaces ``path``; otherwise it is removed."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    tmp = pathlib.Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes, encoding: str = "utf-8") -> pathlib.Path:
    """Write ``data`` (text in ``encoding``, or bytes) to ``path`` whole or not at all; return the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode(encoding) if isinstance(data, str) else data)
    return pathlib.Path(path)


def write_failure(err: BaseException) -> str | None:
    """Why a write failed, in words, when the cause is the place written to: ``"the disk is full"``,
    ``"it is not writable"`` (an ``OSError`` with that errno, or a library's error whose text carries
    the system's message, as safetensors' does); None for anything else."""
    import errno

    code = getattr(err, "errno", None) if isinstance(err, OSError) else None
    text = str(err)
    if code in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in text or "os error 28" in text \
            or "StorageFull" in text or "Disk quota exceeded" in text:
        return "the disk is full"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "Read-only file system" in text \
            or "os error 30" in text:
        return "it is not writable"
    return None
