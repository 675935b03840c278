"""The paper's quantitative claims (``findings.yaml``), by id.

``findings.yaml`` is project reference material, not upstream data: one
entry per claim of Christian et al. (2025) with ``id``, ``section``,
``claim``, ``data`` (what it needs: ``tokens``, ``elo``, ``fig2a``, ...),
and optionally ``published`` (a file of the published outputs),
``checked`` (what an independent recomputation found) and ``note``. It is
registered in :mod:`rmlib.tables.datasets` as ``"findings"`` without an
upstream URL and without a pinned hash (the project revises it); it is
looked up by :func:`rmlib.tables.datasets.reference_dir`:
``RMLIB_REFERENCE_DIR``, else ``$RMLIB_DATA_DIR/../reference`` (the shared
folder's layout), else ``../shared/reference`` beside a checkout; or pass
``path=`` (the file or its folder). Nothing is downloaded.

Chapters quote ``claim`` and put it beside their own numbers with
:func:`rmlib.stats.verdict.verdict`; ``checked`` is a fact to verify, not
text to copy.
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd

FIELDS = ("id", "section", "claim", "data", "published", "checked", "note")


def _path(path: str | os.PathLike | None, key: str = "findings", file_name: str = "findings.yaml") -> pathlib.Path:
    """A reference file: ``path`` (the file or its folder), else the registry entry ``key``."""
    if path is None:
        from rmlib.tables import datasets

        return datasets.fetch(key)
    p = pathlib.Path(path).expanduser()
    if p.is_dir():
        p = p / file_name
    if not p.is_file():
        raise FileNotFoundError(f"reference file {p} does not exist; pass the path of {file_name} "
                                "(or its folder), or set RMLIB_REFERENCE_DIR to its folder")
    return p


def load_findings(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """All claims, one row each, columns :data:`FIELDS` (missing fields empty), indexed by ``id``."""
    import yaml

    p = _path(path)
    with open(p, encoding="utf-8") as f:
        entries = yaml.safe_load(f)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{p}: expected a YAML list of mappings (one per claim)")
    bad = [i for i, e in enumerate(entries) if not e.get("id") or not e.get("claim")]
    if bad:
        raise ValueError(f"{p}: entries {bad} lack an 'id' or a 'claim'")
    ids = [str(e["id"]) for e in entries]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{p}: ids {dup} appear more than once")
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


FOLLOWUP_FIELDS = ("id", "section", "claim", "reported", "method", "released_data_enough", "flags")


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
    """The follow-up study's claims (``followup_findings.yaml``), one row each, indexed by ``id``.

    Columns :data:`FOLLOWUP_FIELDS` as one-line text (a ``reported``
    mapping becomes ``key: value; ...``). The file (project reference
    material, registered as ``"followup_findings"``) is found like
    ``findings.yaml`` (:func:`rmlib.tables.datasets.reference_dir`), or pass
    ``path`` (the file or its folder). ``attrs["design"]``: the file's
    ``design`` block as read.
    """
    import yaml

    p = _path(path, "followup_findings", "followup_findings.yaml")
    with open(p, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    claims = doc.get("claims") if isinstance(doc, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, dict) and c.get("id") for c in claims):
        raise ValueError(f"{p}: expected a mapping with a 'claims' list of entries that have an 'id'")
    ids = [str(c["id"]) for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{p}: ids {dup} appear more than once")
    df = pd.DataFrame([{k: _text(c.get(k)) for k in FOLLOWUP_FIELDS} for c in claims], columns=list(FOLLOWUP_FIELDS))
    df = df.set_index("id")
    df.attrs = {"source": str(p), "design": doc.get("design", {})}
    return df


def printed_table3(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Table 3 as printed in the paper's text (arXiv 2506.07326), cells as strings.

    The released ``tables/output/table_3_distribution_moments.csv``
    (:func:`rmlib.tables.datasets.published_table` ``("3")``) does not
    match it exactly: five cells of four models differ in the third decimal
    (e.g. S-Gem-27B-v0.2 skewness 0.071 printed, 0.072 released), and
    F-Lla-8B-v0.1's variance is printed as ``<0.001`` (``0.0`` released).
    Show both. ``path``: the text file or its folder (default: the reference
    folder, see :func:`rmlib.tables.datasets.reference_dir`).
    """
    p = _path(path, "paper_text", "paper_2506.07326_text.txt")
    lines = p.read_text(encoding="utf-8").splitlines()
    head = [i for i, line in enumerate(lines) if line.replace(" ", "") == "Model|Mean|Variance|Skewness|"]
    if len(head) != 1:
        raise ValueError(f"{p}: expected one 'Model | Mean | Variance | Skewness |' table, found {len(head)}")
    rows = []
    for line in lines[head[0] + 1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4:
            break
        if set("".join(cells)) <= set("-"):
            continue
        rows.append(cells)
    df = pd.DataFrame(rows, columns=["Model", "Mean", "Variance", "Skewness"])
    df.attrs["source"] = str(p)
    return df


__all__ = ["FIELDS", "FOLLOWUP_FIELDS", "finding", "load_findings", "load_followup_findings", "printed_table3"]
