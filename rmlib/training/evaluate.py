"""How good is a reward model trained here? Held-out alignment, baselines, prompt wording, data quantity.

Everything is computed on the *test items* of a training run (the items no
training pair touched), so the trained RMs, the paper's ten RMs (their
released scores in the EloEverything CSV of the paper's Sec. 4 prompt) and
the baselines are ranked on the same items:

* ``length``: the item's length in characters;
* ``bnc_log_freq``: mean over the item's words of ``log(1 + BNC frequency
  per million)`` (a word the BNC list lacks counts as 0);
* ``untrained head``: the same architecture and backbone with the seeded
  random head the training started from.

Each tau is Kendall's tau-b with the human Elo rating, with a percentile
bootstrap interval over items (:func:`rmlib.stats.kendall_tau_b` with
resample weights).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..engine.trained_pointers import read_training_info
from .classifier import build_classifier
from .configuration import TrainConfig
from .preferences import load_preferences
from .train import train_reward_model
from ..stats.bigtwo import bigtwo_scores, hedges_g
from ..tables.lexicons import bigtwo_lists
from ..stats.resampling import bootstrap_weights
from ..stats.tau import kendall_tau_b
from ..errors import InputError

HUMAN = "human"
#: Bumped whenever a change here changes a held-out comparison, a gap or an ablation row (part of the
#: result-cache key of chapter 7's tables, :mod:`rmlib.tables.memo`).
EVAL_REVISION = 3  # 3: the other prompt on a seeded sample of test items, paired with the training prompt's tau


def score_items(folder, prompt: str, texts, progress: bool = False) -> np.ndarray:
    """Scores of ``texts`` as responses to ``prompt`` by a trained RM folder (rmlib's scorer), through the
    score store's text tables (:func:`rmlib.tables.store.score_texts`): texts this folder already scored
    under this prompt are read back, bit for bit what scoring them again gives."""
    from ..engine.scorers import load_scorer
    from ..tables.store import score_texts

    return score_texts(load_scorer(str(folder)), prompt, list(texts), progress=progress)["score"].to_numpy()


def untrained_scores(base: str, prompt: str, texts, seed: int = 0) -> np.ndarray:
    """Scores by the same architecture with the seeded random head a run starts from."""
    from ..engine.models import LoadedModel
    from ..engine.scorers import Scorer

    model, tok, template, loaded = build_classifier(base, seed=seed)
    lm = LoadedModel(f"untrained-head:{base}", loaded.model_id, loaded.revision, "classifier", model, tok, "float32")
    return Scorer(lm, chat_template=template).score_texts(prompt, list(texts))["score"].to_numpy()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower())


def baselines(texts) -> pd.DataFrame:
    """Item length (characters) and mean BNC log frequency of the item's words."""
    from ..tables.word_frequencies import bnc_frequencies

    bnc = bnc_frequencies("lemma")
    freq = dict(zip(bnc["word"], bnc["freq"].astype(float)))
    texts = list(texts)

    def logfreq(t):
        ws = _words(t)
        return float(np.mean([np.log1p(freq.get(w, 0.0)) for w in ws])) if ws else 0.0

    return pd.DataFrame({"length": [float(len(t)) for t in texts], "bnc_log_freq": [logfreq(t) for t in texts]},
                        index=pd.Index(texts, name="name"))


def test_items(info: dict) -> pd.DataFrame:
    """The run's test items with human Elo and the paper's ten released RM scores (wide, nicknamed)."""
    from ..stats.elo import elo_wide
    from ..tables.paper_release import eloeverything

    wide = elo_wide(eloeverything("greatest_ever"))
    names = info["split"]["test_items"]
    missing = [n for n in names if n not in wide.index]
    if missing:
        raise InputError(f"{len(missing)} test items are not EloEverything items (e.g. {missing[:3]}): "
                         "held-out comparison with the paper's RMs needs a run trained on EloEverything")
    return wide.loc[names]


def tau_with_ci(wide: pd.DataFrame, human: str = HUMAN, n_boot: int = 1000, seed: int = 0,
                level: float = 0.95) -> pd.DataFrame:
    """Kendall tau-b of every column with ``human``, with a percentile bootstrap interval over items."""
    d = wide.dropna()
    W = bootstrap_weights(len(d), n_boot, seed)
    a = (1 - level) / 2
    rows = []
    for col in d.columns:
        if col == human:
            continue
        t = kendall_tau_b(d[col], d[human], W)
        rows.append({"ranker": col, "tau": kendall_tau_b(d[col], d[human]), "low": np.nanquantile(t, a),
                     "high": np.nanquantile(t, 1 - a), "n_items": len(d)})
    return pd.DataFrame(rows).set_index("ranker")


def heldout_comparison(runs: dict, *, n_boot: int = 1000, seed: int = 0, alt_prompt: str | None = None,
                       alt_items: int = 0, untrained: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Trained RMs beside the paper's RMs and the baselines on the same held-out items.

    ``runs`` maps a label to a trained folder (all trained on the same split).
    Returns ``(wide, taus)``: the wide table (index item, ``human`` then one
    column per ranker) and one row per ranker: ``tau, low, high, n_items,
    source`` (``trained here``, ``paper (released scores)``, ``baseline``,
    ``trained here, other prompt``). With ``alt_prompt`` each run is also
    scored under that prompt, as the ranker ``<name>, other prompt``: on
    ``alt_items`` test items drawn at random (seeded by ``seed``; 0, or as many
    as there are test items: every one), its column NaN on the others. Its tau
    is taken on those items, and beside it, in ``tau_training_prompt``, the
    same run's tau under its training prompt on the same items (a paired
    comparison); every other ranker's tau is taken on every test item.
    """
    if alt_items < 0:
        raise InputError(f"alt_items must be 0 (every test item) or a positive number of test items, not {alt_items}")
    infos = {name: read_training_info(folder) for name, folder in runs.items()}
    splits = {json_key(i["split"]["test_items"]) for i in infos.values()}
    if len(splits) != 1:
        raise InputError("the runs were trained on different splits: compare runs with the same split seed")
    first = next(iter(infos.values()))
    wide = test_items(first)
    texts = list(wide.index)
    paper = [c for c in wide.columns if c != HUMAN]
    source = {c: "paper (released scores)" for c in paper}
    out = wide[[HUMAN]].copy()
    other = {}  # other-prompt ranker -> the run it re-scores
    sample = np.arange(len(texts))
    if alt_prompt and 0 < alt_items < len(texts):
        sample = np.sort(np.random.default_rng(seed).choice(len(texts), alt_items, replace=False))
    for name, folder in runs.items():
        # recorded at training time from the same computation rmlib's scorer runs (tests check they agree)
        recorded = infos[name].get("test_scores")
        out[name] = recorded if recorded is not None else score_items(folder, infos[name]["prompt"], texts)
        source[name] = "trained here"
    for name, folder in runs.items() if alt_prompt else ():
        label = f"{name}, other prompt"
        column = np.full(len(texts), np.nan)
        column[sample] = score_items(folder, alt_prompt, [texts[i] for i in sample])
        out[label] = column
        source[label] = "trained here, other prompt"
        other[label] = name
    for c in paper:
        out[c] = wide[c]
    if untrained:
        for name, info in infos.items():
            label = f"{name} untrained head"
            recorded = info.get("test_scores_untrained_head")
            out[label] = (recorded if recorded is not None
                          else untrained_scores(info["base"], info["prompt"], texts, seed=info["seed"]))
            source[label] = "baseline"
    base = baselines(texts)
    for c in base.columns:
        out[c] = base[c].to_numpy()
        source[c] = "baseline"
    taus = tau_with_ci(out.drop(columns=list(other)), n_boot=n_boot, seed=seed)
    taus["tau_training_prompt"] = np.nan  # filled for the other-prompt rankers only
    for label, name in other.items():
        paired = tau_with_ci(out[[HUMAN, label, name]].dropna(), n_boot=n_boot, seed=seed)
        taus.loc[label] = paired.loc[label]
        taus.loc[label, "tau_training_prompt"] = paired.loc[name, "tau"]
    taus["n_items"] = taus["n_items"].astype(int)
    taus["source"] = [source[r] for r in taus.index]
    out.attrs["prompt"] = first["prompt"]
    return out, taus


def json_key(items) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(list(items)).encode()).hexdigest()


def bigtwo_words(lists=None) -> pd.DataFrame:
    """The Big Two word lists as plain words (prefix patterns ``x*`` left out): columns word, dimension."""
    lists = bigtwo_lists() if lists is None else lists
    rows = [(w, dim) for dim in ("agency", "communion") for w in lists[dim] if w and not w.endswith("*")]
    df = pd.DataFrame(rows, columns=["word", "dimension"]).drop_duplicates("word", keep=False)
    return df.reset_index(drop=True)


def bigtwo_table(folder, prompt: str, words: pd.DataFrame | None = None) -> pd.DataFrame:
    """A trained RM's scores of the Big Two words (columns decoded, dimension, score)."""
    words = bigtwo_words() if words is None else words
    scores = score_items(folder, prompt, words["word"].tolist())
    return pd.DataFrame({"decoded": words["word"], "dimension": words["dimension"], "score": scores})


def gap_with_ci(table: pd.DataFrame, n_boot: int = 2000, seed: int = 0, n_perm: int = 9999,
                level: float = 0.95) -> dict:
    """Agency minus communion: Hedges' g with a bootstrap interval (words resampled within each list)
    and the permutation p of :func:`rmlib.stats.bigtwo_scores`."""
    res = bigtwo_scores(table, bigtwo_lists(), on="decoded", n_perm=n_perm, seed=seed).iloc[0].to_dict()
    a = table.loc[table["dimension"] == "agency", "score"].to_numpy(float)
    c = table.loc[table["dimension"] == "communion", "score"].to_numpy(float)
    rng = np.random.default_rng(seed)
    gs = np.array([hedges_g(rng.choice(a, len(a)), rng.choice(c, len(c))) for _ in range(n_boot)])
    q = (1 - level) / 2
    return {"hedges_g": res["hedges_g"], "g_low": float(np.quantile(gs, q)), "g_high": float(np.quantile(gs, 1 - q)),
            "p": res["p"], "n_agency": res["n_agency"], "n_communion": res["n_communion"],
            "mean_agency": res["mean_agency"], "mean_communion": res["mean_communion"], "prefers": res["prefers"]}


def data_ablation(config: TrainConfig, fractions=(0.1, 0.3, 1.0), *, n_boot: int = 1000, seed: int = 0,
                  progress: bool = False) -> pd.DataFrame:
    """Train on a fraction of the pairs; held-out tau and the agency-communion gap per size, with intervals."""
    import dataclasses

    rows = []
    for f in fractions:
        cfg = dataclasses.replace(config, data_fraction=float(f))
        run = train_reward_model(cfg, progress=progress)
        wide = test_items(run.info)[[HUMAN]].copy()
        wide["trained"] = run.info.get("test_scores") or score_items(run.folder, run.info["prompt"], list(wide.index))
        tau = tau_with_ci(wide, n_boot=n_boot, seed=seed).loc["trained"]
        gap = gap_with_ci(bigtwo_table(run.folder, run.info["prompt"]), n_boot=n_boot, seed=seed)
        rows.append({"fraction": f, "n_pairs": run.info["n_pairs"], "tau": tau["tau"], "tau_low": tau["low"],
                     "tau_high": tau["high"], **gap, "folder": str(run.folder)})
    return pd.DataFrame(rows)


def family_gaps(runs, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Agency minus communion for each trained run (``runs``: label -> :class:`rmlib.training.train.TrainRun`):
    the Big Two words scored as responses to the run's own prompt, :func:`gap_with_ci` per run.
    One row per run: ``RM, base model`` and the columns of :func:`gap_with_ci`."""
    return pd.DataFrame([{"RM": name, "base model": run.info["base_model_id"],
                          **gap_with_ci(bigtwo_table(run.folder, run.info["prompt"]), n_boot=n_boot, seed=seed)}
                         for name, run in runs.items()])


def runs_table(runs) -> pd.DataFrame:
    """One row per trained run (label -> :class:`rmlib.training.train.TrainRun`): what was trained, on
    how many pairs, the final loss, Kendall tau with the ratings on the training and the test items (and
    of the untrained head it started from), the seconds it took and whether it came from the cache."""
    return pd.DataFrame([{"RM": name, "trained": run.info["trained"], "pairs": run.info["n_pairs"],
                          "epochs": run.info["epochs"], "final loss": run.info["loss_curve"][-1]["loss"],
                          "train tau": run.info.get("train_tau"), "held-out tau": run.info.get("heldout_tau"),
                          "held-out tau, untrained head": run.info.get("heldout_tau_untrained_head"),
                          "encoding s": run.info["encode_s"], "training s": run.info["train_s"],
                          "from the cache": run.reused} for name, run in runs.items()])


def loss_curves(runs) -> pd.DataFrame:
    """Each run's per-epoch record, long: ``RM, epoch, loss, train_tau`` (one row per run and epoch)."""
    return pd.DataFrame([{"RM": name, "epoch": e["epoch"], "loss": e["loss"], "train_tau": e.get("train_tau")}
                         for name, run in runs.items() for e in run.info["loss_curve"]])


def run_provenance(runs) -> pd.DataFrame:
    """Which model, data and code made each trained run: base model id and revision, dtype, training key,
    the data file's SHA-256 (its first 12 hex digits) and the rmlib version. One row per run."""
    return pd.DataFrame([{"RM": name, "base model": run.info["base_model_id"], "revision": run.info["base_revision"],
                          "dtype": run.info["dtype"], "training key": run.info["key"],
                          "data sha256": str(run.info["data"]["sha256"])[:12], "rmlib": run.info["rmlib_version"]}
                         for name, run in runs.items()])


def training_keys(configs, fractions) -> dict:
    """The training key of each configuration (label -> :class:`rmlib.training.configuration.TrainConfig`) at each
    data fraction: the runs :func:`data_ablation` trains, named before any is trained."""
    import dataclasses

    shas = {}
    for cfg in configs.values():  # the data's hash is part of every training key
        if (cfg.data, cfg.prompt) not in shas:
            shas[cfg.data, cfg.prompt] = load_preferences(cfg.data, cfg.prompt).sha256
    return {name: [dataclasses.replace(cfg, data_fraction=float(f)).key(shas[cfg.data, cfg.prompt]) for f in fractions]
            for name, cfg in configs.items()}


def cache_facts(runs=None, **settings) -> dict:
    """What an evaluation of trained RMs depends on besides rmlib's version: the ``facts`` of
    :func:`rmlib.tables.memo.cached` for a held-out comparison, family gaps or a data ablation.

    The evaluation and scoring revisions, the pinned data files (EloEverything, BNC), the Big Two
    word lists, each run of ``runs`` (label -> :class:`rmlib.training.train.TrainRun`) by its training
    key and the fingerprint of its folder (a model retrained in place is another model), and
    ``settings`` (n_boot, seed, prompts, training keys: whatever else the computation reads).
    """
    import hashlib

    from ..engine.kernel import SCORING_REVISION
    from ..engine.models import folder_fingerprint
    from ..tables.data_files import REGISTRY

    facts = {"eval_revision": EVAL_REVISION, "scoring_revision": SCORING_REVISION,
             "data": {n: REGISTRY[n].sha256 for n in ("elo_greatest_ever", "bnc_1_1_all_alpha")},
             "bigtwo_words": hashlib.sha256(bigtwo_words().to_csv(index=False).encode()).hexdigest(), **settings}
    if runs is not None:
        facts["runs"] = {name: {"key": run.info["key"], "folder": folder_fingerprint(run.folder)}
                         for name, run in runs.items()}
    return facts


__all__ = ["baselines", "bigtwo_table", "bigtwo_words", "cache_facts", "data_ablation", "family_gaps", "gap_with_ci",
           "heldout_comparison", "loss_curves", "run_provenance", "runs_table", "score_items", "tau_with_ci",
           "test_items", "training_keys", "untrained_scores"]
