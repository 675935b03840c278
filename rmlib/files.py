"""Files written whole or not at all: a reader (another process, a run after a crash) never sees half of one;
and the one file lock (:func:`file_lock`) processes that write the same place take turns with.

Each write goes to a temporary file in the target's folder (same file system, so the final rename is
atomic), is flushed to disk, then replaces the target; on any error the temporary file is removed and
the target is left as it was. An output path a user names (:func:`check_output_path`) is checked before
any work, and a file there is replaced only when rmlib wrote it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import tempfile
from collections.abc import Callable, Iterator

from .errors import InputError


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


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, blocking: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (an empty file, created if missing) for the block.

    Yields True once the lock is held (waiting for it when ``blocking``), or False at once when
    ``blocking`` is False and another process holds it (:func:`lock_holder` says which). The lock is
    the kernel's (``flock``): it ends with the block, or with the process, even after ``kill -9``.
    """
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def lock_holder(path: str | os.PathLike) -> str:
    """Which process holds the lock on ``path``: ``"process 123 (python -m rmlib train-rm ...)"``, read
    from ``/proc/locks`` where Linux has it, else ``"another process"``."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return "another process"
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            pid, (_, _, inode) = int(fields[4]), fields[5].split(":")
        except ValueError:
            continue
        if int(inode) == st.st_ino and pid != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = " ".join(f.read().replace(b"\0", b" ").decode(errors="replace").split())
            except OSError:
                cmd = ""
            return f"process {pid}" + (f" ({cmd[:200]})" if cmd else "")
    return "another process"


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


#: The format an output file's name must say (``--out``): its suffix -> the format's name.
OUTPUT_FORMATS = {".parquet": "Parquet", ".json": "JSON"}


def nearest_existing(path: pathlib.Path) -> pathlib.Path:
    """``path`` if it exists, else its nearest existing parent: where a folder made at ``path`` would begin."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_path(out, suffix: str, ours: Callable[[pathlib.Path], bool], kind: str) -> pathlib.Path:
    """``--out``: a file path whose folder exists (or can be made) and is writable, not a folder, whose name
    ends in ``suffix`` (the format written: a table is never Parquet under a ``.csv`` name), and where no
    file stands that rmlib did not write: ``ours(path)`` says whether an existing file is ``kind`` (e.g. "a
    score table") as rmlib writes it; any other file there is the user's and is never replaced."""
    out = pathlib.Path(out)
    if out.is_dir():
        raise InputError(f"--out {out} is a folder: give a file name, e.g. {out / ('scores' + suffix)}")
    if out.suffix.lower() != suffix:
        raise InputError(f"--out {out}: the result is written as {OUTPUT_FORMATS.get(suffix, suffix)}, so the "
                         f"name must end in {suffix}: e.g. --out {out.with_suffix(suffix)}")
    parent = out.parent if str(out.parent) else pathlib.Path(".")
    probe = nearest_existing(parent)
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write in {probe} (not a writable folder); choose another path")
    if out.exists() or out.is_symlink():
        if out.is_symlink() or not out.is_file() or not ours(out):
            raise InputError(f"--out {out} exists and is not {kind} that rmlib wrote, so rmlib leaves it alone: "
                             "choose another name, or move that file away yourself")
        if not os.access(out, os.W_OK):
            raise InputError(f"--out {out} exists and is not writable; choose another path")
    return out


def check_folder_option(folder, option: str) -> pathlib.Path:
    """A folder option (``--cache-dir``): a folder, or a path where one can be created; a file there, or a file
    where a folder above it should be, is an :class:`InputError` saying to give a folder. Checked before any
    work: a file found only when the first result is written would waste the run. (Whether the folder is
    writable is left to the write: a read-only folder of finished tables is still read.)"""
    folder = pathlib.Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{option} {folder} is a file, not a folder: give a folder (it is created if missing)")
    probe = nearest_existing(folder)
    if not probe.is_dir():
        raise InputError(f"{option} {folder} cannot be created: {probe} is a file, not a folder; give a folder "
                         "(it is created if missing)")
    return folder
