"""rmlib.viz.paper_views: the paper's values beside the live analogue (chapters 1 and 2).

Checked against independent computations: skewness by scipy on a shared
vocabulary built by hand, MDS stress from the map's own distances, the
Fig. 2C stepwise betas by numpy least squares, the published tables read
with plain pandas. Displays are captured, not mocked away: their HTML is
read back.
"""

import os
import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.spatial.distance import pdist

from rmlib import registry
from rmlib.stats import summaries
from rmlib.tables.datasets import PAPER_TOKEN_PROMPTS
from rmlib.viz import paper_views as pv

PUB = pathlib.Path(os.environ["RMLIB_DATA_DIR"]) / "paper_published"


@pytest.fixture
def shown(monkeypatch):
    out = []
    monkeypatch.setattr(pv, "show", lambda *objs: out.extend(objs))
    return out


def _html(objs) -> str:
    return "\n".join(o.data for o in objs if isinstance(getattr(o, "data", None), str))


def _long(models, n=60, seed=0, kind="logprob", extra=None):
    """A long score table over ``n`` strings for each model and the paper's three prompts; ``extra``:
    model -> strings only that model has (left out of the shared vocabulary)."""
    rng = np.random.default_rng(seed)
    rows, prov = [], []
    for m in models:
        words = [f"w{i}" for i in range(n)] + list((extra or {}).get(m, []))
        for p in PAPER_TOKEN_PROMPTS.values():
            score = rng.gamma(2.0, size=len(words)) * (1 if m != models[-1] else -1)
            rows += [{"model": m, "prompt": p, "token_id": i, "token": w, "decoded": w, "score": s}
                     for i, (w, s) in enumerate(zip(words, score))]
            prov.append({"model_id": m, "scorer": kind, "prompt": p})
    long = pd.DataFrame(rows)
    long.attrs["provenance"] = prov
    return long


def test_scorer_kind_names_what_made_the_scores():
    assert pv.scorer_kind(_long(["a", "b"])) == "language model log-prob"
    mixed = _long(["tiny:x"], kind="classifier")
    mixed.attrs["provenance"] += _long(["b"]).attrs["provenance"]
    assert pv.scorer_kind(mixed) == "reward model score and language model log-prob (random test models)"


def test_table3_beside_uses_the_shared_vocabulary_and_gives_a_verdict(shown):
    long = _long(["m1", "m2", "m3"], extra={"m1": ["only-m1"] * 1 + ["zz"]})
    out = pv.table3_beside(None, long)
    greatest = PAPER_TOKEN_PROMPTS["greatest"]
    for model in ["m1", "m2", "m3"]:
        t = long[(long["model"] == model) & (long["prompt"] == greatest) & long["decoded"].str.match(r"w\d+$")]
        assert len(t) == 60
        row = out["live"].set_index("Model").loc[model]
        assert row["n"] == 60  # the strings only m1 has are not shared
        assert row["Skewness"] == pytest.approx(sps.skew(t["score"]))
        assert row["Variance"] == pytest.approx(np.var(t["score"]))
    v = out["verdicts"].set_index("what")
    assert v.loc["skewness range over the ten RMs", "verdict"].startswith("not recomputed here")
    live_sk = out["live"]["Skewness"]
    assert v.loc["all ten right-skewed (skewness > 0)", "live"] == f"{int((live_sk > 0).sum())} of 3"
    html = _html(shown)
    # the printed/released disagreement is read from the two tables, not typed in
    released = pd.read_csv(PUB / "tables" / "table_3_distribution_moments.csv")
    assert f"{released.set_index('Model').loc['S-Gem-27B-v0.2', 'Skewness']:.3f}" == "0.072"
    assert "in 5 cells" in html and "printed 0.071, released 0.072" in html


def test_table3_beside_recomputes_from_released_files_when_present(shown):
    hub_ids = list(registry.paper_models()["hub_id"])
    paper_long = _long(hub_ids, n=40, seed=1)
    out = pv.table3_beside(paper_long, _long(["a", "b"]))
    sk = [sps.skew(paper_long[(paper_long["model"] == m) & (paper_long["prompt"] == PAPER_TOKEN_PROMPTS["greatest"])]
                   ["score"]) for m in hub_ids]
    row = out["verdicts"].set_index("what").loc["skewness range over the ten RMs"]
    assert row["recomputed"] == f"{min(sk):.3f}–{max(sk):.3f}"
    assert row["verdict"].startswith("differs")  # synthetic scores are not the paper's
    html = _html(shown)
    assert "vs the released CSV" in html and "vs the table printed in the paper" in html


