"""A result cache for deterministic long computations (JSON on disk, never pickle).

The score tables (:mod:`rmlib.tables.store`) cache what a model says about tokens; this
module caches what is *computed from* scores when it is slow and deterministic: chapter 5's
search comparison and longer GCG searches, chapter 7's held-out taus, gaps and ablation.

A record lives at ``<scores dir>/memo/<name>__<key>.json`` (the score tables' folder,
:func:`rmlib.paths.scores_dir`: ``data/scores/memo`` in a checkout). ``key`` is the SHA-256
of the canonical JSON of everything the result depends on: the function's name, its
``version`` constant (bump it when the computation changes), the rmlib version and the
caller's ``facts`` (scorer identity, prompts, every setting of the search, seeds...). A
record holds the key's facts, when the result was computed and how long that took
(``seconds``: the original computation's wall time, which pages show as such), and the
result itself in a tagged JSON form that rebuilds DataFrames (dtypes, index, ``attrs``),
NumPy arrays and scalars, tuples, and rmlib's result dataclasses (:data:`KNOWN_CLASSES`, or
others allowed with :func:`register`) field by field. Nothing is ever unpickled, and only those
classes are rebuilt.

Records are written atomically (temp file in the same folder, then ``os.replace``). A record
that cannot be read, is not valid JSON, belongs to other facts or does not decode is
recomputed and overwritten, with a warning naming the file. ``RMLIB_RECOMPUTE=1`` (or
``recompute=True``) computes afresh and overwrites the record.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import pathlib
import re
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import InputError
from ..files import atomic_write

__all__ = ["RECOMPUTE_ENV_VAR", "KNOWN_CLASSES", "Memo", "cached", "canonical", "decode", "encode", "memo_dir",
           "memo_key", "recompute_requested", "register", "scorer_facts", "timed"]

#: Set to 1 (true/yes) to recompute every cached result and overwrite its record.
RECOMPUTE_ENV_VAR = "RMLIB_RECOMPUTE"
#: The layout of a record file (bumped if the envelope or the tagged JSON changes).
FORMAT = 1
_TAG = "__rmlib__"
_CLASSES: dict[str, type] = {}
#: rmlib's result dataclasses that records may hold, imported on first use (a fixed list: a record
#: can never name a module to import).
KNOWN_CLASSES = ("rmlib.engine.search_config.SearchConfig", "rmlib.engine.search.SearchResult",
                 "rmlib.engine.shortlists.Shortlist", "rmlib.engine.gcg.GCGResult")


# --------------------------------------------------------------------------- keys
def canonical(obj):
    """``obj`` as plain JSON data for a key: dataclasses as their fields, NumPy as Python, tuples as
    lists, dict keys as strings (sorted when dumped). Anything else raises ``TypeError`` naming it, so a
    key never silently depends on a ``repr``."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else repr(f)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__class__": type(obj).__name__,
                **{f.name: canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray, pd.Index)):
        return [canonical(v) for v in list(obj)]
    if isinstance(obj, pathlib.PurePath):
        return str(obj)
    raise TypeError(f"cannot key a result cache on a {type(obj).__name__} ({obj!r:.80}): pass plain data "
                    "(numbers, strings, lists, dicts, dataclasses)")


