"""Ranks, medians, the mixed model, panel tests, MWLR and token classes, each against an independent computation."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from rmlib.stats import comparisons, implicit, mixed, ranking, token_classes


# --------------------------------------------------------------------------- ranks and medians
def _table(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for m, p in itertools.product(["A", "B"], ["x", "y", "z"]):
        scores = rng.integers(0, 5, size=7).astype(float)  # ties on purpose
        for i, s in enumerate(scores):
            rows.append({"model": m, "prompt": p, "word": f"w{i}", "category": "c1" if i < 3 else "c2", "score": s})
    return pd.DataFrame(rows)


def test_rank_within_matches_scipy_rankdata_with_ties():
    t = _table()
    r = ranking.rank_within(t, ["model", "prompt"])
    for (_, _), g in r.groupby(["model", "prompt"]):
        np.testing.assert_array_equal(g["rank"].to_numpy(), stats.rankdata(-g["score"].to_numpy(), method="average"))
    low = ranking.rank_within(t, ["model", "prompt"], ascending=True)
    g = low[(low["model"] == "A") & (low["prompt"] == "x")]
    np.testing.assert_array_equal(g["rank"], stats.rankdata(g["score"]))
    with pytest.raises(ValueError, match="missing"):
        ranking.rank_within(t.assign(score=np.where(t.index == 3, np.nan, t["score"])), "model")


def test_median_ranks_cell_means_and_gap_by_hand():
    r = ranking.rank_within(_table(1), ["model", "prompt"])
    med = ranking.median_ranks(r, ["model", "category", "prompt"])
    one = r[(r["model"] == "B") & (r["category"] == "c2") & (r["prompt"] == "y")]["rank"]
    got = med[(med["model"] == "B") & (med["category"] == "c2") & (med["prompt"] == "y")].iloc[0]
    assert got["median_rank"] == np.median(one.to_numpy()) and got["n"] == 4
    cells = ranking.cell_means(med, ["model", "category"], "median_rank")
    sub = med[(med["model"] == "A") & (med["category"] == "c1")]["median_rank"].to_numpy()
    row = cells[(cells["model"] == "A") & (cells["category"] == "c1")].iloc[0]
    assert row["mean"] == pytest.approx(sub.mean()) and row["sd"] == pytest.approx(sub.std(ddof=1))
    assert row["se"] == pytest.approx(sub.std(ddof=1) / math.sqrt(3))
    g = ranking.gap(cells, "model", "B", "A", by="category").set_index("category")
    want = cells.set_index(["category", "model"])["mean"]
    assert g.loc["c2", "gap"] == pytest.approx(want[("c2", "B")] - want[("c2", "A")])
    with pytest.raises(ValueError, match="several rows"):
        ranking.gap(med, "model", "B", "A", value="median_rank", by="category")


def test_zscore_within():
    t = _table(2)
    z = ranking.zscore_within(t, ["model", "prompt"])
    g = z[(z["model"] == "A") & (z["prompt"] == "z")]
    np.testing.assert_allclose(g["z"], stats.zscore(g["score"], ddof=1))


# --------------------------------------------------------------------------- the mixed model
def _simulated(seed=0, n_groups=8, n_per=12):
    rng = np.random.default_rng(seed)
    rows = []
    for gi in range(n_groups):
        fam = "g" if gi < n_groups // 2 else "l"
        u = rng.normal(0, 2.0)
        for j in range(n_per):
            cat = "a" if j % 2 else "b"
            fr = "pos" if j % 4 < 2 else "neg"
            mu = 10 + 1.5 * (fam == "l") - 2 * (cat == "b") + 3 * (fr == "neg") + 2.5 * (fam == "l") * (cat == "b")
            rows.append({"grp": f"m{gi}", "fam": fam, "cat": cat, "fr": fr, "y": mu + u + rng.normal(0, 1.0)})
    return pd.DataFrame(rows)


def _hand_reml(d: pd.DataFrame, X: np.ndarray):
    """REML for y = X b + Z u + e, u ~ N(0, s_u I), e ~ N(0, s_e I), written out and maximised with scipy."""
    y = d["y"].to_numpy()
    codes = pd.factorize(d["grp"])[0]
    Z = np.eye(codes.max() + 1)[codes]
    n, p = X.shape

    def neg(theta):
        su, se = np.exp(theta)
        V = se * np.eye(n) + su * Z @ Z.T
        Vi = np.linalg.inv(V)
        XtViX = X.T @ Vi @ X
        b = np.linalg.solve(XtViX, X.T @ Vi @ y)
        r = y - X @ b
        return 0.5 * (np.linalg.slogdet(V)[1] + np.linalg.slogdet(XtViX)[1] + r @ Vi @ r)

    res = optimize.minimize(neg, x0=[0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                                "maxiter": 5000})
    su, se = np.exp(res.x)
    Vi = np.linalg.inv(se * np.eye(n) + su * Z @ Z.T)
    cov = np.linalg.inv(X.T @ Vi @ X)
    return cov @ X.T @ Vi @ y, np.sqrt(np.diag(cov)), su, se


def test_mixed_model_matches_a_hand_built_reml_fit():
    d = _simulated()
    fit = mixed.mixed_model(d, "y ~ fam * cat + fr", groups="grp",
                            levels={"fam": ["g", "l"], "cat": ["a", "b"], "fr": ["pos", "neg"]})
    X = np.column_stack([np.ones(len(d)), d["fam"].eq("l"), d["cat"].eq("b"), d["fr"].eq("neg"),
                         d["fam"].eq("l") & d["cat"].eq("b")]).astype(float)
    b, se, su, s_e = _hand_reml(d, X)
    np.testing.assert_allclose(fit["estimate"], b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fit["se"], se, rtol=1e-3)
    assert fit.attrs["group_var"] == pytest.approx(su, rel=1e-3)
    assert fit.attrs["residual_var"] == pytest.approx(s_e, rel=1e-3)
    # nlme's degrees of freedom: fam varies only between groups -> 8 - 1 - 1; the rest within
    df = dict(zip(fit["term"], fit["df"]))
    assert df["fam[T.l]"] == 8 - 1 - 1
    assert df["Intercept"] == df["cat[T.b]"] == df["fam[T.l]:cat[T.b]"] == len(d) - 8 - 3
    row = fit.set_index("term").loc["cat[T.b]"]
    assert row["p"] == pytest.approx(2 * stats.t.sf(abs(row["t"]), row["df"]))
    z = mixed.mixed_model(d, "y ~ fam * cat + fr", groups="grp", df="normal").set_index("term")
    assert z.loc["cat[T.b]", "p"] == pytest.approx(2 * stats.norm.sf(abs(z.loc["cat[T.b]", "t"])))


def test_mixed_model_with_a_group_variance_near_zero():
    """Each group's values centred: the random-intercept variance is on the boundary, the fit must not break."""
    d = _simulated(3)
    d["y"] = d["y"] - d.groupby("grp")["y"].transform("mean") + 50
    fit = mixed.mixed_model(d, "y ~ fam * cat", groups="grp")
    ols = np.linalg.lstsq(np.column_stack([np.ones(len(d)), d["fam"].eq("l"), d["cat"].eq("b"),
                                           d["fam"].eq("l") & d["cat"].eq("b")]).astype(float), d["y"], rcond=None)[0]
    np.testing.assert_allclose(fit["estimate"], ols, atol=1e-3)
    assert math.isfinite(fit.attrs["loglike"])


