"""Public reference data: a registry of pinned files and their loaders.

Every file has a pinned upstream URL (a fixed commit, never a branch head
where one exists) and a hash (SHA-256, or a git blob id where only that is
known). :func:`fetch` looks for a file in this order:

1. ``RMLIB_DATA_DIR``, when set: a folder of copies at the registry's
   relative paths (offline builds, tests, CI). A copy there that fails its
   hash is an error, never a cue to download: the folder is the user's to
   fix, and a silently different file is what the hash exists to catch.
2. The download cache (``RMLIB_CACHE_DIR`` if set, else ``~/.cache/rmlib``:
   :func:`rmlib.paths.cache_dir`), where earlier downloads were kept.
3. A download with :mod:`pooch` from the pinned URL (or from the mirror
   ``RMLIB_DATA_MIRROR`` names, :func:`download_url`) into that cache,
   checked against the pinned hash; unless ``RMLIB_OFFLINE=1``, where a file
   found in neither place is a :class:`DataFileError` naming the file, the
   folders looked in and the fix.

Loaders return plain pandas objects. Nothing here unpickles anything: all
files are text (CSV / TSV / word lists), read with pandas or plain Python.

Files
-----
``elo_one_word_greatest``, ``elo_greatest_ever``, ``elo_humans_most_prefer``
    EloEverything items with human Elo ratings and the scores of the paper's
    10 reward models, one CSV per prompt (Christian et al. 2025, MIT).
    The third prompt's CSV is pinned by its SHA-256 like the others.
``afinn_111``
    AFINN-111 sentiment lexicon (Nielsen 2011, ODbL 1.0).
``bnc_1_1_all_alpha``
    British National Corpus word frequencies, Leech, Rayson & Wilson (2001),
    list 1.1 (alphabetical, all).
``bing_positive``, ``bing_negative``
    Hu & Liu (2004) opinion lexicon (CC BY 4.0). Locally two text files;
    upstream the ``opinion_lexicon.zip`` of nltk_data (pinned commit unknown,
    so the zip's hash is not pinned either; the extracted word lists are
    checked instead, see :func:`bing_lexicon`).

The paper's own data (block at the end of this module)
    ``rm_scores:<org>--<name>`` (10, the RMs' per-token scores for the three
    prompts) and ``base_logits:google--<name>`` (10, Gemma next-token
    logits), pinned by git blob id (``sha1(b"blob <len>\0" + data)``,
    :func:`git_blob_id`) because their SHA-256 was never recorded;
    ``paper_table_<key>`` / ``paper_figure_<key>`` (the published tables and
    figures, SHA-256); ``fig2a_tau_transcribed`` (project material, no
    upstream URL, never downloaded). Readers:
    :func:`paper_token_scores`, :func:`paper_base_logits`,
    :func:`published_table`, :func:`published_figure`,
    :func:`fig2a_tau_transcribed`; what is here: :func:`paper_data_status`,
    :func:`paper_data_note` (``python -m rmlib paper-data``).

The follow-up study's release (block at the end of this module)
    ``followup:<name>`` (36 files: its prompts, word lists, the ten RMs'
    scores of its words, its training summaries), listed as data in
    ``rmlib/resources/followup.yaml`` and pinned by git blob id and, where
    known, SHA-256. Readers: :mod:`rmlib.tables.followup`.

The papers' claims are not data files: rmlib ships them
(:mod:`rmlib.tables.findings`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
import urllib.parse
import zipfile

import numpy as np
import pandas as pd

from ..errors import DataFileError, InputError  # noqa: F401 (DataFileError: raised here, kept importable from this module)
from ..files import atomic_write
from ..paths import DATA_ENV_VAR, MIRROR_ENV_VAR, OFFLINE_ENV_VAR, cache_dir, data_dir, data_mirror, offline
from ..prompts import ELO_PROMPTS  # re-exported: rmlib.tables.datasets.ELO_PROMPTS

ENV_VAR = DATA_ENV_VAR

_PAPER_REPO = "summerfieldlab/Christian_etal_2025_FAccT"
_PAPER_COMMIT = "42dc162d0f88825d67f22f64ecc45648a9a09a48"
_PAPER_RAW = f"https://raw.githubusercontent.com/{_PAPER_REPO}/{_PAPER_COMMIT}/"
_NLTK_OPINION_ZIP = (
    "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/opinion_lexicon.zip"
)



@dataclasses.dataclass(frozen=True)
class DataFile:
    """One registered public file.

    ``path`` is relative to ``RMLIB_DATA_DIR`` (and to the pooch cache).
    ``sha256`` is the hash of the file at ``path``; None = not known (the
    file is used unverified). ``url`` is the pinned upstream location; when
    ``member`` is set, ``url`` is a zip archive holding the file as
    ``member`` (the archive's own hash is ``url_sha256``, None if unknown).
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
    #: what the file is, for :func:`paper_data_status` ("" for the older entries).
    group: str = ""


def _elo_url(key: str) -> str:
    fname = ELO_PROMPTS[key].rstrip("?") + ".csv"
    return _PAPER_RAW + "data/elo/" + urllib.parse.quote(fname)


REGISTRY: dict[str, DataFile] = {
    f.name: f
    for f in [
        DataFile(
            "elo_one_word_greatest",
            "eloeverything/one_word_greatest.csv",
            "b9f91f205ea558e035ed221355da5d2b6c158dcf7bdd234757ab5c9402f63d50",
            _elo_url("one_word_greatest"),
            description=ELO_PROMPTS["one_word_greatest"],
        ),
        DataFile(
            "elo_greatest_ever",
            "eloeverything/greatest_ever.csv",
            "d02c8facd7188a6cc3681042d269fba71677ea788edd14e02d0f86404df9caa4",
            _elo_url("greatest_ever"),
            description=ELO_PROMPTS["greatest_ever"],
        ),
        DataFile(
            "elo_humans_most_prefer",
            "eloeverything/humans_most_prefer.csv",
            "e0054924df7dfad64408c263ba373e5b27ebe78432ae7ba4c0ca5172073c1ed2",
            _elo_url("humans_most_prefer"),
            description=ELO_PROMPTS["humans_most_prefer"],
        ),
        DataFile(
            "afinn_111",
            "corpora/AFINN-111.txt",
            "4703e14ed5ce7cb73591037cf21a202c0bdf8bdac06392808a1d5606ecf77a06",
            _PAPER_RAW + "data/corpora/AFINN-111.txt",
            description="AFINN-111 sentiment lexicon (Nielsen 2011)",
        ),
        DataFile(
            "bnc_1_1_all_alpha",
            "corpora/1_1_all_alpha.txt",
            "f62360d5d6dfff121c24340e41092cc8d1d64b6d07c17d28d482020d5ac6b85b",
            _PAPER_RAW + "data/corpora/1_1_all_alpha.txt",
            description="BNC word frequencies, Leech, Rayson & Wilson (2001), list 1.1",
        ),
        DataFile(
            "bing_positive",
            "opinion_lexicon/positive-words.txt",
            "999c259b5740250b06292522fc68478d7710dab33a2e56cf9a6d7fc0a5f3f537",
            _NLTK_OPINION_ZIP,
            member="opinion_lexicon/positive-words.txt",
            description="Hu & Liu (2004) opinion lexicon, positive words",
        ),
        DataFile(
            "bing_negative",
            "opinion_lexicon/negative-words.txt",
            "7a0af33a2374d03e699b682651f6aabee1b9ac0d781dea717b920de5c169a0de",
            _NLTK_OPINION_ZIP,
            member="opinion_lexicon/negative-words.txt",
            description="Hu & Liu (2004) opinion lexicon, negative words",
        ),
    ]
}


def sha256sum(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry(name: str) -> DataFile:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown data file {name!r}; registered: {sorted(REGISTRY)}") from None


def _remedies(entry: DataFile, *, online: bool) -> str:
    """The fix for a file found nowhere: a copy in the data folder, or a download."""
    root = data_dir()
    put = (f"put the file at {root / entry.path}" if root is not None
           else f"set {ENV_VAR} to a folder that holds {entry.path!r}")
    if online:
        return (f"Fix: check the network (or {MIRROR_ENV_VAR}) and run again, or {put} "
                f"(upstream: {entry.url}).")
    return (f"Fix: {put} (upstream: {entry.url}), or unset {OFFLINE_ENV_VAR} on a machine with a network "
            "so that rmlib downloads and checks it.")


def _looked_in(entry: DataFile) -> str:
    root = data_dir()
    where = [f"{ENV_VAR} ({root / entry.path})" if root is not None else f"{ENV_VAR} (not set)",
             f"the download cache ({_cache_path(entry)})"]
    return " and ".join(where)


def _verify(entry: DataFile, path: pathlib.Path) -> pathlib.Path:
    if entry.git_blob is not None:
        _verify_git_blob(entry, path)
    if entry.sha256 is None:
        return path
    got = sha256sum(path)
    if got != entry.sha256:
        raise DataFileError(
            f"SHA-256 mismatch for {entry.name} at {path}: expected {entry.sha256}, "
            f"got {got}. The file is corrupt or a different version; replace it with "
            f"the pinned upstream file {entry.url}"
        )
    return path


def _extract_member(entry: DataFile, archive: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Extract ``entry.member`` of a zip to ``dest`` (no pickles, plain bytes)."""
    with zipfile.ZipFile(archive) as zf:
        try:
            data = zf.read(entry.member)
        except KeyError:
            raise DataFileError(
                f"{archive} does not hold {entry.member!r} (needed for {entry.name})"
            ) from None
    return atomic_write(dest, data)


def fetch(name: str) -> pathlib.Path:
    """Local path of the registered file ``name``, verified against its pinned hash.

    Looked up in ``RMLIB_DATA_DIR`` (at the registry's relative path), then in
    the download cache; found in neither, downloaded with pooch into the cache
    (:func:`download_url`) and checked, unless ``RMLIB_OFFLINE=1``. For an
    archive-backed entry (the Bing lexicon), the data folder may instead hold
    the upstream archive, e.g. ``opinion_lexicon.zip``; then the member is
    returned from inside it (extracted into the download cache, never into the
    data folder).

    Raises :class:`DataFileError` on a hash mismatch in the data folder or of a
    download, on a file found nowhere in offline mode, or on a failed download;
    the message names the file, where it was looked for and the fix.
    """
    entry = _entry(name)
    if not entry.url:
        return _fetch_local_only(entry, data_dir())
    found, problem = _in_data_dir(entry), ""
    if found is None:
        found, problem = _in_cache(entry)
    if found is not None:
        return found
    if offline():
        raise DataFileError(
            f"{entry.name}: {entry.path} is not here ({problem or 'looked in ' + _looked_in(entry)}) and "
            f"{OFFLINE_ENV_VAR}=1 forbids downloading it. " + _remedies(entry, online=False)
        )
    return _download(entry)


def download_url(name: str | DataFile) -> str:
    """The URL a download of ``name`` reads: the pinned upstream URL, or its place on the mirror.

    With ``RMLIB_DATA_MIRROR=BASE`` (:func:`rmlib.paths.data_mirror`), a pinned
    ``https://HOST/PATH`` is read from ``BASE/HOST/PATH``; the pinned hash is
    checked either way.
    """
    entry = _entry(name) if isinstance(name, str) else name
    mirror = data_mirror()
    if mirror is None:
        return entry.url
    parts = urllib.parse.urlsplit(entry.url)
    return f"{mirror}/{parts.netloc}{parts.path}"


def mirror_path(name: str | DataFile) -> str:
    """Where a mirror holds the download of ``name``: ``HOST/PATH`` of its pinned URL, unquoted.

    A mirror is any static file server over a folder laid out this way (what
    ``wget --force-directories`` writes); point ``RMLIB_DATA_MIRROR`` at it.
    For an archive-backed entry this is the archive's place.
    """
    entry = _entry(name) if isinstance(name, str) else name
    parts = urllib.parse.urlsplit(entry.url)
    return parts.netloc + urllib.parse.unquote(parts.path)


def _archive_name(entry: DataFile) -> str:
    return urllib.parse.unquote(entry.url.rsplit("/", 1)[-1])


def _cache_path(entry: DataFile) -> pathlib.Path:
    """Where a download of ``entry`` is kept (the archive, for an archive-backed entry)."""
    rel = pathlib.PurePosixPath(entry.path)
    if entry.member is not None:
        rel = rel.parent / _archive_name(entry)
    return cache_dir().joinpath(*rel.parts)


def _extracted_path(entry: DataFile) -> pathlib.Path:
    return cache_dir() / "extracted" / entry.member


def download_folders() -> list[str]:
    """The top-level folders of the user cache that hold downloads of registered files."""
    tops = {pathlib.PurePosixPath(e.path).parts[0] for e in REGISTRY.values() if e.url}
    return sorted(tops | {"extracted"})


def stale_download_reason(path: str | os.PathLike) -> str | None:
    """None when ``path`` (a file in the user cache) is where a registered file's download is kept,
    else why nothing reads it again (for ``python -m rmlib cache --prune``)."""
    path = pathlib.Path(path)
    used = {_cache_path(e) for e in REGISTRY.values() if e.url}
    used |= {_extracted_path(e) for e in REGISTRY.values() if e.url and e.member is not None}
    return None if path in used else "no registered file is kept at this place (an older registry's download)"


def _in_data_dir(entry: DataFile) -> pathlib.Path | None:
    """The copy in ``RMLIB_DATA_DIR``, verified (a mismatch raises), or None when it is not there."""
    root = data_dir()
    if root is None:
        return None
    path = root / entry.path
    if path.is_file():
        return _verify(entry, path)
    if entry.member is not None:
        archive = _archive_name(entry)
        for cand in (root / archive, root / pathlib.Path(entry.path).parent / archive):
            if cand.is_file():
                return _extract_member(entry, cand, _extracted_path(entry))
    return None


def _in_cache(entry: DataFile) -> tuple[pathlib.Path | None, str]:
    """(the verified copy in the download cache or None, why a copy there was not used)."""
    path = _cache_path(entry)
    if not path.is_file():
        return None, ""
    if entry.member is not None:
        if entry.url_sha256 is not None and sha256sum(path) != entry.url_sha256:
            return None, f"the archive in the download cache ({path}) fails its SHA-256 check"
        return _extract_member(entry, path, _extracted_path(entry)), ""
    try:
        return _verify(entry, path), ""
    except DataFileError as err:
        return None, f"the copy in the download cache fails its hash check: {err}"


def _download(entry: DataFile) -> pathlib.Path:
    import logging

    import pooch

    from ..progress import enabled as progress_enabled

    dest = _cache_path(entry)
    again, _ = _in_cache(entry)
    if again is not None:  # another process downloaded it meanwhile
        return again
    dest.unlink(missing_ok=True)  # a copy that failed its check: pooch keeps files it cannot check
    url = download_url(entry)
    known = entry.url_sha256 if entry.member is not None else entry.sha256
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)  # pooch says each download at INFO; a chapter page should not show it
    try:
        got = pooch.retrieve(url=url, known_hash=None if known is None else f"sha256:{known}",
                             fname=dest.name, path=dest.parent, progressbar=progress_enabled())
    except ValueError as e:  # pooch: the download's SHA-256 is not the pinned one (the file is not kept)
        raise DataFileError(
            f"{entry.name}: the file downloaded from {url} fails its SHA-256 check and was not kept ({e}). "
            f"The server sent another file than the pinned one: refresh the mirror's copy if {MIRROR_ENV_VAR} "
            f"is set, else put the pinned file at {ENV_VAR}/{entry.path}."
        ) from None
    except Exception as e:  # network errors of any kind (requests, OSError, ...)
        raise DataFileError(
            f"could not download {entry.name} ({entry.path}) from {url}: {type(e).__name__}: {e}. "
            + _remedies(entry, online=True)
        ) from e
    finally:
        logger.setLevel(level)
    path = pathlib.Path(got)
    if entry.member is not None:
        return _extract_member(entry, path, _extracted_path(entry))
    if entry.git_blob is not None:
        try:
            _verify_git_blob(entry, path)
        except DataFileError as e:
            path.unlink(missing_ok=True)
            raise DataFileError(f"{e} (downloaded from {url}; the download was not kept)") from None
    return path


# --------------------------------------------------------------------------
# EloEverything
# --------------------------------------------------------------------------

ELO_COLUMNS = ("name", "elo_score", "elo_rank", "elo_matches")


def _elo_key(prompt: str) -> str:
    if prompt in ELO_PROMPTS:
        return prompt
    norm = prompt.strip()
    for key, text in ELO_PROMPTS.items():
        if norm == text or norm == text.rstrip("?"):
            return key
    choices = "; ".join(f"{k!r} ({v!r})" for k, v in ELO_PROMPTS.items())
    raise InputError(f"unknown EloEverything prompt {prompt!r}; choose one of: {choices}")


def eloeverything(prompt: str = "one_word_greatest") -> pd.DataFrame:
    """EloEverything items with human Elo ratings and reward-model scores.

    One row per item (7,530), columns ``name, elo_score, elo_rank,
    elo_matches`` followed by one float64 column per reward model, named by
    its Hugging Face hub id (as in the released CSV). ``prompt`` is a short
    key of :data:`ELO_PROMPTS` or the verbatim prompt text. The verbatim
    prompt is in ``df.attrs["prompt"]``, the file name in
    ``df.attrs["source"]``.
    """
    key = _elo_key(prompt)
    entry = REGISTRY[f"elo_{key}"]
    raw = pd.read_csv(fetch(entry.name), keep_default_na=False, na_values=[""])
    missing = [c for c in ELO_COLUMNS if c not in raw.columns]
    if missing:
        raise DataFileError(f"{entry.path}: missing columns {missing}")
    model_cols = [c for c in raw.columns if c not in ELO_COLUMNS]
    df = raw[list(ELO_COLUMNS) + model_cols].copy()
    df["name"] = df["name"].astype(str)
    df[model_cols] = df[model_cols].astype("float64")
    df["elo_score"] = df["elo_score"].astype("float64")
    df.attrs["prompt"] = ELO_PROMPTS[key]
    df.attrs["source"] = entry.url
    return df


# --------------------------------------------------------------------------
# Lexicons
# --------------------------------------------------------------------------


def _afinn_package_file() -> pathlib.Path | None:
    try:
        import afinn
    except ImportError:
        return None
    path = pathlib.Path(afinn.__file__).resolve().parent / "data" / "AFINN-111.txt"
    return path if path.is_file() else None


def afinn111() -> pd.Series:
    """AFINN-111: ``word -> score`` (int, -5..+5), 2,477 entries.

    Read from the file shipped in the PyPI package ``afinn``
    (``afinn/data/AFINN-111.txt``; ``afinn.Afinn()`` itself would load
    AFINN-165), checked against the registry hash; falls back to
    :func:`fetch` when the package is absent or its copy differs.
    Some entries are multi-word phrases (e.g. ``"does not work"``).
    """
    entry = REGISTRY["afinn_111"]
    path = _afinn_package_file()
    if path is None or sha256sum(path) != entry.sha256:
        path = fetch(entry.name)
    words, scores = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            word, _, score = line.rpartition("\t")
            if not word:
                raise DataFileError(f"{path}:{lineno}: expected 'word<TAB>score', got {line!r}")
            words.append(word)
            scores.append(int(score))
    s = pd.Series(scores, index=pd.Index(words, name="word"), name="afinn", dtype="int64")
    s.attrs["source"] = str(path)
    return s


def _read_word_list(path: pathlib.Path) -> list[str]:
    """Words of one Hu & Liu list: one per line, ``;`` comment lines skipped.

    The original files are Latin-1 (``naïve``); the mirrored ones UTF-8.
    Both decode here.
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return [w.strip() for w in text.splitlines() if w.strip() and not w.lstrip().startswith(";")]


#: SHA-256 of the word lists (words joined by "\n", UTF-8), whatever the file
#: form (mirrored text files or the upstream zip, whose own hash is not pinned).
BING_WORDS_SHA256 = {
    "bing_positive": "775b12ffb42af6840d30679695d27a79f17e8303b2ba3acd150d6e7bdcea421c",
    "bing_negative": "a7e3eda33fa47ee7a0a2176744e149437a37becf31ea273911b095501f665198",
}


def _bing_words(name: str) -> list[str]:
    path = fetch(name)
    words = _read_word_list(path)
    digest = hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()
    if digest != BING_WORDS_SHA256[name]:
        raise DataFileError(
            f"{name}: the word list read from {path} ({len(words)} words) differs from the "
            f"pinned Hu & Liu list (word-list SHA-256 {BING_WORDS_SHA256[name]}, got {digest}). "
            f"Replace the file with the upstream list ({REGISTRY[name].url})."
        )
    return words


def bing_lexicon() -> pd.DataFrame:
    """Hu & Liu (2004) opinion lexicon ("Bing"): columns ``word, sentiment``.

    ``sentiment`` is ``"positive"`` (2,006 words) or ``"negative"``
    (4,783). Words present in both lists (``envious``, ``enviously``,
    ``enviousness`` in the released lists) are kept in both, as in the
    original, and named in ``df.attrs["in_both"]`` so that callers can
    drop them. Either file form is accepted (see :func:`fetch`); the words
    read are checked against :data:`BING_WORDS_SHA256`.
    """
    pos = _bing_words("bing_positive")
    neg = _bing_words("bing_negative")
    df = pd.DataFrame(
        {"word": pos + neg, "sentiment": ["positive"] * len(pos) + ["negative"] * len(neg)}
    )
    df.attrs["in_both"] = sorted(set(pos) & set(neg))
    return df


# --------------------------------------------------------------------------
# BNC word frequencies
# --------------------------------------------------------------------------

def _bnc_number(value: str) -> tuple[float, bool]:
    """A numeric field of the BNC list: (value, carried a # or && mark)."""
    value = value.strip()
    number = value.rstrip("#&")
    marked = number != value
    return (float(number) if number else np.nan), marked


def _bnc_raw() -> pd.DataFrame:
    """The BNC list 1.1, one row per line of the file (18,088 rows).

    A line is ``<TAB>Word<TAB>PoS<TAB>x<TAB>Freq<TAB>Ra<TAB>Disp``. On a
    lemma line ``x`` is ``:`` (no inflections listed) or ``%`` (inflected
    forms follow). On a ``@`` line (Word and PoS both ``@``) ``x`` is the
    inflected form itself; its lemma and PoS are those of the nearest lemma
    line above. Irregularities of the released file handled here: 11 lines
    (the two ``lie`` verbs) lack the leading tab; one line is a
    cross-reference without numbers (``further*  Adj  [see far]``: numbers
    NaN); some numbers carry a trailing ``#`` or ``&&`` mark, or are just
    ``&&`` (kept as ``*_marked`` flags, value parsed without the mark, NaN
    when nothing is left).
    """
    path = fetch("bnc_1_1_all_alpha")
    with open(path, encoding="latin-1", newline="") as f:
        lines = f.read().split("\n")
    header = lines[0].rstrip("\r").split("\t")
    if [h for h in header if h] != ["Word", "PoS", "Freq", "Ra", "Disp"]:
        raise DataFileError(f"{path}: unexpected header {header!r}")
    recs = []
    for lineno, line in enumerate(lines[1:], 2):
        line = line.rstrip("\r")
        if not line:
            continue
        fields = line.split("\t")
        if fields[0] == "":
            fields = fields[1:]
        fields = (fields + [""] * 6)[:6]
        word, pos, form = fields[0], fields[1], fields[2]
        freq, freq_m = _bnc_number(fields[3])
        rng, rng_m = _bnc_number(fields[4])
        disp, disp_m = _bnc_number(fields[5])
        recs.append((lineno, word, pos, form, freq, rng, disp, freq_m, rng_m, disp_m))
    df = pd.DataFrame(
        recs,
        columns=["line", "word", "pos", "form", "freq", "range", "disp",
                 "freq_marked", "range_marked", "disp_marked"],
    )
    is_form = df["word"].eq("@")
    df["is_form"] = is_form
    df["lemma"] = df["word"].where(~is_form).ffill()
    df["lemma_pos"] = df["pos"].where(~is_form).ffill()
    return df


def bnc_frequencies(rows: str = "lemma") -> pd.DataFrame:
    """BNC word frequencies (Leech, Rayson & Wilson 2001, list 1.1).

    ``Freq`` is per million words (rounded to integers, so some are 0);
    ``log_freq`` is its natural log (``-inf`` where ``freq == 0``: filter
    ``freq > 0`` before regressing).

    ``rows="lemma"`` (default): lemma lines only (``Word != "@"``),
    aggregated over part of speech by summing ``freq`` per lower-cased
    ``Word``. Columns ``word, freq, n_pos, log_freq``, one row per distinct
    lower-cased lemma (multi-word entries such as ``a bit`` included, the
    one cross-reference line without a frequency excluded).

    ``rows="forms"``: the inflected-form lines (``Word == "@"``), one row
    each, with the form string (third field of the line) as ``word``, its
    ``lemma`` and the lemma's ``pos``; columns ``word, lemma, pos, freq,
    range, disp, log_freq``. Lemmas without inflections have no such lines.

    ``rows="paper"``: what the paper's R code (``figures/generate_figure_3.R``)
    used: ``read.delim`` of the file, then a join of the lower-cased token on
    the ``Word`` column exactly as written (not lower-cased, so capitalised
    entries never match), many-to-many (a word listed under two PoS gives two
    observations with their own ``Freq``), ``as.numeric(Freq)`` (values
    marked ``#`` become NA) and ``freq > 0``. Returned here: lemma lines
    with ``word`` as in the file, one row per PoS, ``freq`` NaN where the
    source value is ``#``-marked or missing, rows with NaN or 0 ``freq``
    dropped; columns ``word, pos, freq, log_freq``. (The 11 lines without a
    leading tab shift columns in ``read.delim`` and so never match in the
    paper; they are lemma ``lie`` lines and are kept here, a negligible
    difference for tokens that are in AFINN.)

    ``rows="raw"``: every line as parsed (see :func:`_bnc_raw`).
    """
    df = _bnc_raw()
    if rows == "raw":
        return df
    if rows == "lemma":
        lem = df.loc[~df["is_form"] & df["freq"].notna(), ["word", "pos", "freq"]].copy()
        lem["word"] = lem["word"].str.lower()
        out = (
            lem.groupby("word", sort=True)
            .agg(freq=("freq", "sum"), n_pos=("pos", "size"))
            .reset_index()
        )
    elif rows == "forms":
        out = df.loc[df["is_form"], ["form", "lemma", "lemma_pos", "freq", "range", "disp"]]
        out = out.rename(columns={"form": "word", "lemma_pos": "pos"}).reset_index(drop=True)
    elif rows == "paper":
        out = df.loc[~df["is_form"], ["word", "pos", "freq"]].copy()
        out.loc[df["freq_marked"], "freq"] = np.nan
        out = out[out["freq"] > 0].reset_index(drop=True)
    else:
        raise InputError(f"rows must be 'lemma', 'forms', 'paper' or 'raw', got {rows!r}")
    with np.errstate(divide="ignore"):
        out["log_freq"] = np.log(out["freq"].to_numpy(dtype="float64"))
    return out


# ==========================================================================
# The paper's own data: per-token scores of the 10 reward models, Gemma
# base/instruct logits, the published tables and figures, and the Figure 2A
# matrix transcribed for the project.
# ==========================================================================
#
# Where each lives in RMLIB_DATA_DIR (and in the download cache):
#
# * ``reward_model_scores/<org>--<name>.csv``, ``base_model_logits/google--<name>.csv``:
#   the upstream ``data/`` folders of the paper's repository, same file names.
#   Pinned by git blob id (their SHA-256 was never recorded); downloaded
#   with pooch from the pinned commit when found in neither place.
# * ``paper_published/tables/*.csv``, ``paper_published/figures/*.png``: the
#   paper's ``tables/output`` and ``figures/output``, pinned by SHA-256.
# * ``paper_published/figure_2a_kendall_tau_transcribed.csv``: project
#   material, no upstream URL; never downloaded.

#: The paper's three token prompts (upstream ``config/prompts.yaml``): column
#: name in the per-token files -> the prompt, verbatim.
PAPER_TOKEN_PROMPTS: dict[str, str] = {
    "greatest": "What, in one word, is the greatest thing ever?",
    "best": "What, in one word, is the best thing ever?",
    "worst": "What, in one word, is the worst thing ever?",
}

#: Hub id -> git blob id of ``data/reward_model_scores/<org>--<name>.csv``.
PAPER_RM_SCORE_BLOBS: dict[str, str] = {
    "LxzGordon/URM-LLaMa-3.1-8B": "f4e446bbf68300a38a321abac1b258a8a7b1b226",
    "RLHFlow/ArmoRM-Llama3-8B-v0.1": "d3cef6818721b9077b254c5874df82d9f93729fb",
    "Ray2333/GRM-Llama3-8B-rewardmodel-ft": "65c5aff93ed16f6ee30a1bbab61d7ec386708bc6",
    "Ray2333/GRM-Llama3.2-3B-rewardmodel-ft": "7b5d1a54ad5e5ca434f5bc5e01cbefb0ea789249",
    "Ray2333/GRM-gemma2-2B-rewardmodel-ft": "a3494311059fe96951aaa083165232a17157835b",
    "Skywork/Skywork-Reward-Gemma-2-27B-v0.2": "f4edf21c4df82ead62ce83f9e201dcf6250c3ec1",
    "Skywork/Skywork-Reward-Gemma-2-27B": "1332b6e90872769363d57f91cd629b0d13751a92",
    "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2": "a189ba0a8fd1df75b5b78030d66d27c8caf66135",
    "nicolinho/QRM-Gemma-2-27B": "7bffa3622308d4ff458bf9c9e5f33a1af5613e4c",
    "nicolinho/QRM-Llama3.1-8B": "9d5dea3aaf43c7209d6cd112ad4dbc612e95c113",
}

#: Hub id -> git blob id of ``data/base_model_logits/google--<name>.csv``
#: (upstream ``config/gemma_base_models.yaml`` order).
PAPER_BASE_LOGIT_BLOBS: dict[str, str] = {
    "google/gemma-2b": "c05f61a50af88c126d4a04b2a8356a6ef30971af",
    "google/gemma-2b-it": "ff9437a8f43be12a60fd9df0988fcdf302669e9c",
    "google/gemma-7b": "b8afc6db8525a8ae1ff0173b03dbc9a72c268a7a",
    "google/gemma-7b-it": "763ea9b02b78e783a7518d3f89a5d0624cd00673",
    "google/gemma-2-2b": "f9f3cf93e8c1817faef260a3003751de8f3806df",
    "google/gemma-2-2b-it": "321d1dc8c7f26b297b4155007e6a8f94bb302ece",
    "google/gemma-2-9b": "b759446413b2e775af320f89fd0ca038668c0fb0",
    "google/gemma-2-9b-it": "3f747fe9a210be8fcb5c1ab787383714672d503a",
    "google/gemma-2-27b": "35f326308b1d23408cf7dd5569b8c3c24d6d39ab",
    "google/gemma-2-27b-it": "6caaa5d4ef3420b08a28d8a1fa3a7babef93a83e",
}

#: Published tables: key -> (file in ``tables/output``, SHA-256).
PUBLISHED_TABLES: dict[str, tuple[str, str]] = {
    "1": ("table_1_reward_models.csv", "12a31e6e9bb7df45b3649ffbd53525eb1d08143bed54b2047e9b0509eb1d895d"),
    "2a": ("table_2a_top_bottom_tokens_R-Gem-2B.csv", "7e240ae2d41175f3cc6c117e07487752dc8b32dd1d8921d66b675944a259ad6c"),
    "2b": ("table_2b_top_bottom_tokens_R-Lla-3B.csv", "590111fb2a5f4374611e05562a1430b8e3ebeb60516446137903ab2ab8c1e2da"),
    "3": ("table_3_distribution_moments.csv", "694e6089f1c2fab865da26131b52b09d3fbed7d98762e4a507a072914e106642"),
    "A.1": ("table_a1_logprobs_greatest.csv", "775414cfd1064c42839f045b03c8e0a14c0f1d8f30b082408f4ce8e48d57a1e6"),
    "A.2": ("table_a2_logprobs_best.csv", "93d0457d15f626665a95a3a8e85a1ba7759ec047b75fd693aa46c47e1eb3f3e4"),
    "A.3": ("table_a3_logprobs_worst.csv", "809a233b2b506f732407e7f0dcde9e00eb7c9f6fe71d0f0bf266d3980a9d814a"),
    "A.4": ("table_a4_logprobs_best_plus_worst.csv", "3b20dad78106d7ff629fcfd4a8181ff0cf6cb35f6e601b0ff61b62ca522fc080"),
    "A.5": ("table_a5_logprobs_best_minus_worst.csv", "f0fd6fc90dbbd822de81fff422f11f48ecd87a6fd9c23815d821c6067d014b6c"),
    "A.6": ("table_a6_raw_vocab_greatest.csv", "ec9c940c746296cb5cb8210fcaf31c5bd9107da4323b5f5fb4f0b90e80721b57"),
    "A.7": ("table_a7_shared_vocab_greatest.csv", "4aacb162c0ae52d2a2d43847489b23ae48502e6f7c741d103dc6ea6ca681ffb4"),
    "A.8": ("table_a8_shared_vocab_best_plus_worst.csv", "9f0e31d1ef8366049642308c066bd1dc3a23b1366b5b11eaffbc60a0aec40181"),
    "A.9": ("table_a9_shared_vocab_best_minus_worst.csv", "5f2d24434fad02164425348718d149c201e3cdbf874faa3f4509bff02607165f"),
}

#: Published figures: key -> (file in ``figures/output``, SHA-256).
PUBLISHED_FIGURES: dict[str, tuple[str, str]] = {
    "1": ("figure_1_violin_greatest.png", "adacbf070e89c0370765b8e4c73507e94789c7752963c37b373366561b864ccc"),
    "2A": ("figure_2a_heatmap.png", "fc3afa427df79aa9ad5eac23fecd3c1e2d8c828a438bc5f0764c4eeef24976fb"),
    "2B": ("figure_2b_mds.png", "74d3244cebeaf6bb02814163ef8404630ad4dcf5760e327b9779bba20589d471"),
    "2C": ("figure_2c_rsa.png", "6dfd548d3aaa4a46121c78760b95e18bcba1e39e50313b0c4768a8f4ad5a5f53"),
    "3A": ("figure_3a_sentiment_greatest.png", "0270ea8cbc3ac057886f7d74a6116e01157cb19441614f8b01ed8c3d489d759f"),
    "3B": ("figure_3b_sentiment_worst.png", "df631edfd641c79684961e6492671e9eafb05c6ef67179d964a9334cc882e8bb"),
    "3C": ("figure_3c_slope_estimates.png", "65aec46f4e0113445a283d8c50b5617c1ab71fbca98bba8dc1b33f6c4cd2ed47"),
    "3D": ("figure_3d_frequency_slopes.png", "07eaac6c4932bc74ee85ce9dd98b400392ab59d0d7daf36f61fcea15c800a915"),
    "4": ("figure_4_best_worst.png", "ab4e25f3972fe17f3adaacaa99849bf0333a5b2001bb0b5000a782a89a41c9f6"),
    "5B": ("figure_5b_rank_diff.png", "2fd5385cd68c38e9a939e1b060d047fba19b2a6d7aad8a74b0d99d0d6e993770"),
    "A.1": ("figure_a1_correlation_heatmaps_spearman_rbo_greatest.png", "66dc07d0458295297674acb27dfbb178af9a2a8336c17a5d9d536daa43eeb4e7"),
    "A.2": ("figure_a2_best_greatest_shared_vocab.png", "05c714391625f5e602c0882c8205f27bab66d4203c31e40b8ed58827f901d679"),
    "A.3": ("figure_a3_sentiment_beeswarm.png", "63bec7cae21b56d76e1465bc01a5a7ffda0729e169b14cdacdcaa0073df5a8e8"),
    "A.4": ("figure_a4_sentiment_afinn.png", "10aca958da890eb453e1d5019d3a4e497509534f1213f55b70ddba1a6056d4db"),
    "A.5": ("figure_a5_ee_kendall_tau_heatmap.png", "c2ce643ed2463293730cccb3ab2b39c4ed55bfcad033135628db87162c561813"),
    "A.6": ("figure_a6_ee_kendall_tau_across_prompts.png", "f1153f40356f6560c64e64287636e95462d8903b2c16b51d742cc0fcb0593b14"),
    "A.7": ("figure_a7_human_model_rank_diff.png", "03ecdafed508cc37a8b12f5eafb7bbfc6d1386b4e3b98a66d57e756aa9cecffc"),
}

FIG2A_TRANSCRIBED_SHA256 = "f1dc731d672cac44cf36faada6f5c34b35f4e139fba088b550e3d961c6faca60"



def _safe(hub_id: str) -> str:
    return hub_id.replace("/", "--")


def rm_scores_key(model: str) -> str:
    """Registry name of a reward model's per-token score file (hub id or paper nickname)."""
    hub = _paper_hub_id(model, PAPER_RM_SCORE_BLOBS, "reward model")
    return f"rm_scores:{_safe(hub)}"


def base_logits_key(model: str) -> str:
    """Registry name of a Gemma model's next-token logit file (hub id, e.g. ``google/gemma-2b``)."""
    hub = _paper_hub_id(model, PAPER_BASE_LOGIT_BLOBS, "base model")
    return f"base_logits:{_safe(hub)}"


def _paper_hub_id(model: str, known: dict[str, str], what: str) -> str:
    if model in known:
        return model
    from .. import registry

    entry = registry.lookup(model)
    if entry is not None and entry["hub_id"] in known:
        return entry["hub_id"]
    raise KeyError(f"no released per-token file for {what} {model!r}; the paper released: {list(known)}")


def _paper_entries() -> list[DataFile]:
    out = []
    for hub, blob in PAPER_RM_SCORE_BLOBS.items():
        rel = f"reward_model_scores/{_safe(hub)}.csv"
        out.append(DataFile(rm_scores_key(hub), rel, None, _PAPER_RAW + "data/" + rel, git_blob=blob,
                            group="token_scores", description=f"per-token scores of {hub}, three prompts"))
    for hub, blob in PAPER_BASE_LOGIT_BLOBS.items():
        rel = f"base_model_logits/{_safe(hub)}.csv"
        out.append(DataFile(base_logits_key(hub), rel, None, _PAPER_RAW + "data/" + rel, git_blob=blob,
                            group="base_logits", description=f"next-token logits of {hub}, three prompts"))
    for key, (fname, sha) in PUBLISHED_TABLES.items():
        out.append(DataFile(f"paper_table_{key}", f"paper_published/tables/{fname}", sha,
                            _PAPER_RAW + "tables/output/" + fname, group="published_tables",
                            description=f"the paper's Table {key}"))
    for key, (fname, sha) in PUBLISHED_FIGURES.items():
        out.append(DataFile(f"paper_figure_{key}", f"paper_published/figures/{fname}", sha,
                            _PAPER_RAW + "figures/output/" + fname, group="published_figures",
                            description=f"the paper's Figure {key}"))
    out.append(DataFile("fig2a_tau_transcribed", "paper_published/figure_2a_kendall_tau_transcribed.csv",
                        FIG2A_TRANSCRIBED_SHA256, "", group="published_figures",
                        description="Figure 2A Kendall tau matrix, transcribed from the heatmap (2 decimals)"))
    return out


REGISTRY.update({e.name: e for e in _paper_entries()})


# ==========================================================================
# The follow-up study's released data ("Reward Models Inherit Value Biases
# from Pretraining", arXiv 2601.20838): its pinned files are listed as data in
# ``rmlib/resources/followup.yaml`` (upstream path, group, git blob id,
# SHA-256 where known, the RM of a score file) and become registry entries
# named ``followup:<name>`` here. Readers: :mod:`rmlib.tables.followup`.
# ==========================================================================

#: The follow-up's file groups, in the order ``rmlib paper-data`` lists them.
FOLLOWUP_GROUPS = ("followup_config", "followup_corpora", "followup_scores", "followup_training")


def followup_manifest() -> dict:
    """``rmlib/resources/followup.yaml`` as a dict (``repository``, ``commit``, ``folder``, ``files``,
    ``training_runs``); a fresh copy each call (read once)."""
    import copy

    return copy.deepcopy(_followup_manifest())


@functools.lru_cache(maxsize=1)
def _followup_manifest() -> dict:
    import yaml

    from .. import resources

    with open(resources.path("followup.yaml"), encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def followup_key(name: str) -> str:
    """Registry name of a follow-up file (``"prompts"`` -> ``"followup:prompts"``)."""
    return name if name.startswith("followup:") else f"followup:{name}"


def _followup_entries() -> list[DataFile]:
    man = followup_manifest()
    raw = f"https://raw.githubusercontent.com/{man['repository']}/{man['commit']}/"
    out = []
    for f in man["files"]:
        what = f"{f['model']}: " if f.get("model") else ""
        out.append(DataFile(followup_key(f["name"]), f"{man['folder']}/{f['path']}", f.get("sha256"),
                            raw + urllib.parse.quote(f["path"]), git_blob=f["git_blob"], group=f["group"],
                            description=f"{what}{f['path']} of the follow-up study's release"))
    return out


REGISTRY.update({e.name: e for e in _followup_entries()})


def git_blob_id(data: bytes | str | os.PathLike) -> str:
    """git's blob id of some bytes (or of a file's bytes): ``sha1(b"blob <len>\\0" + data)``.

    Equal to ``git hash-object <file>`` (no filters).
    """
    if not isinstance(data, (bytes, bytearray)):
        data = pathlib.Path(data).read_bytes()
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _verify_git_blob(entry: DataFile, path: pathlib.Path) -> None:
    got = git_blob_id(path)
    if got != entry.git_blob:
        raise DataFileError(
            f"git blob id mismatch for {entry.name} at {path}: expected {entry.git_blob}, got {got}. "
            f"The file is corrupt, edited or another version; replace it with the pinned upstream file {entry.url}"
        )


def _fetch_local_only(entry: DataFile, root: pathlib.Path | None) -> pathlib.Path:
    """Project material without an upstream URL: read from the data folder, never downloaded."""
    path = None if root is None else root / entry.path
    if path is not None and path.is_file():
        return _verify(entry, path)
    raise DataFileError(
        f"{entry.name}: {entry.path} is project material (no upstream URL) and was not found "
        f"({'looked at ' + str(path) if path else ENV_VAR + ' not set'}). Either set {ENV_VAR} to the "
        "folder that holds it, or pass its path explicitly."
    )


def _local_copy(entry: DataFile) -> pathlib.Path | None:
    """The verified local copy of ``entry`` (data folder or download cache), without any download."""
    try:
        if not entry.url:
            return fetch(entry.name)
        return _in_data_dir(entry) or _in_cache(entry)[0]
    except DataFileError:
        return None


def _absent_reason(entry: DataFile) -> str:
    """"" when ``entry`` is here and verified, else one line: why not, and the fix (never downloads)."""
    try:
        if not entry.url:
            fetch(entry.name)
            return ""
        if _in_data_dir(entry) is not None:
            return ""
    except DataFileError as err:
        return str(err)
    cached, problem = _in_cache(entry)
    if cached is not None:
        return ""
    if offline():
        try:
            fetch(entry.name)  # offline: raises the one-line error naming the folders and the fix
        except DataFileError as err:
            return str(err)
    return (f"{entry.name}: {entry.path} is not downloaded yet ({problem or 'looked in ' + _looked_in(entry)}); "
            "it is downloaded on first use, or now with `python -m rmlib paper-data --download`.")


def paper_data_status(groups=None, *, download: bool = False) -> pd.DataFrame:
    """Which of the paper's released files are here: one row per file.

    ``groups``: any of ``"token_scores"``, ``"base_logits"``,
    ``"published_tables"``, ``"published_figures"`` and the
    follow-up study's :data:`FOLLOWUP_GROUPS` (None: all). ``download=False`` only looks (``RMLIB_DATA_DIR``,
    then the download cache); ``download=True`` downloads what is missing (:func:`fetch`; not with
    ``RMLIB_OFFLINE=1``). A file counts as present only when its hash (SHA-256
    or git blob id) checks out.

    Columns ``name, group, path, present, local, reason``: ``local`` is the
    verified local path or None, ``reason`` the one-line error when absent.
    See :func:`paper_data_note` for one sentence a chapter can print.
    """
    all_groups = tuple(dict.fromkeys(e.group for e in REGISTRY.values() if e.group))
    if groups is None:
        groups = all_groups
    elif isinstance(groups, str):
        groups = (groups,)
    bad = [g for g in groups if g not in all_groups]
    if bad:
        raise InputError(f"unknown groups {bad}; choose from {list(all_groups)}")
    rows = []
    for e in REGISTRY.values():
        if e.group not in groups:
            continue
        local, reason = None, ""
        if download:
            try:
                local = fetch(e.name)
            except DataFileError as err:
                reason = str(err)
        else:
            local = _local_copy(e)
            if local is None:
                reason = _absent_reason(e)
        rows.append({"name": e.name, "group": e.group, "path": e.path, "present": local is not None,
                     "local": local, "reason": reason})
    return pd.DataFrame(rows, columns=["name", "group", "path", "present", "local", "reason"])


def paper_data_note(status: pd.DataFrame, fallback: str = "the data here") -> str:
    """One sentence for a chapter: all present, or what is missing and what it goes on with."""
    missing = status.loc[~status["present"]]
    if missing.empty:
        return f"All {len(status)} of the paper's released files needed here are present (hashes checked)."
    groups = ", ".join(dict.fromkeys(missing["group"]))
    homes = [_repo_at_commit(REGISTRY[n].url) for n in missing["name"] if n in REGISTRY and REGISTRY[n].url]
    homes = list(dict.fromkeys(h for h in homes if h)) or [f"{_PAPER_REPO} at commit {_PAPER_COMMIT[:7]}"]
    how = (f"unset {OFFLINE_ENV_VAR} on a machine with a network" if offline()
           else "run `python -m rmlib paper-data --download`")
    return (
        f"{len(missing)} of {len(status)} files of the paper's data ({groups}) are not here, so this chapter goes on "
        f"with {fallback}. To use the paper's own data, {how} (they download from "
        f"{' and '.join(homes)}) or set {ENV_VAR} to a folder that holds them "
        f"(e.g. {missing['path'].iloc[0]})."
    )


def _repo_at_commit(url: str) -> str | None:
    """``"owner/repo at commit abc1234"`` for a raw.githubusercontent.com URL, else None."""
    parts = url.split("raw.githubusercontent.com/", 1)[-1].split("/") if "raw.githubusercontent.com/" in url else []
    return f"{parts[0]}/{parts[1]} at commit {parts[2][:7]}" if len(parts) > 3 else None


# ---- readers ---------------------------------------------------------------


def _read_upstream_token_csv(path: pathlib.Path) -> pd.DataFrame:
    """One per-token file as the authors wrote it (pandas ``to_csv``).

    ``lineterminator="\\n"``: a token that decodes to a bare ``"\\r"`` is
    written unquoted, and a reader that ends lines at ``\\r`` splits its row.
    ``keep_default_na=False``: tokens such as ``"nan"``, ``"null"``, ``""``
    stay strings.
    """
    df = pd.read_csv(path, lineterminator="\n", keep_default_na=False, na_values=[],
                     dtype={"token_name": str, "token_decoded": str})
    need = ["token_id", "token_name", "token_decoded"]
    missing = [c for c in need + list(PAPER_TOKEN_PROMPTS) if c not in df.columns]
    if missing:
        raise DataFileError(f"{path}: not a per-token file of the paper: missing columns {missing} "
                            f"(has {list(df.columns)})")
    df["token_id"] = df["token_id"].astype(np.int64)
    for p in PAPER_TOKEN_PROMPTS:
        df[p] = pd.to_numeric(df[p], errors="raise").astype(np.float64)
    if df["token_id"].duplicated().any():
        raise DataFileError(f"{path}: token ids repeat; a row was split (read with lineterminator='\\n')")
    return df


def _read_as_authors(path: pathlib.Path) -> pd.DataFrame:
    """The file read the way the authors' analysis scripts did: plain ``pd.read_csv(path)``.

    There a bare ``\r`` ends a line (that token's row is split into
    fragments whose scores are missing or misplaced) and strings such as
    ``"nan"``, ``"null"``, ``""`` become missing; the scripts then dropped
    rows with a missing score per prompt. Use it to reproduce their tables
    exactly; the default reader keeps every token intact.
    """
    df = pd.read_csv(path, dtype={"token_name": object, "token_decoded": object})
    df["token_id"] = pd.to_numeric(df["token_id"], errors="coerce")
    for p in PAPER_TOKEN_PROMPTS:
        df[p] = pd.to_numeric(df[p], errors="coerce")
    return df


def read_paper_token_file(path: str | os.PathLike, model: str, prompts=None,
                          value: str = "score", reader: str = "exact") -> pd.DataFrame:
    """A per-token file in the upstream format -> long table.

    Columns ``model, prompt, token_id, token, decoded, <value>`` (``value``
    is ``"score"`` for reward models, the :data:`rmlib.tables.results.LONG_COLUMNS`
    layout; ``"logit"`` for base models). ``prompt`` is the verbatim prompt
    (:data:`PAPER_TOKEN_PROMPTS`); ``prompts`` picks keys (``"greatest"``,
    ``"best"``, ``"worst"``; None = all three). ``token`` is the vocabulary
    string (``token_name``), ``decoded`` the decoded token. No hash check
    here: :func:`paper_token_scores` fetches (and checks) first.

    ``reader="exact"`` (default): every token read whole (see
    :func:`_read_upstream_token_csv`). ``reader="authors"``: as the paper's
    scripts read it (see :func:`_read_as_authors`): rows with a missing
    score dropped per prompt, ``decoded`` may be missing (NaN), ``token_id``
    float where rows were split. Only for reproducing the published tables.
    """
    keys = _prompt_keys(prompts)
    if reader == "exact":
        raw = _read_upstream_token_csv(pathlib.Path(path))
    elif reader == "authors":
        raw = _read_as_authors(pathlib.Path(path))
    else:
        raise InputError(f"reader must be 'exact' or 'authors', got {reader!r}")
    parts = []
    for k in keys:
        part = pd.DataFrame({
            "model": model, "prompt": PAPER_TOKEN_PROMPTS[k], "token_id": raw["token_id"].to_numpy(),
            "token": raw["token_name"].to_numpy(), "decoded": raw["token_decoded"].to_numpy(),
            value: raw[k].to_numpy(),
        })
        if reader == "authors":
            part = part[part[value].notna()]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _prompt_keys(prompts) -> list[str]:
    if prompts is None:
        return list(PAPER_TOKEN_PROMPTS)
    if isinstance(prompts, str):
        prompts = [prompts]
    out = []
    for p in prompts:
        key = next((k for k, v in PAPER_TOKEN_PROMPTS.items() if p in (k, v)), None)
        if key is None:
            raise InputError(f"unknown paper prompt {p!r}; choose from {list(PAPER_TOKEN_PROMPTS)} "
                             "or their verbatim texts")
        out.append(key)
    return out


def _provenance(entry: DataFile, hub: str, path: pathlib.Path, kind: str, keys) -> dict:
    return {"model_id": hub, "revision": None, "source": entry.url, "git_blob": entry.git_blob,
            "local": str(path), "kind": kind, "scored_by": "the paper's authors (released file)",
            "prompts": {k: PAPER_TOKEN_PROMPTS[k] for k in keys}, "paper_commit": _PAPER_COMMIT}


def _paper_long(blobs: dict[str, str], key_of, models, prompts, value: str, kind: str,
                progress: bool, reader: str = "exact") -> pd.DataFrame:
    if isinstance(models, str) and models == "present":
        key_list = [key_of(h) for h in blobs]
        hubs = [h for h, k in zip(blobs, key_list) if _local_copy(REGISTRY[k]) is not None]
        if not hubs:
            raise DataFileError(f"none of the paper's {kind} files is here. "
                                + _remedies(REGISTRY[key_list[0]], online=not offline()))
    else:
        if isinstance(models, str):
            models = [models]
        hubs = [_paper_hub_id(m, blobs, kind) for m in (models if models is not None else list(blobs))]
    keys = _prompt_keys(prompts)
    parts, prov = [], []
    from ..progress import bar as progress_bar

    bar = progress_bar(len(hubs), progress=progress, desc=f"released {kind} files", unit="file")
    for hub in hubs:
        entry = REGISTRY[key_of(hub)]
        path = fetch(entry.name)
        parts.append(read_paper_token_file(path, hub, keys, value=value, reader=reader))
        prov.append(dict(_provenance(entry, hub, path, kind, keys), reader=reader))
        bar.update(1)
    bar.close()
    long = pd.concat(parts, ignore_index=True)
    long.attrs = {"provenance": prov}
    return long


def paper_token_scores(models=None, prompts=None, *, progress: bool = True, reader: str = "exact") -> pd.DataFrame:
    """The paper's released per-token scores, as a long score table.

    ``models``: hub ids or paper nicknames (None = all ten; ``"present"`` =
    those whose verified file is already here, nothing downloaded); ``prompts``:
    ``"greatest"``, ``"best"``, ``"worst"`` or their verbatim texts (None =
    all three). Every file is fetched and checked against its git blob id
    first (a missing file raises :class:`DataFileError` naming the file and
    both remedies; :func:`paper_data_status` asks without raising).
    Columns :data:`rmlib.tables.results.LONG_COLUMNS`; ``model`` is the hub
    id; ``attrs["provenance"]`` one dict per file. ``reader="authors"``
    reads the files as the paper's scripts did (see
    :func:`read_paper_token_file`), to reproduce the published tables.
    """
    return _paper_long(PAPER_RM_SCORE_BLOBS, rm_scores_key, models, prompts, "score", "reward model", progress,
                       reader)


def paper_base_logits(models=None, prompts=None, *, log_probs: bool = True,
                      progress: bool = True, reader: str = "exact") -> pd.DataFrame:
    """The paper's released Gemma next-token logits (Tables A.1–A.5), long.

    The files hold raw last-position logits (the authors' script has the
    ``log_softmax`` commented out). Columns ``model, prompt, token_id,
    token, decoded, logit`` and, with ``log_probs``, ``log_prob``: the
    log-softmax over the file's whole vocabulary per (model, prompt). Ranks
    within one prompt are the same either way; sums and differences across
    prompts (Tables A.4, A.5) differ by a constant per model, so their
    rankings are the same too.
    """
    long = _paper_long(PAPER_BASE_LOGIT_BLOBS, base_logits_key, models, prompts, "logit", "base model", progress,
                       reader)
    if log_probs:
        from scipy.special import logsumexp

        lse = long.groupby(["model", "prompt"], sort=False)["logit"].transform(lambda v: logsumexp(v.to_numpy()))
        long["log_prob"] = long["logit"] - lse
    return long


def published_table(key: str) -> pd.DataFrame:
    """One of the paper's published tables (``"1"``, ``"2a"``, ``"2b"``, ``"3"``, ``"A.1"``..``"A.9"``).

    Tables 1 and 3 as printed (numbers parsed). Tables 2a/2b: columns
    ``part`` (``"top"``/``"bottom"``), ``rank`` (1 = best within its part's
    order as printed), ``token_id``, ``decoded`` (exact whitespace), ``score``.
    Tables A.1–A.9: ``part``, ``rank`` and one column of decoded token
    strings per model, the ``...`` separator row dropped. Strings such as
    ``"nan"`` stay strings; tokens with ``\\r`` or ``\\n`` are read whole.
    ``attrs["source"]`` is the upstream URL.
    """
    k = key.strip()
    k = k.upper() if k.lower().startswith("a") else k.lower()
    if k.startswith("A") and not k.startswith("A."):
        k = "A." + k[1:]
    if k not in PUBLISHED_TABLES:
        raise KeyError(f"unknown published table {key!r}; choose from {list(PUBLISHED_TABLES)}")
    entry = REGISTRY[f"paper_table_{k}"]
    path = fetch(entry.name)
    if k in ("1", "3"):
        df = pd.read_csv(path)
    else:
        raw = pd.read_csv(path, lineterminator="\n", keep_default_na=False, na_values=[], dtype=str)
        sep = raw.eq("...").all(axis=1)
        if sep.sum() != 1:
            raise DataFileError(f"{path}: expected one '...' row between top and bottom, found {int(sep.sum())}")
        cut = int(np.flatnonzero(sep.to_numpy())[0])
        top, bottom = raw.iloc[:cut], raw.iloc[cut + 1:]
        df = pd.concat([top, bottom], ignore_index=True)
        df.insert(0, "rank", list(range(1, len(top) + 1)) + list(range(1, len(bottom) + 1)))
        df.insert(0, "part", ["top"] * len(top) + ["bottom"] * len(bottom))
        if k in ("2a", "2b"):
            df = df.rename(columns={"Token ID": "token_id", "Decoded": "decoded", "Score": "score"})
            df["token_id"] = df["token_id"].astype(np.int64)
            df["score"] = df["score"].astype(np.float64)
    df.attrs["source"] = entry.url
    df.attrs["table"] = k
    return df


def published_figure(key: str) -> pathlib.Path:
    """Local path of one of the paper's published figures (PNG; ``"1"``, ``"2A"``, ..., ``"A.7"``).

    MIT License, © 2025 Christian, Kirk, Thompson, Summerfield, Dumbalska:
    credit the authors where shown.
    """
    k = key.strip().upper()
    if k.startswith("A") and not k.startswith("A."):
        k = "A." + k[1:]
    if k not in PUBLISHED_FIGURES:
        raise KeyError(f"unknown published figure {key!r}; choose from {list(PUBLISHED_FIGURES)}")
    return fetch(f"paper_figure_{k}")


def fig2a_tau_transcribed() -> pd.DataFrame:
    """The 10 x 10 Kendall tau matrix of Figure 2A, read off the published heatmap.

    Two decimals, symmetric, ones on the diagonal, rows/columns the paper's
    nicknames in the paper's order. The matrix the paper's RSA (§2.2,
    Fig. 2C) was run on. Project material (no upstream file): found only in ``RMLIB_DATA_DIR``.
    """
    path = fetch("fig2a_tau_transcribed")
    df = pd.read_csv(path, index_col=0)
    df.index = df.index.astype(str).str.strip()
    df.columns = df.columns.astype(str).str.strip()
    arr = df.to_numpy(dtype=float)
    if arr.shape[0] != arr.shape[1] or list(df.index) != list(df.columns):
        raise DataFileError(f"{path}: not a square matrix with the same labels on both axes")
    if not np.allclose(arr, arr.T) or not np.allclose(np.diag(arr), 1.0):
        raise DataFileError(f"{path}: the transcribed matrix must be symmetric with ones on the diagonal")
    df.index.name = None
    return df.astype(float)


def published_gcg_tables() -> pd.DataFrame:
    """The paper's Tables 4 and 5 (GCG results on R-Gem-2B) as printed, transcribed from its text.

    Columns ``table`` ("4" or "5"), ``prompt`` (greatest / best / worst for
    Table 4, the full prompt for Table 5), ``part`` (optimal / pessimal),
    ``start``, ``result``. No scores: they are not in the text copy here
    (see ``rmlib/resources/paper_gcg/README.md``). The authors released no
    file with these results. MIT-licensed paper material: credit Christian,
    Kirk, Thompson, Summerfield, Dumbalska (2025).
    """
    from .. import resources

    path = resources.path("paper_gcg/tables_4_5.csv")
    df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
    expected = ["table", "prompt", "part", "start", "result"]
    if list(df.columns) != expected or not df["part"].isin(["optimal", "pessimal"]).all():
        raise DataFileError(f"{path}: expected columns {expected} and part optimal/pessimal; reinstall rmlib")
    df.attrs["source"] = "Christian et al. (2025), §5, Tables 4-5 (arXiv 2506.07326), transcribed"
    return df