def memo_key(name: str, version: int, facts: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of the name, the version, the rmlib version and ``facts``."""
    blob = {"name": name, "version": version, "rmlib_version": __version__, "format": FORMAT,
            "facts": canonical(facts)}
    return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()).hexdigest()


def memo_dir(cache_dir=None) -> pathlib.Path:
    """``<cache_dir>/memo``; by default beside the score tables (``RMLIB_SCORES_DIR``, ``data/scores``)."""
    from ..paths import scores_dir

    return (pathlib.Path(cache_dir) if cache_dir else scores_dir()) / "memo"


def recompute_requested() -> bool:
    """True when ``RMLIB_RECOMPUTE`` asks for fresh computations (1, true, yes, on)."""
    value = os.environ.get(RECOMPUTE_ENV_VAR, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise InputError(f"{RECOMPUTE_ENV_VAR}={value!r}: use 1 to recompute cached results, 0 (or unset) to reuse them")


def scorer_facts(scorer, prompts) -> list[dict] | None:
    """What identifies a scorer's scores of ``prompts`` (one dict per prompt): the score tables' key
    fields (model id and revision, for a ``trained:`` model its training key; dtype, scorer kind,
    chat frame, scoring revision, reference model, the forward: transformers' or rmlib's lite one) plus the
    device type and batch size. None for a
    scorer without provenance (then nothing can be cached for it)."""
    from .store import KEY_FIELDS

    try:
        provs = [scorer.provenance(p, "token") for p in prompts]
    except Exception:  # a scorer without provenance facts: not cacheable
        return None
    loaded = getattr(scorer, "loaded", None) or getattr(getattr(scorer, "policy", None), "loaded", None)
    device = getattr(getattr(loaded, "device", None), "type", None)
    return [{**{k: prov.get(k) for k in KEY_FIELDS}, "device": device,
             "batch_size": getattr(scorer, "batch_size", None)} for prov in provs]


# --------------------------------------------------------------------------- tagged JSON
def register(cls: type) -> type:
    """Allow a dataclass to be stored and rebuilt field by field (usable as a decorator)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    _CLASSES[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


def _class(name: str) -> type | None:
    """A registered class, or one of :data:`KNOWN_CLASSES` (imported now), else None."""
    if name not in _CLASSES and name in KNOWN_CLASSES:
        import importlib

        module, _, attr = name.rpartition(".")
        _CLASSES[name] = getattr(importlib.import_module(module), attr)
    return _CLASSES.get(name)


def _tag(kind: str, **fields) -> dict:
    return {_TAG: kind, **fields}


def _encode_column(s: pd.Series) -> dict:
    dtype = s.dtype
    if dtype == object:
        return _tag("column", dtype="object", values=[encode(v) for v in s.tolist()])
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":  # exact as Python values (json writes NaN, inf)
        return _tag("column", dtype=str(dtype), values=s.tolist())
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and _named(dtype):  # str, string, Int64, boolean...
        return _tag("column", dtype=str(dtype), values=[None if pd.isna(v) else encode(v) for v in s.tolist()])
    raise TypeError(f"cannot store a column of dtype {dtype} (column {s.name!r}) in the result cache")


def _named(dtype) -> bool:
    """True when pandas rebuilds exactly this dtype from its name (pandas' str, string, Int64, boolean...)."""
    try:
        return pd.api.types.pandas_dtype(str(dtype)) == dtype
    except TypeError:
        return False


def _decode_column(d: dict) -> tuple[list, str]:
    dtype = d["dtype"]
    values = [decode(v) for v in d["values"]] if dtype == "object" else d["values"]
    return values, dtype


def _encode_index(idx: pd.Index) -> dict:
    if isinstance(idx, pd.RangeIndex):
        return _tag("range", start=idx.start, stop=idx.stop, step=idx.step, name=encode(idx.name))
    if isinstance(idx, pd.MultiIndex):
        raise TypeError("cannot store a MultiIndex in the result cache: reset_index() first")
    return _tag("index", name=encode(idx.name), column=_encode_column(pd.Series(idx, dtype=idx.dtype)))


def _decode_index(d: dict) -> pd.Index:
    if d[_TAG] == "range":
        return pd.RangeIndex(d["start"], d["stop"], d["step"], name=decode(d["name"]))
    values, dtype = _decode_column(d["column"])
    return pd.Index(values, dtype=dtype, name=decode(d["name"]))


def encode(obj):
    """``obj`` as JSON data that :func:`decode` turns back into an equal object (types kept)."""
    if obj is None or isinstance(obj, (bool, str, int, float)) and not isinstance(obj, np.generic):
        return obj
    if isinstance(obj, np.generic):
        return _tag("scalar", dtype=obj.dtype.str, value=obj.item())
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, tuple):
        return _tag("tuple", items=[encode(v) for v in obj])
    if isinstance(obj, dict):
        return _tag("dict", items=[[encode(k), encode(v)] for k, v in obj.items()])
    if isinstance(obj, np.ndarray):
        if obj.dtype == object or obj.dtype.kind not in "biufU":
            raise TypeError(f"cannot store a NumPy array of dtype {obj.dtype} in the result cache")
        return _tag("ndarray", dtype=obj.dtype.str, shape=list(obj.shape), data=obj.ravel().tolist())
    if isinstance(obj, pd.DataFrame):
        if not all(isinstance(c, str) for c in obj.columns):
            raise TypeError("cannot store a DataFrame with non-string column names in the result cache")
        return _tag("frame", columns=[[c, _encode_column(obj[c])] for c in obj.columns],
                    index=_encode_index(obj.index), attrs=encode(dict(obj.attrs)))
    if isinstance(obj, pd.Series):
        return _tag("series", name=encode(obj.name), column=_encode_column(obj), index=_encode_index(obj.index),
                    attrs=encode(dict(obj.attrs)))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if _class(name) is not type(obj):
            raise TypeError(f"{name} is not registered with rmlib.tables.memo.register: it cannot be cached")
        return _tag("dataclass", cls=name, fields={f.name: encode(getattr(obj, f.name))
                                                   for f in dataclasses.fields(obj)})
    raise TypeError(f"cannot store a {type(obj).__name__} in the result cache")


def decode(data):
    """The object :func:`encode` made ``data`` from (registered dataclasses only; no code is loaded)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    kind = data.get(_TAG)
    if kind == "scalar":
        return np.dtype(data["dtype"]).type(data["value"])
    if kind == "tuple":
        return tuple(decode(v) for v in data["items"])
    if kind == "dict":
        return {decode(k): decode(v) for k, v in data["items"]}
    if kind == "ndarray":
        return np.asarray(data["data"], dtype=np.dtype(data["dtype"])).reshape(data["shape"])
    if kind == "frame":
        index = _decode_index(data["index"])
        cols = {}
        for name, col in data["columns"]:
            values, dtype = _decode_column(col)
            cols[name] = pd.Series(values, dtype=dtype, index=index)
        df = pd.DataFrame(cols, index=index)
        if not cols:
            df = pd.DataFrame(index=index)
        df.attrs.update(decode(data["attrs"]))
        return df
    if kind == "series":
        values, dtype = _decode_column(data["column"])
        s = pd.Series(values, dtype=dtype, index=_decode_index(data["index"]), name=decode(data["name"]))
        s.attrs.update(decode(data["attrs"]))
        return s
    if kind == "dataclass":
        cls = _class(data["cls"])
        if cls is None:
            raise InputError(f"the record names the class {data['cls']!r}, which is not registered")
        return cls(**{k: decode(v) for k, v in data["fields"].items()})
    raise InputError(f"unknown tag {kind!r} in a result-cache record")


# --------------------------------------------------------------------------- the cache
@dataclasses.dataclass
class Memo:
    """Where a result came from. ``hit``: read from the record at ``path``; ``seconds``: the wall time
    of the original computation (not of reading it back); ``computed_at``: when that ran (UTC)."""

    name: str
    key: str
    path: pathlib.Path | None
    hit: bool
    seconds: float
    computed_at: str

    def sentence(self) -> str:
        """One short sentence for a page: where the result came from and what it cost originally."""
        when = self.computed_at.replace("T", " ")[:16] + " UTC"
        if self.hit:
            return f"read from the result cache (computed {when} in {self.seconds:.1f} s)"
        return f"computed in {self.seconds:.1f} s"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "")


def _file_name(name: str, key: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60]
    return f"{slug}__{key[:24]}.json"


def _read(path: pathlib.Path, name: str, key: str):
    """``(value, record)`` from a valid record, else None after a warning naming the file and why."""
    why = None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        why = f"unreadable ({type(err).__name__})"
    else:
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            why = "not a result-cache record of this rmlib"
        elif record.get("key") != key or record.get("name") != name:
            why = "written for other inputs"
        else:
            try:
                return decode(record["result"]), record
            except Exception as err:  # a damaged or foreign payload
                why = f"its result does not decode ({type(err).__name__}: {err})"
    warnings.warn(f"result cache: recomputing {path}: {why}; the record will be overwritten", stacklevel=4)
    return None


def _write(path: pathlib.Path, record: dict) -> bool:
    """Write atomically; on an unwritable folder warn and return False (the result is still returned)."""
    try:
        atomic_write(path, json.dumps(record, ensure_ascii=False, allow_nan=True))
        return True
    except OSError as err:
        warnings.warn(f"result cache: cannot write {path} ({err.strerror or err}); the result is not cached "
                      f"(set RMLIB_SCORES_DIR to a writable folder to cache it)", stacklevel=3)
        return False


def cached(name: str, version: int, facts: dict | None, compute: Callable[[], object], *,
           recompute: bool | None = None, keep: Callable[[object], bool] | None = None, cache_dir=None,
           enabled: bool = True) -> tuple[object, Memo]:
    """``(value, memo)``: the value of ``compute()`` for these facts, from the record when there is a
    valid one, else computed (timed), stored and returned.

    ``facts`` must hold everything the value depends on besides ``name``/``version``/the rmlib
    version; ``facts=None`` (nothing identifies the inputs, or the value depends on the clock) or
    ``enabled=False`` computes and times the value without the cache (:func:`timed`). ``recompute``
    (default: ``RMLIB_RECOMPUTE``) computes afresh and overwrites the record. ``keep(value)`` False: the value is returned but not stored (a search stopped by Ctrl-C is
    not the computation's result). The value must be storable by :func:`encode` (else ``TypeError``,
    before any writing). A hit returns the stored value rebuilt (an equal object, not the same one).
    """
    if facts is None or not enabled:
        return timed(name, compute)
    key = memo_key(name, version, facts)
    path = memo_dir(cache_dir) / _file_name(name, key)
    if recompute is None:
        recompute = recompute_requested()
    if not recompute and path.exists():
        got = _read(path, name, key)
        if got is not None:
            value, record = got
            return value, Memo(name, key, path, True, float(record["seconds"]), str(record["computed_at"]))
    value, memo = timed(name, compute)
    if keep is not None and not keep(value):
        return value, memo
    seconds, started = memo.seconds, memo.computed_at
    record = {"format": FORMAT, "name": name, "version": version, "key": key, "rmlib_version": __version__,
              "computed_at": started, "seconds": seconds, "facts": canonical(facts), "result": encode(value)}
    _write(path, record)
    return value, dataclasses.replace(memo, key=key, path=path)


def timed(name: str, compute: Callable[[], object]) -> tuple[object, Memo]:
    """``(compute(), memo)`` with no cache: the memo says when it ran and how long it took."""
    started, t0 = _now(), time.perf_counter()
    value = compute()
    return value, Memo(name, "", None, False, time.perf_counter() - t0, started)