def test_mixed_model_bad_levels():
    with pytest.raises(ValueError, match="misses values"):
        mixed.mixed_model(_simulated(), "y ~ fam", groups="grp", levels={"fam": ["g"]})


# --------------------------------------------------------------------------- two-group tests
def test_welch_matches_scipy_and_d_av_by_hand():
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 30), rng.normal(0.5, 2, 45)
    w = comparisons.welch_test(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert w["t"] == pytest.approx(ref.statistic) and w["p"] == pytest.approx(ref.pvalue)
    assert comparisons.d_av([1, 2, 3], [2, 4, 6]) == pytest.approx((2 - 4) / math.sqrt((1 + 4) / 2))


def _exact_perm_p(a, b):
    pooled = np.concatenate([a, b])
    obs = a.mean() - b.mean()
    diffs = []
    for idx in itertools.combinations(range(len(pooled)), len(a)):
        mask = np.zeros(len(pooled), bool)
        mask[list(idx)] = True
        diffs.append(pooled[mask].mean() - pooled[~mask].mean())
    diffs = np.array(diffs)
    tol = 1e-12
    return min(1.0, 2 * min(np.mean(diffs <= obs + tol), np.mean(diffs >= obs - tol)))


def test_panel_tests_against_exact_enumeration_and_bonferroni():
    rows = []
    vals = {("p1", "G"): [3.0, 5.0, 4.0], ("p1", "L"): [7.0, 6.0, 9.0, 8.0],
            ("p2", "G"): [1.0, 2.0, 2.5], ("p2", "L"): [1.5, 3.0, 2.0, 0.5]}
    for (panel, fam), vs in vals.items():
        for i, v in enumerate(vs):
            rows.append({"panel": panel, "family": fam, "rm": f"{fam}{i}", "v": v})
    t = pd.DataFrame(rows)
    out = comparisons.panel_tests(t, "panel", "family", "v", first="G", second="L", unit="rm", n_perm=9999)
    for r in out.itertuples():
        a = np.array(vals[(r.panel, "G")])
        b = np.array(vals[(r.panel, "L")])
        assert r.p_perm == pytest.approx(_exact_perm_p(a, b))  # 35 splits: enumerated
        assert r.p_welch == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
        assert r.p_welch_bonf == pytest.approx(min(1, 2 * r.p_welch))
        assert r.p_perm_units == pytest.approx(r.p_perm)  # one row per unit: the same test
    assert list(out["stars"]) == [comparisons.stars(p) for p in out["p_welch_bonf"]]
    assert comparisons.stars(0.0009) == "***" and comparisons.stars(0.2) == "n.s."


def test_paired_test_sign_flips_exactly():
    t = pd.DataFrame({"rm": list("abcd") * 2, "framing": ["pos"] * 4 + ["neg"] * 4,
                      "v": [3.0, 2.0, 4.0, 1.0, 1.0, 2.5, 1.0, 0.0]})
    r = comparisons.paired_test(t, "rm", "framing", "v", first="pos", second="neg")
    d = np.array([2.0, -0.5, 3.0, 1.0])
    flips = [abs(np.mean(np.array(s) * d)) for s in itertools.product([-1, 1], repeat=4)]
    assert r["p_perm"] == pytest.approx(np.mean(np.array(flips) >= abs(d.mean()) - 1e-12))
    assert r["p_t"] == pytest.approx(stats.ttest_rel([3, 2, 4, 1], [1, 2.5, 1, 0]).pvalue)
    assert r["n_first_higher"] == 3


# --------------------------------------------------------------------------- MWLR
def test_mwlr_table_by_hand_with_duplicate_strings():
    a = pd.DataFrame({"decoded": ["x", "x", "y", "z", None], "score": np.log([0.1, 0.3, 0.2, 0.05, 0.1])})
    b = pd.DataFrame({"decoded": ["x", "y", "y", "w"], "score": np.log([0.4, 0.01, 0.02, 0.2])})
    t = implicit.mwlr_table(a, b, names=("L", "G"))
    assert list(t["decoded"]) == ["y", "x"]  # z and w are in one vocabulary only
    # duplicates: the highest log-probability per string (x: 0.3 in a; y: 0.02 in b)
    want_x = 0.5 * (0.3 + 0.4) * (math.log(0.3) - math.log(0.4))
    want_y = 0.5 * (0.2 + 0.02) * (math.log(0.2) - math.log(0.02))
    assert t.set_index("decoded").loc["x", "mwlr"] == pytest.approx(want_x)
    assert t.set_index("decoded").loc["y", "mwlr"] == pytest.approx(want_y)
    assert t["mwlr_rank"].tolist() == [1, 2] and t.attrs["duplicates_a"] == 1 and t.attrs["duplicates_b"] == 1
    assert implicit.mwlr(math.log(0.5), math.log(0.5)) == 0
    v = implicit.variant_mean(pd.DataFrame({"decoded": [" Freedom", "freedom", "Love"], "mwlr": [1.0, 3.0, -2.0]}),
                              ["freedom", "love", "peace"])
    assert v["freedom"] == 2.0 and v["love"] == -2.0 and math.isnan(v["peace"])


# --------------------------------------------------------------------------- token classes
@pytest.mark.parametrize("text, cls", [
    ("Works", "Latin word"), (" don't", "Latin word"), ("U.S.", "Latin word"), ("깨", "non-Latin script"),
    ("নে", "non-Latin script"), ("Привет", "non-Latin script"), ("});", "code / symbols"), ("=>", "code / symbols"),
    ("get_value", "code / symbols"), ("x1", "code / symbols"), ("1,000", "number"), ("\ufffd", "byte fragment"),
    ("  ", "space / empty"), ("", "space / empty"), (None, "space / empty"), ("café", "Latin word"),
])
def test_token_class(text, cls):
    assert token_classes.token_class(text) == cls


def test_class_shares_top_and_bottom():
    t = pd.DataFrame({"decoded": ["a", "b", "깨", "{", "c", "1"], "score": [6, 5, 4, 3, 2, 1]})
    s = token_classes.class_shares(t, n=2).set_index("end")
    assert s.loc["top", "Latin word"] == 1.0
    assert s.loc["bottom", "number"] == 0.5 and s.loc["bottom", "Latin word"] == 0.5
    pub = pd.DataFrame({"part": ["top", "top", "bottom"], "decoded": ["x", "}", "y"]})
    s2 = token_classes.class_shares(pub, end="part").set_index("end")
    assert s2.loc["top", "code / symbols"] == 0.5 and s2.loc["bottom", "n"] == 1
    assert token_classes.out_of_distribution_share(s2).loc["top"] == 0.5


# --------------------------------------------------------------------------- the RM as the unit
def test_per_rm_interaction_contrasts_give_the_mixed_model_three_way_term():
    """Chapter 6 tests the family x category x framing term with the RM as the unit: one
    category x framing contrast per RM (cell means over prompts), compared between families. In a
    balanced design the Llama - Gemma difference of the contrasts is the mixed model's estimate."""
    rng = np.random.default_rng(3)
    rows = []
    for k, fam in enumerate(["Gemma"] * 4 + ["Llama"] * 6):
        level, slope = rng.normal(0, 3), rng.normal(6 if fam == "Llama" else 0, 4)  # RMs differ in pattern
        for cat in ("Agency", "Communion"):
            for fr in ("positive", "negative"):
                for p in range(5):
                    y = 100 + level + (cat == "Communion") * (fr == "negative") * slope + rng.normal(0, 2)
                    rows.append({"rm": f"m{k}", "family": fam, "category": cat, "framing": fr,
                                 "prompt": f"{fr}{p}", "y": y})
    data = pd.DataFrame(rows)
    levels = {"family": ["Gemma", "Llama"], "category": ["Agency", "Communion"], "framing": ["positive", "negative"]}
    fit = mixed.mixed_model(data, "y ~ family * category * framing", groups="rm", levels=levels)
    three = fit[fit["term"].str.count(":") == 2].iloc[0]
    w = ranking.cell_means(data, ["rm", "family", "category", "framing"], "y").pivot_table(
        index=["rm", "family"], columns=["category", "framing"], values="mean")
    c = ((w["Communion", "negative"] - w["Agency", "negative"]) - (w["Communion", "positive"] - w["Agency", "positive"]))
    c = c.rename("contrast").reset_index().assign(term="3-way")
    unit = comparisons.panel_tests(c, "term", "family", "contrast", first="Llama", second="Gemma", unit="rm").iloc[0]
    by_hand = c.groupby("family")["contrast"].mean()
    assert unit["diff"] == pytest.approx(three["estimate"]) == pytest.approx(by_hand["Llama"] - by_hand["Gemma"])
    assert (unit["n_units_first"], unit["n_units_second"]) == (6, 4)
    # exact: every split of the ten RMs into six and four, the two-sided p a multiple of 1/210
    assert unit["p_perm_units"] * 210 == pytest.approx(round(unit["p_perm_units"] * 210))
    assert three["df"] == 10 * 20 - 10 - 6  # nlme's within-RM df: the prompts counted as independent


def test_followup_findings_loader(tmp_path, monkeypatch):
    from rmlib.tables import findings

    monkeypatch.delenv("RMLIB_REFERENCE_DIR", raising=False)

    f = findings.load_followup_findings()  # the claims rmlib ships
    assert f.attrs["source"].endswith("followup2026.yaml") and list(f.columns) == list(findings.FOLLOWUP_FIELDS[1:])
    assert f.loc["big2_lme_three_way", "reported"] == "secondary: three-way interaction p < .001"
    assert len(f) == 27
    assert (f["section"] != "").all() and (f["claim"] != "").all() and (f["released_data_enough"] != "").all()
    (tmp_path / "followup2026.yaml").write_text("claims:\n- id: a\n  claim: x\n- id: a\n  claim: y\n")
    with pytest.raises(ValueError, match="more than once"):
        findings.load_followup_findings(tmp_path)
    (tmp_path / "followup2026.yaml").write_text("- id: a\n  claim: x\n")
    with pytest.raises(ValueError, match="'claims' list"):
        findings.load_followup_findings(tmp_path)


def test_stats_package_exports_the_new_functions():
    import rmlib.stats as s

    assert s.rank_within is ranking.rank_within and s.mixed_model is mixed.mixed_model
    assert s.mwlr_table is implicit.mwlr_table and s.token_class is token_classes.token_class


# --------------------------------------------------------------------------- fast lexicon paths vs the reference
def _lexicon_long(seed=5):
    from rmlib.tables import lexicons

    afinn = lexicons.afinn111()
    rng = np.random.default_rng(seed)
    words = list(afinn.index[:80]) + ["zzz%d" % i for i in range(20)]
    parts = []
    for m, p in itertools.product(["A", "B"], ["x", "y"]):
        parts.append(pd.DataFrame({"model": m, "prompt": p, "token_id": range(len(words)), "token": words,
                                   "decoded": words, "score": rng.normal(size=len(words))}))
    return afinn, pd.concat(parts, ignore_index=True)


def test_sentiment_slopes_long_equals_the_per_table_reference():
    from rmlib.stats import lexical

    afinn, long = _lexicon_long()
    fast = lexical.sentiment_slopes_long(long, afinn).set_index(["model", "prompt", "valence"])
    ref = lexical.sentiment_slopes({k: g for k, g in long.groupby(["model", "prompt"])}, afinn)
    ref = ref.set_index(["model", "prompt", "valence"])
    for col in ("n", "slope", "se", "t", "p", "intercept"):
        np.testing.assert_allclose(fast.loc[ref.index, col].to_numpy(dtype=float), ref[col].to_numpy(dtype=float),
                                   rtol=1e-8)


def test_class_gaps_equal_the_class_means():
    from rmlib.stats import lexical
    from rmlib.tables import lexicons

    bing = lexicons.bing_lexicon()
    rng = np.random.default_rng(6)
    words = list(bing["word"].iloc[:40]) + list(bing["word"].iloc[-40:]) + ["envious"]
    long = pd.DataFrame({"model": "A", "prompt": "x", "token_id": range(len(words)), "token": words,
                         "decoded": words, "score": rng.normal(size=len(words))})
    gap = lexical.class_gaps(long, bing).iloc[0]
    cls = lexical.sentiment_by_class(long, bing)
    assert gap["gap"] == pytest.approx(cls.loc["positive", "mean"] - cls.loc["negative", "mean"])
    a = long.set_index("decoded").loc[bing["word"].iloc[:40], "score"]
    b = long.set_index("decoded").loc[bing["word"].iloc[-40:], "score"]
    assert gap["p"] == pytest.approx(stats.ttest_ind(a, b).pvalue)  # equal-variance t = the OLS slope test


def test_prompt_taus_and_matrix_correlation():
    from rmlib.stats import agreement, rsa

    long = pd.DataFrame({"model": ["m"] * 8, "prompt": ["a"] * 4 + ["b"] * 4, "word": list("wxyz") * 2,
                         "score": [1, 2, 3, 4, 4, 3, 2, 1.5]})
    t = agreement.prompt_taus(long, "a", "b", key="word")
    assert t.loc[0, "tau"] == pytest.approx(stats.kendalltau([1, 2, 3, 4], [4, 3, 2, 1.5]).statistic)
    labels = list("abcdef")
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(6, 6))
    x = (x + x.T) / 2
    a = pd.DataFrame(x, index=labels, columns=labels)
    b = a.loc[labels[::-1], labels[::-1]] * 2 + 1  # the same matrix, other order, linear change
    r = rsa.matrix_correlation(a, b, method="pearson", n_perm=199)
    assert r["r"] == pytest.approx(1.0) and r["p"] <= 0.05 and r["n_pairs"] == 15


