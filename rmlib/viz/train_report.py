"""Chapter 7 ("Train a reward model") in a few calls: every table, chart and finding of the page.

The computations live in :mod:`rmlib.training.train` and :mod:`rmlib.training.evaluate`;
this module only lays their results out (escaped tables through
:mod:`rmlib.viz.html`, charts through :mod:`rmlib.viz.charts`) and says which
scorer and which data made each number.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from ..tables import memo as rmemo
from .html import note
from .html import table as html_table

FAMILY = {"default": "Llama (SmolLM2)", "gemma-3-270m": "Gemma 3"}


def _show(*objects) -> None:
    from IPython.display import display

    for obj in objects:
        display(obj)


def _table(df: pd.DataFrame, **kwargs):
    return html_table(df, show_whitespace=False, **kwargs)


def check_parameters(bases: Sequence[str], fractions: Sequence[float]) -> None:
    """The chapter's own parameter checks, before any training."""
    from ..errors import InputError

    if not bases:
        raise InputError("bases is empty: give at least one language model, e.g. ['default']")
    if not fractions or any(not 0 < float(f) <= 1 for f in fractions):
        raise InputError(f"fractions must be shares in (0, 1], got {list(fractions)}")


def config_maker(*, epochs, lr, unfreeze_blocks, pairs_per_item, split_seed, test_fraction, max_items,
                 seed) -> Callable:
    """``make(base, **extra) -> TrainConfig`` with the chapter's parameters filled in."""
    from ..training.train import TrainConfig

    def make(base: str, **extra):
        return TrainConfig(base=base, epochs=int(epochs), lr=float(lr), unfreeze_blocks=int(unfreeze_blocks),
                           pairs_per_item=int(pairs_per_item), split_seed=int(split_seed),
                           test_fraction=float(test_fraction), max_items=int(max_items) or None, seed=int(seed),
                           **extra)
    return make


def data_and_pairs(config) -> pd.DataFrame:
    """The data, the item split and the first training pairs with their Elo soft labels (shown)."""
    from ..training import train

    data, train_idx, test_idx = train.prepare(config)
    pairs = train.training_pairs(config, data, train_idx)
    items = data.items
    facts = pd.DataFrame([{"items": len(items), "training items": len(train_idx), "test items": len(test_idx),
                           "training pairs": len(pairs), "source": data.source, "sha256": data.sha256[:16] + "…"}])
    text, rating = items["text"].to_numpy(), items["rating"].to_numpy()
    first = pairs.head(8)
    show = pd.DataFrame({"item i": text[first["i"]], "elo_i": rating[first["i"]], "item j": text[first["j"]],
                         "elo_j": rating[first["j"]], "P(i over j)": first["p"].to_numpy()})
    _show(_table(facts, caption="EloEverything, the split and the pairs"),
          _table(show, float_format=".3f", caption="The first training pairs with their Elo soft labels"))
    return facts


def train_all(bases: Sequence[str], make: Callable) -> dict:
    """Train (or reuse from the cache) one RM per base; show the summary table and the training curves."""
    import altair as alt

    from ..training import train
    from . import charts

    runs = {}
    for base in bases:
        start = time.perf_counter()
        run = runs[base] = train.train_reward_model(make(base), progress=False)
        _show(note(f"{base} ({run.info['base_model_id']}): {'reused from the cache' if run.reused else 'trained'} "
                   f"in {time.perf_counter() - start:.1f} s this time; training itself took "
                   f"{run.info['wall_s']:.1f} s (encoding {run.info['encode_s']:.1f} s at "
                   f"{run.info['items_per_s_encode']:.0f} items/s). Folder: {run.folder.name}"))
    summary = pd.DataFrame([{"base": b, "model": r.info["base_model_id"], "trained": r.info["trained"],
                             "pairs": r.info["n_pairs"], "epochs": r.info["epochs"], "lr": r.info["lr"],
                             "final loss": r.info["loss_curve"][-1]["loss"], "train tau": r.info["train_tau"],
                             "held-out tau": r.info["heldout_tau"],
                             "held-out tau, untrained head": r.info["heldout_tau_untrained_head"]}
                            for b, r in runs.items()])
    curve = pd.DataFrame([{**e, "base": b} for b, r in runs.items() for e in r.info["loss_curve"]])
    data = charts.inline_data(curve)
    loss = alt.Chart(data).mark_line(point=True).encode(
        x="epoch:Q", y=alt.Y("loss:Q", scale=alt.Scale(zero=False)), color="base:N", tooltip=["base:N", "epoch:Q", "loss:Q"])
    tau = alt.Chart(data).mark_line(point=True).encode(
        x="epoch:Q", y=alt.Y("train_tau:Q", title="training tau"), color="base:N",
        tooltip=["base:N", "epoch:Q", "train_tau:Q"])
    _show(_table(summary, float_format=".3f", caption="Reward models trained here on EloEverything: one row per base"),
          charts.show(loss.properties(title="BT loss per epoch (reward models trained here)", width=420, height=160)
                      & tau.properties(title="Kendall tau with Elo, training items (trained here)", width=420,
                                       height=160)))
    return runs


