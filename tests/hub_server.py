"""A local stand-in for the Hugging Face hub: model repositories served over HTTP on 127.0.0.1.

``huggingface_hub`` (and through it ``transformers``) speaks plain HTTP to whatever ``HF_ENDPOINT``
names. This server answers the calls the installed client makes for ``hf_hub_download``,
``snapshot_download`` and ``from_pretrained``, in the hub's format:

* ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}``: the repository at a revision
  (``sha``: the commit; ``siblings``: its files), which ``resolve_revision`` and ``snapshot_download`` read;
* ``GET /api/models/{repo}/tree/{rev}[/{folder}]``: the files of a commit (``list_repo_tree``);
* ``HEAD`` / ``GET /{repo}/resolve/{rev}/{file}``: a file, with ``X-Repo-Commit`` (the commit the
  revision names), ``ETag`` (git's blob id, or the SHA-256 of a weights file as the hub gives for LFS
  files), ``Content-Length`` and ranges (a resumed download);
* a missing repository, revision or file: 404 with the hub's ``X-Error-Code``
  (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``).

Dataset repositories (``Hub.add(..., repo_type="dataset")``) answer the same calls under ``/api/datasets/`` and
``/datasets/{repo}/resolve/...``, as the hub does.

A repository holds commits (each a dict of file name to bytes) and refs (branch name to commit), so a
test can move a branch. ``cut[(repo, file)] = n`` sends only the first ``n`` bytes of that file's body
and closes the connection (an interrupted download); ``corrupt.add((repo, file))`` sends its next body with
its last byte changed (a download damaged on the way, of the announced size). Every request is recorded in ``requested``;
any other path is answered 404 and recorded in ``unknown``.

Run as a script to serve local model folders as hub repositories until interrupted (then, e.g.,
``HF_ENDPOINT=URL make chapter CH=01 PARAMS='-p models ["org/name"]'`` loads ``org/name`` through it):
``python tests/hub_server.py org/name=FOLDER [org/other=FOLDER ...] [--port PORT]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import re
import pathlib
import sys
import urllib.parse

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from tests.local_http import Handler, serving  # noqa: E402

SHA256_FILES = (".safetensors", ".bin", ".pt", ".gguf", ".csv")  # LFS files (a dataset's large CSVs too)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def etag(name: str, data: bytes) -> str:
    """The hub's ETag of a file: the SHA-256 for an LFS-stored (weights) file, else git's blob id."""
    return hashlib.sha256(data).hexdigest() if name.endswith(SHA256_FILES) else git_blob_id(data)


@dataclasses.dataclass
class Repo:
    repo_id: str
    commits: dict = dataclasses.field(default_factory=dict)  # commit id -> {file name: bytes}
    refs: dict = dataclasses.field(default_factory=dict)  # branch or tag -> commit id

    def commit(self, files: dict, branch: str = "main", sha: str | None = None) -> str:
        """Add a commit holding ``files`` and point ``branch`` at it; return its id (40 hex digits)."""
        if sha is None:
            h = hashlib.sha1(self.repo_id.encode() + str(len(self.commits)).encode())
            for name in sorted(files):
                h.update(name.encode() + b"\0" + hashlib.sha1(files[name]).digest())
            sha = h.hexdigest()
        assert re.fullmatch(r"[0-9a-f]{40}", sha), sha
        self.commits[sha] = dict(files)
        self.refs[branch] = sha
        return sha

    def resolve(self, rev: str) -> str | None:
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


class Hub:
    """The repositories served, what was asked for, and the faults to inject."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requested: list[tuple[str, str]] = []
        self.unknown: list[tuple[str, str]] = []
        self.cut: dict[tuple[str, str], int] = {}
        self.corrupt: set[tuple[str, str]] = set()  # files whose next body comes with one byte changed
        self.ranges: list[tuple[str, str]] = []  # (path, Range header) of each request that asked for a range

    def add(self, repo_id: str, files: dict, branch: str = "main", sha: str | None = None,
            repo_type: str = "model") -> str:
        """Commit ``files`` to a model (or, ``repo_type="dataset"``, a dataset) repository; return the commit.
        A dataset repository is kept in :attr:`repos` under ``"datasets/" + repo_id``."""
        key = repo_id if repo_type == "model" else f"{repo_type}s/{repo_id}"
        repo = self.repos.setdefault(key, Repo(repo_id))
        return repo.commit(files, branch, sha)

    def downloads(self, name: str) -> list[str]:
        """The GET requests of a file's body (``/{repo}/resolve/{rev}/{name}``)."""
        return [p for m, p in self.requested if m == "GET" and "/resolve/" in p and p.endswith("/" + name)]

    @contextlib.contextmanager
    def serve(self, port: int = 0):
        """Serve on 127.0.0.1 (``port`` 0: a free one); yield the endpoint for ``HF_ENDPOINT``."""
        handler = type("HubHandler", (_HubHandler,), {"hub": self, "requested": self.requested})
        with serving(handler, port) as (url, _):
            yield url


_WHEN = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc).isoformat().replace("+00:00", ".000Z")


