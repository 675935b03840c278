"""The papers' quantitative claims, by id, from the claims files rmlib ships.

``rmlib/resources/claims/`` holds one file per paper (see its README): the
FAccT paper's claims (:data:`FACCT_FILE`, read by :func:`load_findings`,
:func:`finding` and :func:`printed_table3`) and the follow-up study's
(:data:`FOLLOWUP_FILE`, read by :func:`load_followup_findings`). Their
sentences are rmlib's paraphrase; their numbers are the papers'.

Each loader takes ``path=`` (a claims file or the folder holding it) to read
other claims; without it, a folder named by ``RMLIB_REFERENCE_DIR``
(:data:`ENV_VAR`) is used when set, else the shipped file. Nothing is
downloaded.

A claim's printed numbers sit in its ``values`` mapping (name -> the number
as printed, a string): :func:`claim` reads one claim of either paper and
:func:`printed` one of its numbers. Chapters put them beside their own
numbers with :func:`rmlib.viz.verdicts.judge`.
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd

from ..errors import InputError

#: The FAccT paper's claims file (a YAML list of mappings, one per claim).
FACCT_FILE = "facct2025.yaml"
#: The follow-up study's claims file (a YAML mapping with a ``claims`` list).
FOLLOWUP_FILE = "followup2026.yaml"
#: Environment variable naming a folder of claims files that replace the shipped ones.
ENV_VAR = "RMLIB_REFERENCE_DIR"

FIELDS = ("id", "section", "claim", "data", "published", "checked", "note")


def claims_path(file_name: str, path: str | os.PathLike | None = None) -> pathlib.Path:
    """The claims file to read: ``path`` (the file or its folder), else ``$RMLIB_REFERENCE_DIR/<file_name>``
    when that variable is set, else the file shipped in ``rmlib/resources/claims``."""
    if path is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if not env:
            from .. import resources

            return resources.path(f"claims/{file_name}")
        path, how = env, f"{ENV_VAR}={env}"
    else:
        how = f"path={str(path)!r}"
    p = pathlib.Path(path).expanduser()
    if p.is_dir():
        p = p / file_name
    if not p.is_file():
        raise InputError(f"claims file {p} does not exist ({how}); pass the path of a {file_name} (or its folder), "
                         f"or unset {ENV_VAR} to read the claims rmlib ships")
    return p


def _read(p: pathlib.Path):
    import yaml

    with open(p, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _check_ids(p: pathlib.Path, entries: list) -> None:
    ids = [str(e["id"]) for e in entries]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"{p}: ids {dup} appear more than once")


def _facct_entries(path) -> tuple[pathlib.Path, list[dict]]:
    p = claims_path(FACCT_FILE, path)
    entries = _read(p)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{p}: expected a YAML list of mappings (one per claim)")
    bad = [i for i, e in enumerate(entries) if not e.get("id") or not e.get("claim")]
    if bad:
        raise InputError(f"{p}: entries {bad} lack an 'id' or a 'claim'")
    _check_ids(p, entries)
    return p, entries


def load_findings(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The FAccT paper's claims, one row each, columns :data:`FIELDS` (missing fields empty), indexed by ``id``.

    ``attrs["source"]``: the file read (see :func:`claims_path`).
    """
    p, entries = _facct_entries(path)
    df = pd.DataFrame([{k: ("" if e.get(k) is None else str(e.get(k))) for k in FIELDS} for e in entries],
                      columns=list(FIELDS))
    df = df.set_index("id")
    df.attrs["source"] = str(p)
    return df


def finding(claim_id: str, path: str | os.PathLike | None = None) -> dict:
    """One claim as a dict (``id`` included); a clear error listing the ids for an unknown one."""
    df = load_findings(path)
    if claim_id not in df.index:
        raise KeyError(f"no claim {claim_id!r} in {df.attrs['source']}; ids: {list(df.index)}")
    return {"id": claim_id, **df.loc[claim_id].to_dict()}


FOLLOWUP_FIELDS = ("id", "section", "claim", "reported", "method", "data", "released_data_enough", "flags")


def _text(value) -> str:
    """A YAML value as one line of text: mappings as ``key: value; ...``, lists joined by ``; ``."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "; ".join(_text(v) for v in value)
    return str(value)


def load_followup_findings(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The follow-up study's claims, one row each, indexed by ``id``.

    Columns :data:`FOLLOWUP_FIELDS` as one-line text (the ``reported``
    mapping, source -> numbers, becomes ``source: numbers; ...``).
    ``path``: see :func:`claims_path`. ``attrs``: ``source`` (the file
    read) and ``design`` (the file's ``design`` block, if any).
    """
    p = claims_path(FOLLOWUP_FILE, path)
    doc = _read(p)
    claims = doc.get("claims") if isinstance(doc, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, dict) and c.get("id") for c in claims):
        raise InputError(f"{p}: expected a mapping with a 'claims' list of entries that have an 'id'")
    _check_ids(p, claims)
    df = pd.DataFrame([{k: _text(c.get(k)) for k in FOLLOWUP_FIELDS} for c in claims], columns=list(FOLLOWUP_FIELDS))
    df = df.set_index("id")
    df.attrs = {"source": str(p), "design": doc.get("design") or {}}
    return df