#: Bumped when what :func:`heldout`, :func:`family_gaps` or :func:`ablation` compute changes
#: (part of their result-cache keys, with ``evaluate.EVAL_REVISION``).
REPORT_VERSION = 1


def _eval_facts(**settings) -> dict:
    """What every chapter-7 statistic depends on besides the models: evaluation and scoring code,
    the pinned data files (EloEverything, BNC) and the Big Two word lists."""
    import hashlib

    from ..engine.kernel import SCORING_REVISION
    from ..tables.datasets import REGISTRY
    from ..training import evaluate as train_eval

    words = train_eval.bigtwo_words()
    return {"eval_revision": train_eval.EVAL_REVISION, "scoring_revision": SCORING_REVISION,
            "data": {n: REGISTRY[n].sha256 for n in ("elo_greatest_ever", "bnc_1_1_all_alpha")},
            "bigtwo_words": hashlib.sha256(words.to_csv(index=False).encode()).hexdigest(), **settings}


def _runs_facts(runs: Mapping) -> dict:
    """Each trained RM by its training key and the fingerprint of its folder (weights' size and mtime,
    config and tokenizer contents): a model retrained in place is another model."""
    from ..engine.models import folder_fingerprint

    return {b: {"key": r.info["key"], "folder": folder_fingerprint(r.folder)} for b, r in runs.items()}


def heldout(runs: Mapping, *, n_boot: int, seed: int, cache: bool = True,
            recompute: bool | None = None) -> pd.DataFrame:
    """Held-out tau of each trained RM beside the paper's RMs and the baselines (table, chart, verdicts).

    Deterministic for its inputs, so it goes through the result cache (:mod:`rmlib.tables.memo`); the
    note says whether the numbers were computed now or read back, with the original seconds.
    ``cache=False`` skips the cache, ``recompute=True`` (or ``RMLIB_RECOMPUTE=1``) overwrites it.
    """
    import altair as alt

    from ..training import evaluate as train_eval, train
    from . import charts

    facts = _eval_facts(runs=_runs_facts(runs), n_boot=int(n_boot), seed=int(seed), alt_prompt=train.ALT_PROMPT,
                        untrained=True)
    (wide, taus), memo = rmemo.cached(
        "train_report.heldout", REPORT_VERSION, facts,
        lambda: train_eval.heldout_comparison({b: r.folder for b, r in runs.items()}, n_boot=int(n_boot),
                                              seed=int(seed), alt_prompt=train.ALT_PROMPT),
        recompute=recompute, enabled=cache)
    taus = taus.reset_index()
    order = taus.sort_values("tau")["ranker"].tolist()
    data = charts.inline_data(taus[["ranker", "source", "tau", "low", "high"]])
    bars = alt.Chart(data).mark_rule().encode(y=alt.Y("ranker:N", sort=order, title=None),
                                              x=alt.X("low:Q", title="Kendall tau-b with human Elo"), x2="high:Q",
                                              color="source:N")
    dots = alt.Chart(data).mark_point(filled=True).encode(y=alt.Y("ranker:N", sort=order), x="tau:Q",
                                                          color="source:N",
                                                          tooltip=["ranker:N", "source:N", "tau:Q", "low:Q", "high:Q"])
    _show(note(f"{len(wide)} test items; {n_boot} bootstrap resamples; {memo.sentence()}."),
          _table(taus[["ranker", "source", "tau", "low", "high", "n_items"]].sort_values("tau", ascending=False),
                 float_format=".3f", caption="Held-out Kendall tau-b with human Elo, 95% bootstrap CI"),
          charts.show((bars + dots).properties(
              title="Held-out alignment with humans: RMs trained here, the paper's released scores, baselines",
              width=340)))
    base_rows = taus[taus["source"] == "baseline"]
    best = base_rows.loc[base_rows["tau"].abs().idxmax()]
    for b in runs:
        row = taus.set_index("ranker").loc[b]
        clear = row["low"] > base_rows["high"].max() and row["low"] > -base_rows["low"].min()
        _show(note(f"Trained here on EloEverything ({b}): held-out tau {row['tau']:.3f} [{row['low']:.3f}, "
                   f"{row['high']:.3f}] on {int(row['n_items'])} test items; the strongest baseline is "
                   f"{best['ranker']} with tau {best['tau']:.3f} [{best['low']:.3f}, {best['high']:.3f}]: the "
                   f"intervals {'do not overlap' if clear else 'overlap'} (baselines compared by |tau|)."))
    return taus


