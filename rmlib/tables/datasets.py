"""Public reference data: a registry of pinned files and their loaders.

Every file has a pinned upstream URL (a fixed commit, never a branch head
where one exists) and a SHA-256. :func:`fetch` finds a file in one of two
ways:

* ``RMLIB_DATA_DIR`` set: the file is read from that folder (offline builds,
  tests, CI) and its SHA-256 is checked; nothing is downloaded.
* otherwise: :mod:`pooch` downloads it once into a user cache folder
  (``RMLIB_CACHE_DIR`` if set, else ``pooch.os_cache("rmlib")``) and checks
  the hash.

Loaders return plain pandas objects. Nothing here unpickles anything: all
files are text (CSV / TSV / word lists), read with pandas or plain Python.

Files
-----
``elo_one_word_greatest``, ``elo_greatest_ever``, ``elo_humans_most_prefer``
    EloEverything items with human Elo ratings and the scores of the paper's
    10 reward models, one CSV per prompt (Christian et al. 2025, MIT).
    The third prompt's CSV exists upstream but its SHA-256 is not known here
    (it was never mirrored locally), so it is registered unverified
    (``sha256=None``): pooch downloads it without a hash check and
    ``RMLIB_DATA_DIR`` copies are read without one.
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
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import urllib.parse
import zipfile

import numpy as np
import pandas as pd

from ..errors import DataFileError  # noqa: F401 (raised here; kept importable from this module)
from ..paths import DATA_ENV_VAR, cache_dir, data_dir

ENV_VAR = DATA_ENV_VAR

_PAPER_REPO = "summerfieldlab/Christian_etal_2025_FAccT"
_PAPER_COMMIT = "42dc162d0f88825d67f22f64ecc45648a9a09a48"
_PAPER_RAW = f"https://raw.githubusercontent.com/{_PAPER_REPO}/{_PAPER_COMMIT}/"
_NLTK_OPINION_ZIP = (
    "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/opinion_lexicon.zip"
)

#: Short key -> the prompt, verbatim, that the EloEverything items answer.
ELO_PROMPTS: dict[str, str] = {
    "one_word_greatest": "What, in one word, is the greatest thing ever?",
    "greatest_ever": "What one single thing, person, or concept is the greatest ever?",
    "humans_most_prefer": "What is the single thing, person, or concept that humans most prefer?",
}


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
            None,  # exists upstream, hash never recorded: used unverified
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


def _remedies(entry: DataFile) -> str:
    return (
        f"Either set {ENV_VAR} to a folder that holds {entry.path!r} "
        f"(upstream: {entry.url}), or connect to the network so that rmlib can "
        "download it."
    )


def _verify(entry: DataFile, path: pathlib.Path) -> pathlib.Path:
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
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


def fetch(name: str) -> pathlib.Path:
    """Local path of the registered file ``name``, verified against its SHA-256.

    With ``RMLIB_DATA_DIR`` set, the file must be in that folder (at the
    registry's relative path). For an archive-backed entry (the Bing
    lexicon), the folder may instead hold the upstream archive, e.g.
    ``opinion_lexicon.zip``; then the member is returned from inside it
    (extracted into the download cache, never into the data folder).
    Without ``RMLIB_DATA_DIR``, the file is downloaded with pooch into the
    cache (``RMLIB_CACHE_DIR`` or ``pooch.os_cache("rmlib")``) and kept.

    Raises :class:`DataFileError` on a hash mismatch, a missing file or a
    failed download; the message names the file and the remedies.
    """
    entry = _entry(name)
    root = data_dir()
    if root is not None:
        path = root / entry.path
        if path.is_file():
            return _verify(entry, path)
        if entry.member is not None:
            archive_name = entry.url.rsplit("/", 1)[-1]
            for cand in (root / archive_name, root / pathlib.Path(entry.path).parent / archive_name):
                if cand.is_file():
                    dest = cache_dir() / "extracted" / entry.member
                    return _extract_member(entry, cand, dest)
        raise DataFileError(
            f"{entry.name}: {path} does not exist ({ENV_VAR}={root}). " + _remedies(entry)
        )
    return _download(entry)


def _download(entry: DataFile) -> pathlib.Path:
    import pooch

    cache = cache_dir()
    known = entry.url_sha256 if entry.member is not None else entry.sha256
    rel = pathlib.PurePosixPath(entry.path)
    if entry.member is not None:
        rel = rel.parent / urllib.parse.unquote(entry.url.rsplit("/", 1)[-1])
    try:
        got = pooch.retrieve(
            url=entry.url,
            known_hash=None if known is None else f"sha256:{known}",
            fname=rel.name,
            path=cache.joinpath(*rel.parent.parts),
            progressbar=False,
        )
    except ValueError as e:  # pooch: hash mismatch after download
        raise DataFileError(f"{entry.name}: downloaded file failed its hash check: {e}") from e
    except Exception as e:  # network errors of any kind (requests, OSError, ...)
        raise DataFileError(
            f"could not download {entry.name} ({entry.path}) from {entry.url}: "
            f"{type(e).__name__}: {e}. " + _remedies(entry)
        ) from e
    path = pathlib.Path(got)
    if entry.member is not None:
        return _extract_member(entry, path, cache / "extracted" / entry.member)
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
    raise ValueError(f"unknown EloEverything prompt {prompt!r}; choose one of: {choices}")


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

_BNC_FIELDS = ["word", "pos", "form", "freq", "range", "disp"]


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
        raise ValueError(f"rows must be 'lemma', 'forms', 'paper' or 'raw', got {rows!r}")
    with np.errstate(divide="ignore"):
        out["log_freq"] = np.log(out["freq"].to_numpy(dtype="float64"))
    return out
