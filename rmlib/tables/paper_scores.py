"""The paper's released per-model score tables, read as one long table.

The paper published, per reward model, a CSV of every token's score under
its three prompts (``<org>--<name>.csv``; columns ``token_id, token_name,
token_decoded, greatest, best, worst``). ``python -m rmlib import-paper-csv``
turns such a file into the Parquet tables of :mod:`rmlib.tables.store`.
:func:`paper_scores` reads a folder holding either kind.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

import pandas as pd

from ..registry import paper_models
from .results import LONG_COLUMNS
from ..prompts import PAPER_PROMPTS
from .store import import_paper_csv, load_scores
from ..errors import InputError

__all__ = ["paper_scores", "combine"]


def paper_scores(folder, prompts: Sequence[str] | None = None) -> pd.DataFrame:
    """The score tables in ``folder`` (the paper's CSVs and imported Parquet tables) as one long table.

    ``prompts`` must be the paper's three prompts (the default). Returns
    columns :data:`rmlib.tables.results.LONG_COLUMNS`; ``attrs["provenance"]``
    lists each table's provenance with the key ``spec`` (its source).
    """
    folder = pathlib.Path(folder).expanduser()
    prompts = list(PAPER_PROMPTS.values()) if prompts is None else list(prompts)
    if not folder.is_dir():
        raise FileNotFoundError(f"paper_scores_dir: {folder} is not a folder (relative paths start in "
                                f"{pathlib.Path.cwd()}); give the folder holding the paper's CSVs")
    if prompts != list(PAPER_PROMPTS.values()):
        raise InputError("the paper's scores answer the paper's three prompts: leave `prompts` at its "
                         "default when paper_scores_dir is set")
    hub = {h.replace("/", "--").lower(): h for h in paper_models()["hub_id"]}
    tables = []
    for path in sorted(folder.glob("*.csv")):
        if path.stem.lower() not in hub:
            raise InputError(f"{path.name}: name it after one of the paper's RMs, <org>--<name>.csv, "
                             f"e.g. {next(iter(hub))}.csv")
        tables += list(import_paper_csv(path, hub[path.stem.lower()]).values())
    for path in sorted(folder.glob("*.parquet")):
        table = load_scores(path)
        if table.attrs["provenance"].get("prompt") in prompts:
            tables.append(table)
    if not tables:
        raise InputError(f"paper_scores_dir: no score CSV or Parquet table for these prompts in {folder}")
    rows, prov = [], []
    for table in tables:
        p = table.attrs["provenance"]
        rows.append(table[["token_id", "token", "decoded", "score"]].assign(model=p["model_id"], prompt=p["prompt"]))
        prov.append(dict(p, spec=str(p.get("source", "imported"))))
    out = pd.concat(rows, ignore_index=True)[list(LONG_COLUMNS)]
    out.attrs["provenance"] = prov
    return out


def combine(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Long tables (scored live, read from the paper's files) as one; ``attrs["provenance"]`` joined.

    Raises ``ValueError`` when a (model, prompt) table comes twice.
    """
    parts = list(parts)
    if not parts:
        raise InputError("nothing to combine: give at least one long score table")
    provenance = [p for part in parts for p in part.attrs["provenance"]]
    long = pd.concat(parts, ignore_index=True)
    long.attrs = {}
    if long.groupby(["model", "prompt"]).ngroups != len(provenance):
        raise InputError("a model is both scored live and imported from paper_scores_dir: give it once")
    long.attrs["provenance"] = provenance
    return long
