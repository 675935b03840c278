"""A local stand-in for the data's upstream hosts: a mirror folder served over HTTP on 127.0.0.1.

``build(source, dest)`` lays out the registered files found in ``source`` (a
folder like ``RMLIB_DATA_DIR``) at their upstream places (``HOST/PATH`` of
each pinned URL, :func:`rmlib.tables.downloads.mirror_path`); the Bing lexicon,
upstream a zip, is zipped from its two text files. ``serve(folder)`` runs
``http.server`` on it in a thread and yields the base URL for
``RMLIB_DATA_MIRROR`` and the list of paths requested.

Run as a script to serve a mirror until interrupted (a fresh clone's
``make book`` with ``RMLIB_DATA_MIRROR`` set downloads from it):
``python tests/data_mirror.py SOURCE_DATA_DIR MIRROR_DIR [PORT]``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import shutil
import sys
import threading
import zipfile

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rmlib.tables import data_files, downloads  # noqa: E402
from tests.local_http import Handler, serving  # noqa: E402


def build(source: pathlib.Path, dest: pathlib.Path) -> list[str]:
    """Copy every registered file ``source`` holds to its mirror place under ``dest``; return the names."""
    laid_out, archives = [], {}
    for entry in data_files.REGISTRY.values():
        src = source / entry.path
        if not entry.url or not src.is_file():
            continue
        target = dest / downloads.mirror_path(entry)
        if entry.member is not None:
            archives.setdefault(target, []).append((entry.member, src))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
        laid_out.append(entry.name)
    for target, members in archives.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w") as zf:
            for member, src in members:
                zf.write(src, member)
    return laid_out


class _Handler(http.server.SimpleHTTPRequestHandler):
    requested: list[str]
    cut: dict[str, list[int]]
    echo = False
    protocol_version = Handler.protocol_version  # one request per connection
    timeout = Handler.timeout

    def log_message(self, format, *args):  # record; print only when serving as a script
        self.requested.append(self.path)
        if self.echo:
            print(format % args, flush=True)

    def copyfile(self, source, outputfile):
        sizes = self.cut.get(self.path)
        if not sizes:
            return super().copyfile(source, outputfile)
        outputfile.write(source.read(sizes.pop(0)))  # the headers promised the whole file: an interrupted body
        self.close_connection = True


@contextlib.contextmanager
def serve(folder: pathlib.Path, port: int = 0, echo: bool = False, cut: dict[str, list[int]] | None = None):
    """Serve ``folder`` on 127.0.0.1 (``port`` 0: any free one); yield (base URL, paths requested).

    ``cut`` maps a request path to byte counts: each GET of that path sends the next count's bytes of the
    body (the headers promising the whole file) and closes the connection, a download interrupted midway."""
    requested: list[str] = []
    attrs = {"requested": requested, "echo": echo, "cut": {} if cut is None else cut}
    handler = functools.partial(type("Handler", (_Handler,), attrs), directory=str(folder))
    with serving(handler, port) as (url, _):
        yield url, requested


if __name__ == "__main__":
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    names = build(src, dst)
    with serve(dst, int(sys.argv[3]) if len(sys.argv) > 3 else 0, echo=True) as (url, _):
        print(f"serving {len(names)} files at {url} (RMLIB_DATA_MIRROR={url})", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