def test_top_bottom_bar_of_many_groups_selects_as_top_bottom():
    """The chart's one-sort preselection picks the same rows as rmlib's per-group selector (ties by id)."""
    from rmlib.stats.vocab import top_bottom
    from rmlib.viz import charts

    rng = np.random.default_rng(7)
    parts = []
    for m, p, size in (("a", "x", 30), ("a", "y", 7), ("b", "x", 30)):
        parts.append(pd.DataFrame({"model": m, "prompt": p, "token_id": rng.permutation(size),
                                   "token": [f"t{i}" for i in range(size)], "decoded": [f"t{i}" for i in range(size)],
                                   "score": rng.integers(0, 6, size).astype(float)}))
    long = pd.concat(parts)  # a repeated index, as a concat leaves it
    spec = charts.top_bottom_bar(long, n=4).to_dict()
    (values,) = spec["datasets"].values()  # Altair moves inline rows to `datasets`
    data = pd.DataFrame(values)
    got = set(zip(data["model"], data["prompt"], data["token_id"], data["end"]))
    want = set()
    for (m, p), g in long.groupby(["model", "prompt"]):
        ref = top_bottom(g.reset_index(drop=True), 4, tiebreak=["token_id"], disjoint=True)
        want |= set(zip(ref["model"], ref["prompt"], ref["token_id"], ref["end"]))
    assert got == want


def test_matrix_correlation_spearman_and_its_permutations():
    from rmlib.stats import rsa

    labels = list("abcdefg")
    rng = np.random.default_rng(2)
    x, y = rng.uniform(size=(7, 7)), rng.uniform(size=(7, 7))
    a = pd.DataFrame((x + x.T) / 2, index=labels, columns=labels)
    b = pd.DataFrame((y + y.T) / 2, index=labels, columns=labels)
    r = rsa.matrix_correlation(a, b, method="spearman", n_perm=500, seed=3)
    i, j = np.triu_indices(7, 1)
    assert r["r"] == pytest.approx(stats.spearmanr(a.to_numpy()[i, j], b.to_numpy()[i, j])[0])
    # the null by hand: the same relabelings, each a plain scipy Spearman correlation
    orders = np.argsort(np.random.default_rng(3).random((500, 7)), axis=1)
    null = [stats.spearmanr(a.to_numpy()[i, j], b.to_numpy()[np.ix_(o, o)][i, j])[0] for o in orders]
    assert r["p"] == pytest.approx((np.sum(np.abs(null) >= abs(r["r"]) - 1e-12) + 1) / 501)