def test_table2_beside_reads_the_published_tables(shown):
    live = _long(["a", "b"])
    out = pv.table2_beside(None, live, n=3)
    t2a = pd.read_csv(next((PUB / "tables").glob("table_2a*.csv")), keep_default_na=False)
    assert out["published"]["R-Gem-2B"] == " LOVE" and t2a.iloc[0].astype(str).str.contains("LOVE").any()
    g = live[live["prompt"] == PAPER_TOKEN_PROMPTS["greatest"]]
    for m in ["a", "b"]:
        t = g[g["model"] == m]
        assert out["live"][m] == t.loc[t["score"].idxmax(), "decoded"]
    html = _html(shown)
    assert "Show all 44 rows" in html and html.count("<details>") == 2


def test_short_table_escapes_and_folds_only_long_tables():
    df = pd.DataFrame({"decoded": ["<script>x</script>"] + [f"t{i}" for i in range(11)]})
    html = pv.short_table(df, "c", head=5).data
    assert "<script>" not in html and "&lt;script&gt;" in html and "Show all 12 rows" in html
    assert "<details>" not in pv.short_table(df.head(4), "c", head=5).data


def test_mds_stress_matches_the_maps_own_distances():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 4))
    tau = pd.DataFrame(np.corrcoef(x), index=list("abcdef"), columns=list("abcdef"))
    coords, stress = summaries.mds_maps({"k": tau}, registry.paper_models())
    out = pv.mds_stress(stress, {"k": tau}).iloc[0]
    d = 1 - tau.to_numpy()[np.triu_indices(6, 1)]
    fitted = pdist(coords["k"][["dim1", "dim2"]].to_numpy())
    raw = ((fitted - d) ** 2).sum()
    assert out["stress"] == pytest.approx(raw, rel=1e-3)
    assert out["stress-1"] == pytest.approx(np.sqrt(raw / (d ** 2).sum()), rel=1e-3)
    assert out["rms misfit"] == pytest.approx(np.sqrt(raw / 15), rel=1e-3)


def test_fig2_rsa_beside_against_least_squares(shown):
    tau = pd.read_csv(PUB / "figure_2a_kendall_tau_transcribed.csv", index_col=0)
    t1 = pd.read_csv(PUB / "tables" / "table_1_reward_models.csv").set_index("Model ID").loc[tau.index]
    family = t1["Base Model"].str.split().str[0].to_numpy()
    rank = t1["RewardBench Rank"].to_numpy(float)
    iu = np.triu_indices(10, 1)
    X = np.column_stack([np.ones(45), (family[:, None] == family[None, :])[iu],
                         (1 / (1 + np.abs(rank[:, None] - rank[None, :])))[iu]])
    beta = np.linalg.lstsq(X, tau.to_numpy()[iu], rcond=None)[0]
    key = pv.fig2_rsa_beside()["key"].loc["pairs"]
    assert key["stepwise_beta_base_model"] == pytest.approx(beta[1])
    assert key["stepwise_beta_rewardbench_rank"] == pytest.approx(beta[2])
    assert "45 distinct pairs" in _html(shown)


def test_findings_quote_the_numbers_they_were_given():
    mat = pd.DataFrame([[1, 0.2, 0.5], [0.2, 1, 0.7], [0.5, 0.7, 1]], index=list("abc"), columns=list("abc"))
    key = pd.DataFrame({"n": [45, 100], "stepwise_beta_base_model": [0.0962, 0.0502],
                        "stepwise_beta_rewardbench_rank": [0.25, 0.692], "stepwise_r2": [0.366, 0.806],
                        "single_p_developer": [0.59, 1e-7]}, index=["pairs", "full"])
    two = pd.DataFrame([[1, -0.15], [-0.15, 1]], index=["x", "y"], columns=["x", "y"])
    html = pv.chapter02_findings({("k", "kendall"): mat, ("k", "rbo"): mat}, key, {("p", "kendall"): two},
                                 "kendall").data
    assert "from 0.20 to 0.70 (mean 0.47)" in html and "R^2 = 0.806" in html and "R^2 = 0.366" in html
    assert "-0.15" in html and "opposite directions" in html and html.count("<li>") == 3


def test_token_level_fig2_from_released_files(shown):
    assert pv.token_level_fig2(None) is None and not shown
    hub_ids = list(registry.paper_models()["hub_id"])
    paper_long = _long(hub_ids, n=40, seed=2, extra={hub_ids[0]: ["only-here"]})
    out = pv.token_level_fig2(paper_long)
    g = paper_long[paper_long["prompt"] == PAPER_TOKEN_PROMPTS["greatest"]]
    a, b = (g[g["model"] == m].set_index("decoded")["score"].drop("only-here", errors="ignore") for m in hub_ids[:2])
    nick = [registry.nickname(m) for m in hub_ids[:2]]
    assert out["tau"].loc[nick[0], nick[1]] == pytest.approx(sps.kendalltau(a, b.loc[a.index])[0])
    assert set(out["key"].index) == {"pairs", "full"} and "Fig. 2B: MDS stress" in _html(shown)
