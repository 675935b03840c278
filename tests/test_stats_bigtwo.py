"""rmlib.stats.bigtwo: word lists, matching, agency vs communion tests."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rmlib import registry
from rmlib.tables import lexicons, paper_release
from rmlib.resources import path as resource_path
from rmlib.stats import bigtwo, elo

LISTS = {"agency": ["achiev*", "ambition", "win"], "communion": ["friend*", "kind", "love", "winsome"]}


def test_shipped_lists_and_licence():
    lists = lexicons.bigtwo_lists()
    a, c = set(lists["agency"]), set(lists["communion"])
    assert len(a) > 100 and len(c) > 100 and not a & c
    assert all(w == w.strip().lower() and w for w in a | c)
    assert {"ambition", "achievement", "independence"} <= a
    assert {"friendship", "kindness", "cooperation"} <= c
    folder = resource_path("bigtwo")
    assert (folder / "LICENSE").read_text().count("WordNet 3.0 Copyright 2006 by Princeton University") == 1
    assert "not" in (folder / "README.md").read_text()


def test_classify_wildcards_and_both():
    s = pd.Series([" Achievement", "achiev", "ACHIEVE", "friendly", "Kind", "kindly", "win",
                   "winsome", "xyz", None])
    got = bigtwo.classify(s, LISTS)
    assert list(got[:9]) == ["agency", "agency", "agency", "communion", "communion", None, "agency",
                             "communion", None]
    assert got.iloc[9] is None
    both = {"agency": ["care*"], "communion": ["caring", "care*"]}
    assert list(bigtwo.classify(["caring", "career"], both)) == ["communion", "both"]
    with pytest.raises(ValueError, match="keys"):
        bigtwo.classify(["a"], {"agency": ["a"]})


def test_read_dictionary_formats(tmp_path):
    dic = tmp_path / "big2.dic"
    dic.write_text("%\n1\tAgency\n2\tCommunion\n%\nachiev*\t1\nfriend*\t2\nleader\t1\t2\n", encoding="utf-8")
    d = lexicons.read_dictionary(dic)
    assert d == {"Agency": ["achiev*", "leader"], "Communion": ["friend*", "leader"]}
    lists = lexicons.bigtwo_lists(dic)
    assert lists == {"agency": ["achiev*", "leader"], "communion": ["friend*", "leader"]}
    js = tmp_path / "b.json"
    js.write_text(json.dumps({"big2_agen": ["Able"], "big2_comm": ["kind"]}))
    assert lexicons.bigtwo_lists(js) == {"agency": ["able"], "communion": ["kind"]}
    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "agency.txt").write_text("# comment\nable\n")
    (folder / "communion.txt").write_text("kind\n")
    assert lexicons.read_dictionary(folder) == {"agency": ["able"], "communion": ["kind"]}
    bad = tmp_path / "bad.dic"
    bad.write_text("%\n1\tAgency\n%\nword\t9\n")
    with pytest.raises(ValueError, match="undefined category"):
        lexicons.read_dictionary(bad)
    with pytest.raises(ValueError, match="cannot tell"):
        lexicons.bigtwo_lists({"x": ["a"], "y": ["b"]})
    assert lexicons.bigtwo_lists({"x": ["a"], "y": ["b"]}, agency="x", communion="y") == {
        "agency": ["a"], "communion": ["b"]}


def test_bigtwo_scores_score_table_by_hand():
    rng = np.random.default_rng(0)
    words = ["achieve", " Achieve", "ambition", "win", "achiever", "friend", "friends", "kind", "love",
             "other", "winsome"]
    scores = rng.normal(size=len(words))
    t = pd.DataFrame({"token_id": range(len(words)), "decoded": words, "score": scores})
    out = bigtwo.bigtwo_scores(t, LISTS, n_perm=999).iloc[0]
    # aggregate: "achieve" and " Achieve" average into one word
    ag = [np.mean(scores[:2]), scores[2], scores[3], scores[4]]
    co = [scores[5], scores[6], scores[7], scores[8], scores[10]]
    assert out["n_agency"] == 4 and out["n_communion"] == 5
    assert out["mean_agency"] == pytest.approx(np.mean(ag))
    assert out["diff"] == pytest.approx(np.mean(ag) - np.mean(co))
    sp = np.sqrt(((len(ag) - 1) * np.var(ag, ddof=1) + (len(co) - 1) * np.var(co, ddof=1)) / (len(ag) + len(co) - 2))
    d = (np.mean(ag) - np.mean(co)) / sp
    assert out["cohens_d"] == pytest.approx(d)
    assert out["hedges_g"] == pytest.approx(d * (1 - 3 / (4 * 9 - 9)))
    # 9 values, C(9,4) = 126 splits <= 999: exact p-value, as scipy's permutation_test
    ref = stats.permutation_test((ag, co), lambda a, b: np.mean(a) - np.mean(b),
                                 permutation_type="independent", n_resamples=999)
    assert out["p"] == pytest.approx(ref.pvalue)
    raw = bigtwo.bigtwo_scores(t, LISTS, aggregate=False).iloc[0]
    assert raw["n_agency"] == 5


def test_family_summary_with_registry_nicknames():
    models = registry.paper_models()
    rows = []
    for _, m in models.iterrows():
        g = 0.5 if m["family"] == "llama3" else -0.4
        rows.append({"model": m["nickname"], "prompt": "p", "hedges_g": g, "diff": g, "p": 0.01})
    rows.append({"model": "human", "prompt": "p", "hedges_g": 0.1, "diff": 0.1, "p": 0.5})
    fam = bigtwo.family_summary(pd.DataFrame(rows)).set_index("family")
    n_llama = int((models["family"] == "llama3").sum())
    assert fam.loc["llama3", "n_models"] == n_llama == fam.loc["llama3", "n_sig_agency"]
    assert fam.loc["gemma2", "n_prefer_communion"] == int((models["family"] == "gemma2").sum())
    assert fam.loc["gemma2", "mean_g"] == pytest.approx(-0.4)
    assert fam.loc["human", "n_sig_agency"] == 0
    assert bigtwo.family_of(models.loc[0, "hub_id"]) == models.loc[0, "family"]


def test_bigtwo_on_eloeverything_items():
    wide = elo.elo_wide(paper_release.eloeverything("one_word_greatest"))
    res = bigtwo.bigtwo_scores(wide, lexicons.bigtwo_lists(), on=None, n_perm=2000).set_index("model")
    assert list(res.index) == list(wide.columns)
    lists = lexicons.bigtwo_lists()
    # independent matching: lower-cased item names in the shipped lists
    names = wide.index.str.lower().str.strip()
    in_a = names.isin(lists["agency"])
    in_c = names.isin(lists["communion"])
    assert res.loc["human", "n_agency"] == in_a.sum() > 0
    assert res.loc["human", "n_communion"] == in_c.sum() > 0
    m = "R-Gem-2B"
    assert res.loc[m, "mean_agency"] == pytest.approx(wide.loc[in_a, m].mean())
    assert res.loc[m, "mean_communion"] == pytest.approx(wide.loc[in_c, m].mean())
    assert res["prompt"].iloc[0] == "What, in one word, is the greatest thing ever?"
    fam = bigtwo.family_summary(res.reset_index())
    assert set(fam["family"]) == {"human", "gemma2", "llama3"}


def test_family_summary_families_for_models_outside_the_registry():
    # Two language models the registry does not know, one paper RM it does know.
    rows = pd.DataFrame([
        {"model": "HuggingFaceTB/SmolLM2-135M-Instruct", "prompt": "p", "hedges_g": 0.3, "diff": 1.0, "p": 0.01},
        {"model": "google/gemma-3-270m", "prompt": "p", "hedges_g": -0.2, "diff": -2.0, "p": 0.20},
        {"model": "google/gemma-2-2b-it", "prompt": "p", "hedges_g": -0.6, "diff": -3.0, "p": 0.03},
        {"model": "R-Gem-2B", "prompt": "p", "hedges_g": -0.1, "diff": -0.5, "p": 0.50},
    ])
    fams = {"HuggingFaceTB/SmolLM2-135M-Instruct": "llama-arch", "google/gemma-3-270m": "gemma",
            "google/gemma-2-2b-it": "gemma"}
    fam = bigtwo.family_summary(rows, families=fams).set_index("family")
    assert set(fam.index) == {"llama-arch", "gemma", "gemma2"}
    assert fam.loc["gemma", "n_models"] == 2
    assert fam.loc["gemma", "mean_g"] == pytest.approx(np.mean([-0.2, -0.6]))
    assert fam.loc["gemma", "n_prefer_communion"] == 2 and fam.loc["gemma", "n_sig_communion"] == 1
    assert fam.loc["llama-arch", "n_sig_agency"] == 1
    assert fam.loc["gemma2", "models"] == "R-Gem-2B"  # the registry still answers for the rest
    # Without the mapping each unknown model is its own group.
    assert len(bigtwo.family_summary(rows)) == 4
    # The mapping wins over the registry.
    assert bigtwo.family_summary(rows, families={"R-Gem-2B": "gemma"}).set_index("family").loc[
        "gemma", "n_models"] == 1
    with pytest.raises(TypeError, match="mapping"):
        bigtwo.family_summary(rows, families=["gemma"])
