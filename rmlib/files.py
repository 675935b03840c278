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


def current_umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def _mode_for(path: pathlib.Path) -> int:
    """The permission bits an ordinary write to ``path`` leaves: those of the file it replaces, else
    ``0o666`` less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


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
        os.chmod(tmp, _mode_for(path))  # mkstemp makes 0o600: give the mode open(path, "w") would
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
