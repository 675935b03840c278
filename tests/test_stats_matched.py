"""rmlib.stats.matched (matched controls, the matched comparison, rank gaps) and the matched permutation test."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from rmlib.errors import InputError
from rmlib.stats import matched, resampling


# --------------------------------------------------------------------------- rank gaps
def test_rank_gaps_against_a_hand_computation():
    wide = pd.DataFrame({"human": [10.0, 30.0, 20.0, 20.0, np.nan], "A": [1.0, 2.0, 3.0, 4.0, 5.0],
                         "B": [4.0, 4.0, 1.0, 0.0, 2.0]}, index=list("pqrst"))
    gaps = matched.rank_gaps(wide)
    # t has no human rating: left out. Ranks 1 = highest, ties averaged.
    # human: q 1, r 2.5, s 2.5, p 4;  A: s 1, r 2, q 3, p 4;  B: p 1.5, q 1.5, r 3, s 4
    expected = pd.DataFrame({"A": [4 - 4, 3 - 1, 2 - 2.5, 1 - 2.5], "B": [1.5 - 4, 1.5 - 1, 3 - 2.5, 4 - 2.5]},
                            index=list("pqrs"))
    pd.testing.assert_frame_equal(gaps, expected)
    # the same with scipy
    d = wide.dropna()
    h = rankdata(-d["human"])
    assert np.allclose(gaps["A"], rankdata(-d["A"]) - h) and np.allclose(gaps["B"], rankdata(-d["B"]) - h)


def test_percentile_ranks_within_groups():
    t = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "prompt": "p", "score": [1.0, 2, 2, 4, 5, 3]})
    assert list(matched.percentile_ranks(t)) == [25.0, 62.5, 62.5, 100.0, 100.0, 50.0]


# --------------------------------------------------------------------------- controls
@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    n = 60
    f = pd.DataFrame({"stratum": rng.integers(1, 4, n), "length": rng.integers(3, 30, n).astype(float),
                      "freq": rng.normal(size=n)}, index=[f"item{i}" for i in range(n)])
    f["target"] = False
    f.iloc[:6, f.columns.get_loc("target")] = True
    return f


def test_controls_share_the_stratum_are_nearest_and_never_reused(frame):
    m = matched.matched_controls(frame, "target", exact=["stratum"], nearest=["length"], k=3, seed=1)
    assert len(m) == 18 and m["control"].is_unique
    assert not m["control"].isin(frame.index[frame["target"]]).any()
    for _, g in m.groupby("set"):
        t = g["target"].iloc[0]
        assert (frame.loc[g["control"], "stratum"] == frame.loc[t, "stratum"]).all()
        # no unused candidate of the stratum is strictly nearer than the farthest chosen control
        taken = set(m["control"])
        free = frame[(frame["stratum"] == frame.loc[t, "stratum"]) & ~frame["target"] & ~frame.index.isin(taken)]
        sd = frame.loc[~frame["target"], "length"].std(ddof=1)
        worst = g["distance"].max()
        assert (abs(free["length"] - frame.loc[t, "length"]) / sd >= worst - 1e-12).all()
    assert list(m.columns) == ["set", "target", "control", "distance", "stratum"]
    assert (m["stratum"] == frame.loc[m["target"], "stratum"].to_numpy()).all()
    assert sorted(m["set"].unique()) == list(range(6))


def test_balance_of_the_matched_sets(frame):
    m = matched.matched_controls(frame, "target", exact=["stratum"], nearest=["length"], k=3, seed=1)
    b = matched.balance(frame, m, ["length", "freq"])
    t, c = frame.loc[m.drop_duplicates("set")["target"]], frame.loc[m["control"]]
    assert b.loc["length", "targets"] == pytest.approx(t["length"].mean())
    assert b.loc["freq", "controls"] == pytest.approx(c["freq"].mean())
    sd = np.sqrt((t["freq"].var() + c["freq"].var()) / 2)
    assert b.loc["freq", "std_diff"] == pytest.approx((t["freq"].mean() - c["freq"].mean()) / sd)


def test_controls_are_seeded(frame):
    a = matched.matched_controls(frame, "target", nearest=["freq"], k=4, seed=5)
    b = matched.matched_controls(frame, frame["target"], nearest=["freq"], k=4, seed=5)
    pd.testing.assert_frame_equal(a, b)
    no_cov = [matched.matched_controls(frame, "target", k=4, seed=s)["control"].tolist() for s in (0, 1)]
    assert no_cov[0] != no_cov[1]  # without covariates the choice is the seed's


def test_candidates_missing_values_and_short_strata(frame):
    frame.loc["item10", "length"] = np.nan
    only = frame.index.isin([f"item{i}" for i in range(6, 16)])
    m = matched.matched_controls(frame, "target", nearest=["length"], k=3, candidates=only)
    assert set(m["control"]) <= set(frame.index[only]) - {"item10"}
    assert len(m) == 9 and len(m.attrs["short"]) + len(m.attrs["unmatched"]) > 0
    with pytest.raises(InputError, match="covariate"):
        matched.matched_controls(frame, "target", nearest=["nope"])
    with pytest.raises(InputError, match="k must"):
        matched.matched_controls(frame, "target", k=0)
    with pytest.raises(InputError, match="boolean mask"):
        matched.matched_controls(frame, [True, False])


# --------------------------------------------------------------------------- comparison
def brute_force_exact(sets):
    """The within-set permutation distribution, written out: every choice of target in every set."""
    observed = np.mean([s[0] - np.mean(s[1:]) for s in sets])
    null = []
    for pick in itertools.product(*[range(len(s)) for s in sets]):
        null.append(np.mean([s[j] - np.mean(np.delete(s, j)) for s, j in zip(sets, pick)]))
    null = np.array(null)
    return observed, min(1.0, 2 * min((null <= observed + 1e-12).mean(), (null >= observed - 1e-12).mean()))


def test_matched_permutation_test_exact_and_random():
    sets = [np.array([9.0, 1, 2]), np.array([7.0, 3, 2, 1]), np.array([5.0, 6]), np.array([8.0, 2, 4])]
    res = resampling.matched_permutation_test(sets, n_perm=9999)
    obs, p = brute_force_exact(sets)
    assert res.exact and res.n_perm == 3 * 4 * 2 * 3
    assert res.statistic == pytest.approx(obs) and res.pvalue == pytest.approx(p)
    more = sets + [np.array([3.0, 2, 4]), np.array([6.0, 1, 5]), np.array([2.0, 1, 3, 4])]  # 2,592 assignments
    obs, p = brute_force_exact(more)
    rnd = resampling.matched_permutation_test(more, n_perm=2000, seed=1)
    assert not rnd.exact and rnd.statistic == pytest.approx(obs) and rnd.pvalue == pytest.approx(p, abs=0.03)
    greater = resampling.matched_permutation_test(sets, alternative="greater")
    assert greater.pvalue <= res.pvalue
    with pytest.raises(ValueError, match="at least one control"):
        resampling.matched_permutation_test([np.array([1.0])])


def test_compare_matched_against_a_hand_computation():
    matches = pd.DataFrame({"set": [0, 0, 1, 1, 1, 2], "target": ["a", "a", "b", "b", "b", "c"],
                            "control": ["x", "y", "z", "w", "v", "u"], "distance": 0.0})
    values = pd.DataFrame({"m1": {"a": 10.0, "b": 4.0, "c": 1.0, "x": 2.0, "y": 4.0, "z": 1.0, "w": 2.0, "v": 3.0,
                                  "u": 3.0},
                           "m2": {"a": 1.0, "b": 1.0, "c": 1.0, "x": 1.0, "y": 1.0, "z": 1.0, "w": 1.0, "v": 1.0,
                                  "u": np.nan}})
    out = matched.compare_matched(values, matches, n_boot=500, seed=2).set_index("measure")
    d = np.array([10 - 3, 4 - 2, 1 - 3])
    row = out.loc["m1"]
    assert row["diff"] == pytest.approx(d.mean()) and row["n_sets"] == 3 and row["n_controls"] == 6
    assert row["mean_target"] == pytest.approx(5) and row["mean_control"] == pytest.approx((3 + 2 + 3) / 3)
    idx = resampling.bootstrap_indices(3, 500, 2)
    lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
    assert row["low"] == pytest.approx(lo) and row["high"] == pytest.approx(hi)
    sets = [np.array([10.0, 2, 4]), np.array([4.0, 1, 2, 3]), np.array([1.0, 3])]
    assert row["p"] == pytest.approx(resampling.matched_permutation_test(sets).pvalue)
    # m2: set 2 has no control value and is left out; every difference is 0
    assert out.loc["m2", "n_sets"] == 2 and out.loc["m2", "diff"] == 0 and out.loc["m2", "p"] == 1
    with pytest.raises(InputError, match="no row"):
        matched.compare_matched(values.drop(index="u"), matches)
    per_target = matched.matched_differences(values, matches)
    assert list(per_target.index) == ["a", "b", "c"] and list(per_target["m1"]) == list(d)
    assert per_target.loc["c", "m2"] != per_target.loc["c", "m2"]  # NaN: no control value
    # by group: each group on its own sets
    grouped = matched.compare_matched(values["m1"], matches.assign(g=["x", "x", "y", "y", "y", "y"]), by="g",
                                      n_boot=50)
    assert list(grouped["g"]) == ["x", "y"] and list(grouped["diff"]) == [7.0, ((4 - 2) + (1 - 3)) / 2]
    with pytest.raises(InputError, match="by"):
        matched.compare_matched(values, matches, by="model")


def test_text_covariates_and_deciles():
    freq = pd.DataFrame({"word": ["black", "people", "pizza"], "log_freq": [4.0, 6.0, -np.inf]})
    cov = matched.text_covariates(["Black people", "Pizza", "Gay men"], freq)
    assert list(cov["n_chars"]) == [12, 5, 7] and list(cov["n_words"]) == [2, 1, 2]
    assert cov.loc["Black people", "log_freq"] == 5.0 and cov[["log_freq"]].iloc[1:].isna().all().all()
    dec = matched.deciles(pd.Series(np.arange(100.0), name="human"))
    assert dec.min() == 1 and dec.max() == 10 and (dec.value_counts() == 10).all()


def test_token_frame_percentiles_keys_and_candidates():
    long = pd.DataFrame({"model": ["a"] * 6 + ["b"] * 2, "prompt": ["p"] * 3 + ["q"] * 3 + ["p"] * 2,
                         "token_id": [1, 2, 3, 1, 2, 3, 7, 8], "decoded": [" Gay", "table", "##", " Gay", "table", "##",
                                                                         "good", "gays"],
                         "score": [1.0, 2.0, 3.0, 3.0, 2.0, 1.0, 5.0, 4.0]})
    freq = pd.DataFrame({"word": ["gay", "table", "good"], "log_freq": [3.0, 4.0, 6.0]})
    tf = matched.token_frame(long, freq, targets=["gay", "gays"], exclude=["good"])
    assert list(tf.index) == ["a|1", "a|2", "a|3", "b|7", "b|8"] and tf.attrs["measures"] == ["p", "q"]
    assert list(tf["key"]) == ["gay", "table", "##", "good", "gays"]
    assert list(tf["target"]) == [True, False, False, False, True]
    assert list(tf["candidate"]) == [False, True, False, False, False]  # "##" not a word, "good" excluded
    assert np.allclose(tf["p"], [100 / 3, 200 / 3, 100.0, 100.0, 50.0]) and tf.loc["a|1", "q"] == 100.0
    assert np.isnan(tf.loc["b|7", "q"]) and tf.loc["a|2", "log_freq"] == 4.0


def test_token_frame_joins_several_across_columns_and_matches_within_their_strata():
    """Two ``across`` columns make one percentile column per pair of values, named ``"<run> | <prompt>"``;
    two ``exact`` columns make one stratum per pair (a control shares both with its target)."""
    long = pd.DataFrame({"model": ["a"] * 8, "run": ["clean"] * 4 + ["dirty"] * 4,
                         "prompt": ["p", "p", "q", "q"] * 2, "token_id": [1, 2, 1, 2] * 2,
                         "decoded": ["gay", "table"] * 4, "score": [1.0, 2.0, 2.0, 1.0, 2.0, 1.0, 1.0, 2.0]})
    freq = pd.DataFrame({"word": ["gay", "table"], "log_freq": [3.0, 4.0]})
    tf = matched.token_frame(long, freq, targets=["gay"], across=["run", "prompt"])
    assert tf.attrs["measures"] == ["clean | p", "clean | q", "dirty | p", "dirty | q"]
    assert tf.loc["a|1", tf.attrs["measures"]].tolist() == [50.0, 100.0, 100.0, 50.0]
    frame = pd.DataFrame({"g1": ["x", "x", "x", "y", "y", "y"], "g2": ["u", "v", "u", "u", "v", "u"],
                          "d": [0.0, 0.1, 0.2, 0.0, 0.1, 5.0], "target": [True, False, False, True, False, False]},
                         index=list("ABCDEF"))
    m = matched.matched_controls(frame, "target", exact=["g1", "g2"], nearest=["d"], k=2)
    assert m.set_index("target")["control"].to_dict() == {"A": "C", "D": "F"}  # never B or E: another g2