def family_gaps(runs: Mapping, *, n_boot: int, seed: int, cache: bool = True,
                recompute: bool | None = None) -> pd.DataFrame:
    """Agency minus communion per trained RM (Hedges' g, bootstrap CI, permutation p), shown; through the
    result cache like :func:`heldout`."""
    from ..training import evaluate as train_eval

    def compute():
        return pd.DataFrame([{"RM": b, "family": FAMILY.get(b, b),
                              **train_eval.gap_with_ci(train_eval.bigtwo_table(r.folder, r.info["prompt"]),
                                                       n_boot=int(n_boot), seed=int(seed))}
                             for b, r in runs.items()])

    facts = _eval_facts(runs=_runs_facts(runs), prompts={b: r.info["prompt"] for b, r in runs.items()},
                        families={b: FAMILY.get(b, b) for b in runs}, n_boot=int(n_boot), seed=int(seed))
    gaps, memo = rmemo.cached("train_report.family_gaps", REPORT_VERSION, facts, compute, recompute=recompute,
                              enabled=cache)
    _show(note(f"Big Two words scored by {len(gaps)} trained RM(s); {n_boot} bootstrap resamples, 9,999 "
               f"permutations; {memo.sentence()}."),
          _table(gaps, float_format=".3f",
                 caption="Agency minus communion, RMs trained here (Hedges' g, 95% bootstrap CI, permutation p)"))
    return gaps