class _HubHandler(Handler):
    hub: Hub

    def do_HEAD(self):
        self.note()
        self._route(body=False)

    def do_GET(self):
        self.note()
        self._route(body=True)

    # -- routing ------------------------------------------------------------------------------------
    def _route(self, body: bool) -> None:
        split = urllib.parse.urlsplit(self.path)
        parts = split.path.strip("/").split("/")
        query = urllib.parse.parse_qs(split.query)
        unq = urllib.parse.unquote
        kind = ""  # a model repository's key prefix in hub.repos; a dataset's is "datasets/"
        if parts[:2] == ["api", "datasets"]:
            kind, parts = "datasets/", ["api", "models", *parts[2:]]
        elif parts[0] == "datasets":
            kind, parts = "datasets/", parts[1:]
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            repo_id, rest = f"{kind}{unq(parts[2])}/{unq(parts[3])}", parts[4:]
            if not rest:
                return self._info(repo_id, "main", body)
            if rest[0] == "revision" and len(rest) == 2:
                return self._info(repo_id, unq(rest[1]), body)
            if rest[0] == "tree" and len(rest) >= 2:
                return self._tree(repo_id, unq(rest[1]), unq("/".join(rest[2:])), "recursive" in query and
                                  query["recursive"][0].lower() == "true", body)
        elif len(parts) >= 5 and parts[2] == "resolve":
            return self._file(f"{kind}{unq(parts[0])}/{unq(parts[1])}", unq(parts[3]), unq("/".join(parts[4:])), body)
        self.hub.unknown.append((self.command, self.path))
        self._error(404, "NotFound", "no such endpoint on this local hub", body)

    def _commit(self, repo_id: str, rev: str, body: bool):
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", f"Repository {repo_id} not found", body)
            return None, None
        sha = repo.resolve(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", body)
            return None, None
        return repo, sha

    # -- answers ------------------------------------------------------------------------------------
    def _info(self, repo_id: str, rev: str, body: bool) -> None:
        repo, sha = self._commit(repo_id, rev, body)
        if repo is None:
            return
        files = repo.commits[sha]
        name = repo.repo_id
        info = {"_id": hashlib.md5(repo_id.encode()).hexdigest()[:24], "id": name, "modelId": name,
                "author": name.split("/")[0], "sha": sha, "lastModified": _WHEN, "createdAt": _WHEN,
                "private": False, "disabled": False, "gated": False, "downloads": 0, "likes": 0, "tags": [],
                "library_name": "transformers", "siblings": [{"rfilename": n} for n in sorted(files)]}
        self._json(info, body)

    def _tree(self, repo_id: str, rev: str, folder: str, recursive: bool, body: bool) -> None:
        repo, sha = self._commit(repo_id, rev, body)
        if repo is None:
            return
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        entries, folders = [], set()
        for name, data in sorted(repo.commits[sha].items()):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/")[0])
                continue
            entry = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": name}
            if name.endswith(SHA256_FILES):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(entry)
        if prefix and not entries and not folders:
            return self._error(404, "EntryNotFound", f"{folder} does not exist on {rev}", body, sha)
        entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": f} for f in sorted(folders)]
        self._json(entries, body)

    def _file(self, repo_id: str, rev: str, name: str, body: bool) -> None:
        repo, sha = self._commit(repo_id, rev, body)
        if repo is None:
            return
        data = repo.commits[sha].get(name)
        if data is None:
            return self._error(404, "EntryNotFound", f"{name} does not exist on {rev}", body, sha)
        start, status = 0, 200
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if self.headers.get("Range"):
            self.hub.ranges.append((self.path, self.headers["Range"]))
        if ranged and int(ranged.group(1)) < len(data):
            start, status = int(ranged.group(1)), 206
        end = int(ranged.group(2)) + 1 if ranged and ranged.group(2) else len(data)
        chunk = data[start:end]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(chunk)))
        self.send_header("X-Repo-Commit", sha)
        self.send_header("ETag", f'"{etag(name, data)}"')
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if not body:
            return
        if (repo_id, name) in self.hub.corrupt:  # the headers (size, ETag) of the true file, a damaged body
            self.hub.corrupt.discard((repo_id, name))
            chunk = chunk[:-1] + bytes([chunk[-1] ^ 1]) if chunk else chunk
        cut = self.hub.cut.pop((repo_id, name), None)
        if cut is not None:  # an interrupted download: part of the body, then the connection closes
            self.wfile.write(chunk[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(chunk)

    def _json(self, obj, body: bool) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _error(self, status: int, code: str, message: str, body: bool, sha: str | None = None) -> None:
        data = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if sha:
            self.send_header("X-Repo-Commit", sha)
        self.end_headers()
        if body:
            self.wfile.write(data)


if __name__ == "__main__":
    import threading

    args, port = sys.argv[1:], 0
    if "--port" in args:
        i = args.index("--port")
        port, args = int(args[i + 1]), args[:i] + args[i + 2:]
    hub = Hub()
    for arg in args:
        repo_id, _, folder = arg.partition("=")
        root = pathlib.Path(folder)
        files = {f.relative_to(root).as_posix(): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}
        print(f"{repo_id}: {len(files)} files at commit {hub.add(repo_id, files)}", flush=True)
    with hub.serve(port) as url:
        print(f"serving at {url} (HF_ENDPOINT={url})", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
