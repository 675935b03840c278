"""The registry of pinned public files: which files rmlib reads, where each comes from, its hash.

The registry is data, not code: ``rmlib/resources/data_files.yaml`` lists the
FAccT 2025 paper's release (EloEverything tables, AFINN-111, the BNC list, the
per-token scores of its ten reward models and its Gemma logits, its published
tables and figures), the Hu & Liu opinion lexicon and the transcribed Figure 2A
matrix; ``rmlib/resources/followup.yaml`` lists the follow-up study's release.
:data:`REGISTRY` is built from the two files once, when this module is first
imported, and nothing adds to it afterwards. Finding, downloading and checking
a file is :mod:`rmlib.tables.downloads`' job; reading one is the job of the
readers (:mod:`rmlib.tables.paper_release`, :mod:`rmlib.tables.lexicons`,
:mod:`rmlib.tables.word_frequencies`, :mod:`rmlib.tables.followup`).

Entry names: ``elo_<prompt key>``, ``afinn_111``, ``bnc_1_1_all_alpha``,
``bing_positive``, ``bing_negative``; ``rm_scores:<org>--<name>`` and
``base_logits:google--<name>`` (pinned by git blob id,
``sha1(b"blob <len>\\0" + data)``, because their SHA-256 was never recorded);
``paper_table_<key>``, ``paper_figure_<key>``; ``fig2a_tau_transcribed``
(project material, no upstream URL, never downloaded); ``followup:<name>``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import urllib.parse

from .. import resources

__all__ = [
    "DataFile", "FOLLOWUP_GROUPS", "LOGPROBS_RECORD", "PAPER_BASE_LOGIT_BLOBS", "PAPER_COMMIT", "PAPER_REPO", "PAPER_RM_SCORE_BLOBS",
    "PUBLISHED_FIGURES", "PUBLISHED_TABLES", "REGISTRY", "base_logits_key", "entry", "followup_key",
    "followup_manifest", "paper_hub_id", "rm_scores_key",
]


@dataclasses.dataclass(frozen=True)
class DataFile:
    """One registered public file.

    ``path`` is relative to ``RMLIB_DATA_DIR`` (and to the download cache).
    ``sha256`` is the hash of the file at ``path``; None = not known (then
    ``git_blob`` pins it, or the file is used unverified). ``url`` is the
    pinned upstream location ("" for project material); when ``member`` is
    set, ``url`` is a zip archive holding the file as ``member`` (the
    archive's own hash is ``url_sha256``, None if unknown).
    """

    name: str
    path: str
    sha256: str | None
    url: str
    member: str | None = None
    url_sha256: str | None = None
    description: str = ""
    #: git blob id (``sha1(b"blob <len>\0" + data)``) pinning a file whose
    #: SHA-256 is not known (the paper's per-token files); checked like ``sha256``.
    git_blob: str | None = None
    #: what the file is, for :func:`rmlib.tables.downloads.paper_data_status` ("" for the lexicons and lists).
    group: str = ""


def _load_yaml(name: str) -> dict:
    import yaml

    with open(resources.path(name), encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _raw_url(repository: str, commit: str, upstream: str) -> str:
    """The raw.githubusercontent.com URL of ``upstream`` (a path) in ``repository`` at ``commit``."""
    return f"https://raw.githubusercontent.com/{repository}/{commit}/{urllib.parse.quote(upstream)}"


@functools.lru_cache(maxsize=1)
def _data_files() -> dict:
    return _load_yaml("data_files.yaml")


@functools.lru_cache(maxsize=1)
def _followup_manifest() -> dict:
    return _load_yaml("followup.yaml")


def followup_manifest() -> dict:
    """``rmlib/resources/followup.yaml`` as a dict (``repository``, ``commit``, ``folder``, ``files``,
    ``training_runs``, ``logprobs``: the optional log-probability dataset); a fresh copy each call (read once)."""
    return copy.deepcopy(_followup_manifest())


def followup_key(name: str) -> str:
    """Registry name of a follow-up file (``"prompts"`` -> ``"followup:prompts"``)."""
    return name if name.startswith("followup:") else f"followup:{name}"


def _listed_entries() -> list[DataFile]:
    """The entries of ``data_files.yaml``, in its order."""
    listing = _data_files()
    sources = listing["sources"]
    out = []
    for f in listing["files"]:
        if "source" in f:
            src = sources[f["source"]]
            url = _raw_url(src["repository"], src["commit"], f["upstream"])
        else:
            url = f.get("url", "")
        out.append(DataFile(f["name"], f["path"], f.get("sha256"), url, member=f.get("member"),
                            url_sha256=f.get("url_sha256"), description=f.get("description", ""),
                            git_blob=f.get("git_blob"), group=f.get("group", "")))
    return out


def _followup_entries() -> list[DataFile]:
    """The entries of ``followup.yaml``, named ``followup:<name>``, under its ``folder``."""
    man = _followup_manifest()
    out = []
    for f in man["files"]:
        what = f"{f['model']}: " if f.get("model") else ""
        out.append(DataFile(followup_key(f["name"]), f"{man['folder']}/{f['path']}", f.get("sha256"),
                            _raw_url(man["repository"], man["commit"], f["path"]), git_blob=f["git_blob"],
                            group=f["group"], description=f"{what}{f['path']} of the follow-up study's release"))
    return out


#: Every pinned file by name: ``data_files.yaml``'s entries, then ``followup.yaml``'s.
REGISTRY: dict[str, DataFile] = {e.name: e for e in _listed_entries() + _followup_entries()}

#: The paper's repository and the commit every one of its files is pinned at.
PAPER_REPO: str = _data_files()["sources"]["paper"]["repository"]
PAPER_COMMIT: str = _data_files()["sources"]["paper"]["commit"]

#: Hub id -> git blob id of the paper's per-token score file of that reward model (``data_files.yaml`` order).
PAPER_RM_SCORE_BLOBS: dict[str, str] = {f["model"]: f["git_blob"] for f in _data_files()["files"]
                                        if f.get("group") == "token_scores"}
#: Hub id -> git blob id of the paper's next-token logit file of that Gemma model (upstream
#: ``config/gemma_base_models.yaml`` order).
PAPER_BASE_LOGIT_BLOBS: dict[str, str] = {f["model"]: f["git_blob"] for f in _data_files()["files"]
                                          if f.get("group") == "base_logits"}
#: The keys of the published tables (``"1"``, ``"2a"``, ..., ``"A.9"``): entries ``paper_table_<key>``.
PUBLISHED_TABLES: tuple[str, ...] = tuple(n.removeprefix("paper_table_") for n in REGISTRY
                                          if n.startswith("paper_table_"))
#: The keys of the published figures (``"1"``, ``"2A"``, ..., ``"A.7"``): entries ``paper_figure_<key>``.
PUBLISHED_FIGURES: tuple[str, ...] = tuple(n.removeprefix("paper_figure_") for n in REGISTRY
                                           if n.startswith("paper_figure_"))
#: Where, under the user cache, the log-probability dataset's commit and files' SHA-256 are recorded at their
#: first download (:mod:`rmlib.tables.logprobs`; the files themselves stay in the hub cache).
LOGPROBS_RECORD = "followup/logprobs-record.json"
#: The follow-up's file groups, in the order ``rmlib paper-data`` lists them.
FOLLOWUP_GROUPS = ("followup_config", "followup_corpora", "followup_scores", "followup_training")


def entry(name: str) -> DataFile:
    """The registry entry ``name``; a ``KeyError`` listing the registered names when there is none."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown data file {name!r}; registered: {sorted(REGISTRY)}") from None


def paper_hub_id(model: str, known, what: str) -> str:
    """The hub id of ``model`` (a hub id or a paper nickname) among ``known`` (hub ids with a released
    file); a ``KeyError`` naming them when it has none."""
    if model in known:
        return model
    from .. import registry

    found = registry.lookup(model)
    if found is not None and found["hub_id"] in known:
        return found["hub_id"]
    raise KeyError(f"no released per-token file for {what} {model!r}; the paper released: {list(known)}")


def rm_scores_key(model: str) -> str:
    """Registry name of a reward model's per-token score file (hub id or paper nickname)."""
    return "rm_scores:" + paper_hub_id(model, PAPER_RM_SCORE_BLOBS, "reward model").replace("/", "--")


def base_logits_key(model: str) -> str:
    """Registry name of a Gemma model's next-token logit file (hub id, e.g. ``google/gemma-2b``)."""
    return "base_logits:" + paper_hub_id(model, PAPER_BASE_LOGIT_BLOBS, "base model").replace("/", "--")