def ablation(bases: Sequence[str], make: Callable, fractions: Sequence[float], *, n_boot: int,
             seed: int, cache: bool = True, recompute: bool | None = None) -> pd.DataFrame:
    """Held-out tau and the agency-communion gap per training-data size (table and chart); through the
    result cache like :func:`heldout`, keyed by the training key of every (base, fraction) run."""
    import dataclasses

    import altair as alt

    from ..training import evaluate as train_eval, train
    from . import charts

    fractions = [float(f) for f in fractions]
    configs = {b: make(b).validate() for b in bases}
    shas = {}
    for cfg in configs.values():  # the data's hash is part of every training key
        if (cfg.data, cfg.prompt) not in shas:
            shas[cfg.data, cfg.prompt] = train.load_preferences(cfg.data, cfg.prompt).sha256
    keys = {b: [dataclasses.replace(cfg, data_fraction=f).key(shas[cfg.data, cfg.prompt]) for f in fractions]
            for b, cfg in configs.items()}

    def compute():
        return pd.concat([train_eval.data_ablation(configs[b], fractions=fractions, n_boot=int(n_boot),
                                                   seed=int(seed)).assign(base=b) for b in bases], ignore_index=True)

    facts = _eval_facts(training_keys=keys, fractions=fractions, n_boot=int(n_boot), seed=int(seed),
                        train_revision=train.TRAIN_REVISION)
    abl, memo = rmemo.cached("train_report.ablation", REPORT_VERSION, facts, compute, recompute=recompute,
                             enabled=cache)
    cols = ["base", "fraction", "n_pairs", "tau", "tau_low", "tau_high", "hedges_g", "g_low", "g_high", "p"]
    line = alt.Chart(charts.inline_data(abl[cols])).encode(
        x=alt.X("n_pairs:Q", scale=alt.Scale(type="log"), title="training pairs"), color="base:N")
    left = line.mark_line(point=True).encode(y=alt.Y("tau:Q", title="held-out tau")) + \
        line.mark_rule().encode(y="tau_low:Q", y2="tau_high:Q")
    right = line.mark_line(point=True).encode(y=alt.Y("hedges_g:Q", title="Hedges' g (agency - communion)")) + \
        line.mark_rule().encode(y="g_low:Q", y2="g_high:Q")
    _show(note(f"ablation (trained runs cached by configuration): {memo.sentence()}."),
          _table(abl[cols], float_format=".3f",
                 caption="RMs trained here: held-out tau and agency-communion gap per training-data size"),
          charts.show(left.properties(width=420, height=160, title="Held-out alignment (trained here)")
                      & right.properties(width=420, height=160, title="Agency vs communion (trained here)")))
    return abl


def findings(runs: Mapping, taus: pd.DataFrame, gaps: pd.DataFrame, abl: pd.DataFrame) -> list[str]:
    """The chapter's findings with numbers, and their limits, as escaped paragraphs; returns the lines."""
    from ..training import train

    by = taus.set_index("ranker")
    lines = []
    for b, r in runs.items():
        row, alt_row = by.loc[b], by.loc[f"{b} ({train.ALT_PROMPT!r})"]
        lines.append(f"Trained here on EloEverything ({b}, {r.info['split']['n_train_items']} training items, split "
                     f"seed {r.info['split']['seed']}): held-out tau {row['tau']:.3f} [{row['low']:.3f}, "
                     f"{row['high']:.3f}]; with the other prompt wording {alt_row['tau']:.3f} "
                     f"[{alt_row['low']:.3f}, {alt_row['high']:.3f}].")
    paper = taus[taus["source"] == "paper (released scores)"]
    base_rows = taus[taus["source"] == "baseline"]
    lines.append(f"The paper's ten RMs (released scores) on the same test items: tau {paper['tau'].min():.3f} to "
                 f"{paper['tau'].max():.3f}; baselines: "
                 + ", ".join(f"{r.ranker} {r.tau:.3f}" for r in base_rows.itertuples()) + ".")
    for r in gaps.itertuples():
        lines.append(f"{r.RM} ({r.family}): agency minus communion g = {r.hedges_g:.3f} [{r.g_low:.3f}, "
                     f"{r.g_high:.3f}], p = {r.p:.3f}.")
    if len(gaps) == 2:
        g1, g2 = gaps.iloc[0], gaps.iloc[1]
        overlap = g1["g_low"] <= g2["g_high"] and g2["g_low"] <= g1["g_high"]
        lines.append(f"Two families on identical data: the agency-communion intervals of {g1['RM']} and {g2['RM']} "
                     f"{'overlap, so these runs show no family difference' if overlap else 'do not overlap: the families differ'}"
                     f" (on these {int(g1['n_agency'])} agentic and {int(g1['n_communion'])} communal words).")
    for b in runs:
        a = abl[abl["base"] == b]
        lines.append(f"{b}: held-out tau by data size "
                     + ", ".join(f"{f:.0%} {t:.3f}" for f, t in zip(a["fraction"], a["tau"])) + ".")
    lines.append("Limits: small models (135M and 270M parameters, head-only training), one data source "
                 "(EloEverything item names, one prompt), Elo-implied labels rather than the raw votes; the trained "
                 "RMs learn what distinguishes items for these raters, not the helpfulness/harmlessness data of the "
                 "paper's RMs.")
    _show(*(note(line) for line in lines))
    return lines