def printed_table3(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Table 3 as printed in the paper (arXiv 2506.07326), cells as strings.

    Read from the ``printed_table`` of claim ``table3_skew`` (``path``: see
    :func:`claims_path`). The released
    ``tables/output/table_3_distribution_moments.csv``
    (:func:`rmlib.tables.paper_release.published_table` ``("3")``) does not
    match it exactly: five cells of four models differ in the third decimal
    (e.g. S-Gem-27B-v0.2 skewness 0.071 printed, 0.072 released), and
    F-Lla-8B-v0.1's variance is printed as ``<0.001`` (``0.0`` released).
    Show both.
    """
    p, entries = _facct_entries(path)
    table = next((e.get("printed_table") for e in entries if e["id"] == "table3_skew"), None)
    columns = ["Model", "Mean", "Variance", "Skewness"]
    rows = table.get("rows") if isinstance(table, dict) else None
    if (not isinstance(table, dict) or table.get("columns") != columns or not isinstance(rows, list)
            or not all(isinstance(r, list) and len(r) == len(columns) for r in rows)):
        raise InputError(f"{p}: claim 'table3_skew' needs a 'printed_table' with columns {columns} and rows "
                         f"of {len(columns)} cells")
    df = pd.DataFrame([[str(c) for c in r] for r in rows], columns=columns)
    df.attrs["source"] = str(p)
    return df


#: The papers whose claims rmlib ships: name -> claims file.
PAPERS = {"facct2025": FACCT_FILE, "followup2026": FOLLOWUP_FILE}


def claim(paper: str, claim_id: str, path: str | os.PathLike | None = None) -> dict:
    """One claim of ``paper`` (a key of :data:`PAPERS`) as a dict: ``id``, ``paper``, ``section``,
    ``claim`` (the sentence), ``values`` (name -> the number as printed, a string; empty when the
    claim prints none) and ``source`` (the file read). ``path``: see :func:`claims_path`.
    Unknown papers, ids and malformed ``values`` are an InputError naming what exists."""
    if paper not in PAPERS:
        raise InputError(f"no claims file for paper {paper!r}; papers: {sorted(PAPERS)}")
    if paper == "facct2025":
        p, entries = _facct_entries(path)
    else:
        p = claims_path(FOLLOWUP_FILE, path)
        doc = _read(p)
        entries = doc.get("claims") if isinstance(doc, dict) else None
        if not isinstance(entries, list) or not all(isinstance(c, dict) and c.get("id") for c in entries):
            raise InputError(f"{p}: expected a mapping with a 'claims' list of entries that have an 'id'")
    found = [e for e in entries if str(e.get("id")) == claim_id]
    if not found:
        raise InputError(f"no claim {claim_id!r} in {p}; ids: {[str(e.get('id')) for e in entries]}")
    e = found[0]
    values = e.get("values") or {}
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise InputError(f"{p}: claim {claim_id!r} has 'values' that are not a mapping of name -> the number "
                         "as printed, quoted (e.g. t: \"2.6\")")
    return {"id": claim_id, "paper": paper, "section": _text(e.get("section")),
            "claim": _text(e.get("claim")), "values": dict(values), "source": str(p)}


def printed(paper: str, claim_id: str, name: str, path: str | os.PathLike | None = None) -> str:
    """The number ``name`` of claim ``claim_id`` as ``paper`` printed it (a string such as ``"0.29"``,
    ``"< .001"``, ``"0.22-0.39"``), from the claims file; an InputError lists the claim's values when
    ``name`` is not one of them."""
    c = claim(paper, claim_id, path)
    if name not in c["values"]:
        raise InputError(f"claim {claim_id!r} of {paper} prints no value {name!r}; its values: "
                         f"{sorted(c['values'])} (add it to {c['source']}, quoting the paper)")
    return c["values"][name]


__all__ = ["ENV_VAR", "PAPERS", "claim", "printed", "FACCT_FILE", "FIELDS", "FOLLOWUP_FIELDS", "FOLLOWUP_FILE", "claims_path", "finding",
           "load_findings", "load_followup_findings", "printed_table3"]
