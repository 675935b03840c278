"""rmlib.stats.policy: the KL-regularised optimum and best-of-n, against hand computations,
enumeration, Monte Carlo and the definitions; stability at the extremes; tables and findings."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rmlib.errors import InputError
from rmlib.stats import policy

# A 5-token toy: the reference's probabilities, rewards with a tie (tokens 1 and 2).
P = np.array([0.4, 0.25, 0.15, 0.1, 0.1])
R = np.array([0.0, 1.0, 1.0, 2.0, -1.0])
TOKENS = ["a", "b", "c", "d", "e"]


def long(model, scores, prompt="p", ids=None, tokens=TOKENS):
    ids = list(range(len(scores))) if ids is None else list(ids)
    return pd.DataFrame({"model": model, "prompt": prompt, "token_id": ids,
                         "token": [tokens[i] for i in ids], "decoded": [tokens[i] for i in ids],
                         "score": np.asarray(scores, dtype=float)})


def toy_inputs(prompts=("p",), reward=R, p=P, tokens=TOKENS):
    ref = pd.concat([long("lm", np.log(p), q, tokens=tokens) for q in prompts])
    rm = pd.concat([long("rm", reward, q, tokens=tokens) for q in prompts])
    return policy.policy_inputs(ref, rm)


# --------------------------------------------------------------------------- the optimum
def test_kl_optimum_equals_a_hand_computation():
    beta = 0.5
    w = [0.4 * math.exp(0 / beta), 0.25 * math.exp(1 / beta), 0.15 * math.exp(1 / beta),
         0.1 * math.exp(2 / beta), 0.1 * math.exp(-1 / beta)]
    z = sum(w)
    got = np.exp(policy.kl_optimal(np.log(P), R, beta))
    assert np.allclose(got, [v / z for v in w], rtol=1e-12)
    # log_ref need not be normalised: only the ratio over the tokens given matters
    assert np.allclose(policy.kl_optimal(np.log(P) + 3.0, R, beta), np.log(got))


def test_kl_optimum_maximises_the_regularised_objective():
    """π* beats any other distribution on E[r] − β KL (here: random ones and the two limits)."""
    beta = 0.7
    star = np.exp(policy.kl_optimal(np.log(P), R, beta))

    def objective(q):
        on = q > 0
        return (q * R).sum() - beta * (q[on] * np.log(q[on] / P[on])).sum()

    rng = np.random.default_rng(0)
    others = [rng.dirichlet(np.ones(5)) for _ in range(200)] + [P, np.eye(5)[3]]
    assert all(objective(star) >= objective(q) - 1e-12 for q in others)


def test_extreme_betas_are_stable_and_reach_the_limits():
    rng = np.random.default_rng(1)
    log_ref = np.log(rng.dirichlet(np.ones(1000)))
    reward = rng.normal(scale=1e6, size=1000)  # a huge reward scale
    best = np.argmax(reward)
    for beta in (0.0, 1e-300, 1e-12, 1e-3, 1.0, 1e12, 1e300, np.inf):
        logp = policy.kl_optimal(log_ref, reward, beta)
        assert not np.isnan(logp).any()
        assert np.isclose(np.exp(logp).sum(), 1.0)
    for beta in (0.0, 1e-300, 1e-12):
        assert np.exp(policy.kl_optimal(log_ref, reward, beta))[best] == pytest.approx(1.0)
    for beta in (1e300, np.inf):
        assert np.allclose(policy.kl_optimal(log_ref, reward, beta), log_ref - np.log(np.exp(log_ref).sum()))


def test_rewards_near_the_float_limit_do_not_overflow():
    r = np.array([1e308, -1e308, 0.0, 1e308, 5.0])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        for beta in (1.0, 1e308):
            got = np.exp(policy.kl_optimal(np.log(P), r, beta))
            scaled = [v / 1e308 for v in r] if beta == 1e308 else None
            if scaled is None:  # a gap of 1e308 at beta 1: the top tokens alone, in proportion to the reference
                want = np.array([0.4, 0, 0, 0.1, 0]) / 0.5
            else:  # exp(r / beta) with r / beta = 1, -1, 0, 1, 5e-308: by hand
                w = np.array([P[k] * math.exp(scaled[k]) for k in range(5)])
                want = w / w.sum()
            assert np.allclose(got, want, rtol=1e-12, atol=0)
        assert np.allclose(np.exp(policy.kl_optimal(np.log(P), r, np.inf)), P)
        assert np.exp(policy.kl_optimal(np.log(P), r, 1e308))[1] == pytest.approx(
            0.25 * math.exp(-1) / (0.4 * math.e + 0.25 / math.e + 0.15 + 0.1 * math.e + 0.1), rel=1e-12)


def test_best_of_infinitely_many_draws_is_the_best_reward():
    got = np.exp(policy.best_of_n(np.log(P), R, np.inf))
    assert np.array_equal(got, [0, 0, 0, 1, 0])  # token 3 alone has the top reward
    tied = np.array([2.0, 0.0, 2.0, 1.0, -1.0])  # tokens 0 and 2 tie at the top: shared as the reference does
    assert np.allclose(np.exp(policy.best_of_n(np.log(P), tied, np.inf)), [0.4 / 0.55, 0, 0.15 / 0.55, 0, 0])
    assert np.allclose(np.exp(policy.best_of_n(np.log(P), tied, np.inf)),
                       np.exp(policy.best_of_n(np.log(P), tied, 1e300)))


def test_kl_approximation_is_defined_from_one_draw_on():
    assert policy.kl_approximation(1) == 0
    assert policy.kl_approximation([2, np.inf]).tolist() == [math.log(2) - 0.5, np.inf]
    for n in (0, 0.5, -1, np.nan):
        with pytest.raises(InputError, match=r"n must be numbers >= 1 \(the number of draws\)"):
            policy.kl_approximation(n)


def test_bad_arguments_of_the_policy_functions_are_named():
    inputs = toy_inputs()
    cases = [(lambda: policy.kl_optimal(np.log(P), R, None), r"beta must be a number >= 0 .*got None"),
             (lambda: policy.kl_optimal(np.log(P), R, "1"), r"beta must be a number >= 0 .*got '1'"),
             (lambda: policy.summarize(np.log(P)[:3], np.log(P), R),
              r"logp, log_ref and reward must have one value per token: got 3, 5 and 5"),
             (lambda: policy.kl_path(inputs, "abc"), r"betas must be numbers >= 0 .*got 'abc'"),
             (lambda: policy.best_of_n_path(inputs, ["x"]), r"n must be finite numbers >= 1, got \['x'\]")]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()


def test_a_reference_with_nan_or_no_probability_on_the_scored_tokens_is_named():
    ref, rm = long("lm", np.log(P)), long("rm", R)
    ref.loc[2, "score"] = np.nan
    with pytest.raises(InputError, match=r"the reference 'lm' has 1 NaN log-probabilities for the prompt 'p' \(token "
                                         r"ids \[2\]\): rescore it"):
        policy.policy_inputs(ref, rm)
    with np.errstate(divide="ignore"):
        ref = long("lm", np.log([0.5, 0.5, 0.0, 0.0, 0.0]))  # the reward model scored tokens 2..4 only
        with pytest.raises(InputError, match=r"the reference 'lm' gives probability 0 to every token the reward model "
                                             r"'rm' scored for the prompt 'p' \(3 tokens\)"):
            policy.policy_inputs(ref, long("rm", R[2:], ids=[2, 3, 4]))


def test_reward_only_limit_splits_ties_in_proportion_to_the_reference():
    r = np.array([0.0, 2.0, 2.0, 1.0, 2.0])
    got = np.exp(policy.kl_optimal(np.log(P), r, 0.0))
    expected = np.array([0, 0.25, 0.15, 0, 0.1]) / 0.5
    assert np.allclose(got, expected)


def test_tokens_the_reference_cannot_say_stay_at_zero():
    log_ref = np.array([math.log(0.5), math.log(0.5), -np.inf, -np.inf])
    reward = np.array([0.0, 1.0, 1e9, -1e9])  # token 2: huge reward, but probability 0 under the reference
    for beta in (0.0, 1e-200, 1.0, np.inf):
        p = np.exp(policy.kl_optimal(log_ref, reward, beta))
        assert not np.isnan(p).any() and p[2] == 0 and p[3] == 0
    assert np.exp(policy.best_of_n(log_ref, reward, 10))[2] == 0


def test_bad_inputs_are_named():
    with pytest.raises(InputError, match="beta must be a number >= 0"):
        policy.kl_optimal(np.log(P), R, -1)
    with pytest.raises(InputError, match="one value per token"):
        policy.kl_optimal(np.log(P), R[:3], 1)
    with pytest.raises(InputError, match="NaN or infinite"):
        policy.kl_optimal(np.log(P), np.r_[R[:4], np.nan], 1)
    with pytest.raises(InputError, match="probability 0"):
        policy.kl_optimal(np.full(3, -np.inf), np.zeros(3), 1)
    with pytest.raises(InputError, match="n must be >= 1"):
        policy.best_of_n(np.log(P), R, 0.5)


# --------------------------------------------------------------------------- best-of-n
def enumerate_best_of(n, p=P, r=R):
    """Every sequence of n draws; the best reward wins, a tie goes to the first such draw."""
    out = np.zeros(len(p))
    for draws in itertools.product(range(len(p)), repeat=n):
        best = max(r[d] for d in draws)
        out[next(d for d in draws if r[d] == best)] += np.prod(p[list(draws)])
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_best_of_n_equals_enumeration_with_ties(n):
    assert np.allclose(np.exp(policy.best_of_n(np.log(P), R, n)), enumerate_best_of(n), atol=1e-14)


def test_best_of_n_against_monte_carlo_and_sums_to_one():
    rng = np.random.default_rng(7)
    n, trials = 6, 200_000
    draws = rng.choice(5, size=(trials, n), p=P)
    rewards = R[draws]
    first_best = np.argmax(rewards == rewards.max(axis=1, keepdims=True), axis=1)  # ties: the first best draw
    freq = np.bincount(draws[np.arange(trials), first_best], minlength=5) / trials
    exact = np.exp(policy.best_of_n(np.log(P), R, n))
    se = np.sqrt(exact * (1 - exact) / trials)
    assert np.all(np.abs(freq - exact) < 5 * se + 1e-9)
    for m in (1, 1.5, 2, 10, 1024, 1e6, 1e15):
        assert np.exp(policy.best_of_n(np.log(P), R, m)).sum() == pytest.approx(1.0, abs=1e-12)


def test_best_of_one_is_the_reference_even_for_tiny_probabilities():
    p = np.array([1 - 2e-30, 1e-30, 1e-30])
    r = np.array([0.0, 1.0, 2.0])
    got = policy.best_of_n(np.log(p), r, 1)
    assert np.allclose(got, np.log(p), rtol=1e-12)
    # n = 1e30 draws: P(no rare token) = (1 - 2e-30)^n = e^-2, P(none with reward 2) = e^-1
    big = np.exp(policy.best_of_n(np.log(p), r, 1e30))
    assert np.allclose(big, [math.exp(-2), math.exp(-1) - math.exp(-2), 1 - math.exp(-1)], rtol=1e-9)
    huge = np.exp(policy.best_of_n(np.log(p), r, 1e300))
    assert not np.isnan(huge).any() and huge[2] == pytest.approx(1.0)


def test_path_statistics_follow_the_definitions():
    inputs = toy_inputs()
    betas = [0.0, 0.3, 1.0, 5.0, np.inf]
    path = policy.kl_path(inputs, betas)
    for _, row in path.iterrows():
        q = np.exp(policy.kl_optimal(np.log(P), R, row["beta"]))
        on = q > 0
        assert row["expected_reward"] == pytest.approx((q * R).sum())
        assert row["kl"] == pytest.approx(sps.entropy(q, P))  # scipy: KL(q ‖ P)
        assert row["entropy"] == pytest.approx(-(q[on] * np.log(q[on])).sum())
        assert row["top_prob"] == pytest.approx(q.max())
    assert path.set_index("beta").loc[np.inf, "kl"] == pytest.approx(0, abs=1e-12)
    assert path.set_index("beta").loc[0.0, "expected_reward"] == pytest.approx(2.0)
    # the group-level best-of-n statistics equal the per-token definitions
    bon = policy.best_of_n_path(inputs, [1, 2, 3.5, 100])
    for _, row in bon.iterrows():
        q = np.exp(policy.best_of_n(np.log(P), R, row["n"]))
        on = q > 0
        assert row["expected_reward"] == pytest.approx((q * R).sum())
        assert row["kl"] == pytest.approx(sps.entropy(q, P))
        assert row["entropy"] == pytest.approx(-(q[on] * np.log(q[on])).sum())
        assert row["top_prob"] == pytest.approx(q.max())
        assert row["top_decoded"] == TOKENS[int(np.argmax(q))]
        assert row["kl_approx"] == pytest.approx(np.log(row["n"]) - (row["n"] - 1) / row["n"])


def test_best_of_n_kl_meets_the_approximation_without_ties():
    """With many equally likely distinct rewards the exact KL approaches log n − (n−1)/n."""
    V = 100_000
    inputs = toy_inputs(reward=np.arange(V, dtype=float), p=np.full(V, 1 / V), tokens=[f"t{i}" for i in range(V)])
    bon = policy.best_of_n_path(inputs, [2, 16, 256])
    assert np.allclose(bon["kl"], bon["kl_approx"], atol=1e-3)
    assert (bon["kl"] <= bon["kl_approx"] + 1e-9).all()


def test_matching_n_is_the_smallest_that_reaches_the_policy():
    inputs = toy_inputs()
    m = policy.best_of_n_matching(inputs, beta=1.0).iloc[0]
    target = (np.exp(policy.kl_optimal(np.log(P), R, 1.0)) * R).sum()
    assert m["policy_reward"] == pytest.approx(target)
    e = lambda n: (np.exp(policy.best_of_n(np.log(P), R, n)) * R).sum()  # noqa: E731
    n = int(m["n"])
    assert e(n) >= target > e(n - 1)
    assert m["bon_reward"] == pytest.approx(e(n))
    # a target no number of draws reaches: the reward-only policy is reached only in the limit
    none = policy.best_of_n_matching(toy_inputs(p=np.array([1 - 1e-30, 1e-30 / 4, 1e-30 / 4, 1e-30 / 4, 1e-30 / 4])),
                                     beta=1e-9).iloc[0]
    assert np.isinf(none["n"])


# --------------------------------------------------------------------------- tables
def test_inputs_renormalise_over_a_subset_and_report_the_covered_mass():
    ref = long("lm", np.log(P))
    rm = long("rm", R[[1, 3, 4]], ids=[1, 3, 4])
    inputs = policy.policy_inputs(ref, rm)
    assert inputs["token_id"].tolist() == [1, 3, 4]
    assert np.allclose(np.exp(inputs["log_ref"]), P[[1, 3, 4]] / 0.45)
    assert np.allclose(inputs["log_ref_vocab"], np.log(P[[1, 3, 4]]))
    cov = policy.coverage(inputs).iloc[0]
    assert cov["n_tokens"] == 3 and cov["reference_mass"] == pytest.approx(0.45)
    assert inputs["pair"].iat[0] == "lm + rm"
    path = policy.kl_path(inputs, [np.inf])
    assert path["expected_reward"].iat[0] == pytest.approx((P[[1, 3, 4]] * R[[1, 3, 4]]).sum() / 0.45)


def test_inputs_refuse_mismatched_tables():
    ref = long("lm", np.log(P))
    with pytest.raises(InputError, match="same tokenizer"):
        policy.policy_inputs(ref.iloc[:3], long("rm", R))
    renamed = long("rm", R, tokens=["a", "b", "X", "d", "e"])
    with pytest.raises(InputError, match="share a tokenizer"):
        policy.policy_inputs(ref, renamed)
    with pytest.raises(InputError, match="not log-probabilities"):
        policy.policy_inputs(long("lm", R * 3), long("rm", R))
    with pytest.raises(InputError, match="no table for the prompt"):
        policy.policy_inputs(ref, long("rm", R, prompt="other"))
    with pytest.raises(InputError, match="pair up one to one"):
        policy.policy_inputs(pd.concat([ref, long("lm2", np.log(P))]), long("rm", R))
    with pytest.raises(InputError, match="pair names one pair"):
        policy.policy_inputs(pd.concat([ref, long("lm2", np.log(P))]), pd.concat([long("rm", R), long("rm2", R)]),
                             pair="x")


def test_inputs_pair_models_in_order_and_keep_the_prompt_order():
    refs = pd.concat([long(m, np.log(P), q) for m in ("org/lm", "org/lm2") for q in ("z", "a")])
    rms = pd.concat([long(m, R[::-1] if m == "rm2" else R, q) for m in ("rm", "rm2") for q in ("z", "a")])
    inputs = policy.policy_inputs(refs, rms.iloc[::-1], label=lambda m: m.split("/")[-1])
    assert list(dict.fromkeys(inputs["pair"])) == ["lm + rm2", "lm2 + rm"]  # the k-th of each, as they appear
    assert list(dict.fromkeys(inputs["prompt"])) == ["a", "z"]  # the reward table's order
    one = inputs[(inputs["pair"] == "lm + rm2") & (inputs["prompt"] == "a")]
    assert one["token_id"].tolist() == [0, 1, 2, 3, 4] and np.allclose(one["reward"], R[::-1])


def test_top_tokens_and_token_probabilities():
    inputs = toy_inputs()
    top = policy.top_tokens(inputs, [0.5, np.inf], n=3)
    at = top[top["beta"] == np.inf]
    assert at["decoded"].tolist() == ["a", "b", "c"] and np.allclose(at["prob"], [0.4, 0.25, 0.15])
    q = np.exp(policy.kl_optimal(np.log(P), R, 0.5))
    assert top[top["beta"] == 0.5]["decoded"].tolist() == [TOKENS[i] for i in np.argsort(-q)[:3]]
    zero = policy.top_tokens(toy_inputs(reward=np.array([0.0, 1.0, 1.0, 2.0, 2.0])), [0.0], n=4)
    assert zero["decoded"].tolist() == ["d", "e", "b", "c"]  # by reward, then the reference (d and e tie)
    assert np.allclose(zero["prob"], [0.5, 0.5, 0.0, 0.0])
    probs = policy.token_probabilities(inputs, pd.DataFrame({"pair": "lm + rm", "prompt": "p", "token_id": [3]}),
                                       [0.5, 1.0])
    assert np.allclose(probs["prob"], [q[3], np.exp(policy.kl_optimal(np.log(P), R, 1.0))[3]])
    both = policy.token_probabilities(inputs, policy.crossover(inputs, "d"), [0.5], id_columns=["token_id", "rival_id"])
    assert both["decoded"].tolist() == ["a", "d"] and np.allclose(both["prob"], q[[0, 3]])
    assert policy.token_probabilities(inputs, pd.DataFrame({"pair": "x", "prompt": "p", "token_id": [3]}), [1]).empty


def test_crossover_beta_is_where_the_two_probabilities_meet():
    inputs = toy_inputs()
    row = policy.crossover(inputs, " D ").iloc[0]  # matched lower-cased and stripped
    assert row["token"] == "d" and row["rival"] == "a"
    b = row["crossover_beta"]
    assert b == pytest.approx((2.0 - 0.0) / (math.log(0.4) - math.log(0.1)))
    for beta, ahead in ((b * 0.9, True), (b * 1.1, False)):
        q = np.exp(policy.kl_optimal(np.log(P), R, beta))
        assert bool(q[3] > q[0]) is ahead
    q = np.exp(policy.kl_optimal(np.log(P), R, b))
    assert q[3] == pytest.approx(q[0])
    assert math.isnan(policy.crossover(inputs, "e")["crossover_beta"].iat[0])  # worse rewarded, less likely: never
    assert math.isnan(policy.crossover_beta(-1.0, 2.0, -2.0, 1.0))  # ahead at every β
    assert policy.crossover(inputs, "zzz").empty


# --------------------------------------------------------------------------- biases along beta
WORDS = ["the", "love", "gay", "muslim", "war", "cat", "xqz"]
FREQ = pd.DataFrame({"word": ["the", "love", "gay", "muslim", "war", "cat"],
                     "freq": [60000.0, 500.0, 40.0, 20.0, 450.0, 25.0]})


def word_inputs():
    p = np.array([0.5, 0.2, 0.05, 0.05, 0.1, 0.05, 0.05])
    r = np.array([0.0, 3.0, -2.0, -1.0, -3.0, 1.0, 0.5])
    tokens = [" " + w.capitalize() if i % 2 else w for i, w in enumerate(WORDS)]
    return toy_inputs(reward=r, p=p, tokens=tokens), p, r


def test_frequency_correlations_match_scipy_at_each_beta_and_the_ends():
    inputs, p, r = word_inputs()
    betas = [1e-9, 0.5, 2.0, np.inf]
    corr = policy.frequency_correlations(inputs, FREQ, betas).set_index(["beta", "quantity"])["correlation"]
    logf = np.log(FREQ["freq"].to_numpy())
    for beta in betas:
        logp = policy.kl_optimal(np.log(p), r, beta)[:6]
        assert corr[(beta, "log π*")] == pytest.approx(sps.spearmanr(logp, logf)[0])
        assert corr[(beta, "reward r")] == pytest.approx(sps.spearmanr(r[:6], logf)[0])
    assert corr[(np.inf, "log π*")] == pytest.approx(corr[(np.inf, "log π_ref")])
    assert corr[(1e-9, "log π*")] == pytest.approx(corr[(1e-9, "reward r")])
    pearson = policy.frequency_correlations(inputs, FREQ, [2.0], method="pearson")
    got = pearson.set_index("quantity").loc["log π*", "correlation"]
    assert got == pytest.approx(sps.pearsonr(policy.kl_optimal(np.log(p), r, 2.0)[:6], logf)[0])
    assert (pearson["n"] == 6).all()


def test_term_controls_are_the_nearest_free_tokens_in_log_frequency():
    inputs, _, _ = word_inputs()
    m = policy.term_controls(inputs, ["Gay", "muslim", "absent"], FREQ, seed=0)
    terms, controls = m[m["group"] == "term"], m[m["group"] == "control"]
    assert sorted(terms["word"]) == ["gay", "muslim"]
    assert not set(controls["word"]) & {"gay", "muslim"}
    assert controls["token_id"].is_unique and len(controls) == 2
    # by hand: greedy nearest log frequency without replacement, in one of the two orders of the terms
    logf = dict(zip(m["word"], m["log_freq"]))
    pool = {w: np.log(f) for w, f in FREQ.itertuples(index=False) if w not in ("gay", "muslim")}
    pool = {w: v for w, v in pool.items() if w in WORDS}
    got = dict(zip(terms["word"], controls.set_index("matched_to").loc[terms["token_id"], "word"]))
    orders = []
    for order in (["gay", "muslim"], ["muslim", "gay"]):
        free, pick = dict(pool), {}
        for w in order:
            pick[w] = min(free, key=lambda c: abs(free[c] - logf[w]))
            free.pop(pick[w])
        orders.append(pick)
    assert got in orders
    with pytest.raises(InputError, match="terms is empty"):
        policy.term_controls(inputs, [], FREQ)


def test_term_controls_take_k_nearest_free_tokens_per_term():
    inputs, _, _ = word_inputs()
    m = policy.term_controls(inputs, ["gay", "muslim"], FREQ, k=2, seed=0)
    assert m["group"].tolist() == ["term", "control", "control"] * 2  # each term, then its controls
    controls = m[m["group"] == "control"]
    assert controls["token_id"].is_unique and len(controls) == 4  # without replacement
    logf = dict(zip(FREQ["word"], np.log(FREQ["freq"])))
    got = {w: set(controls.loc[controls["matched_to"] == t, "word"])
           for w, t in m.loc[m["group"] == "term", ["word", "token_id"]].itertuples(index=False)}
    orders = []  # by hand: each term in turn takes its two nearest free words, in either order
    for order in (["gay", "muslim"], ["muslim", "gay"]):
        free, pick = {w for w in logf if w not in ("gay", "muslim")}, {}
        for w in order:
            pick[w] = set(sorted(free, key=lambda c: abs(logf[c] - logf[w]))[:2])
            free -= pick[w]
        orders.append(pick)
    assert got in orders
    one = policy.term_controls(inputs, ["gay", "muslim"], FREQ, k=1, seed=0)
    assert len(one) == 4
    with pytest.raises(InputError, match="k must be"):
        policy.term_controls(inputs, ["gay"], FREQ, k=0)


def test_group_mass_sums_the_policy_and_equals_the_reference_at_infinity():
    inputs, p, r = word_inputs()
    groups = pd.DataFrame({"pair": "lm + rm", "prompt": "p", "token_id": [1, 1, 2, 4], "group": ["a", "a", "a", "b"]})
    mass = policy.group_mass(inputs, groups, [0.5, np.inf]).set_index(["beta", "group"])
    q = np.exp(policy.kl_optimal(np.log(p), r, 0.5))
    assert mass.loc[(0.5, "a"), "mass"] == pytest.approx(q[1] + q[2])  # a token listed twice counts once
    assert mass.loc[(0.5, "a"), "n_tokens"] == 2
    assert mass.loc[(0.5, "b"), "reference_mass"] == pytest.approx(p[4])
    assert mass.loc[(np.inf, "b"), "ratio"] == pytest.approx(1.0)


def test_beta_labels():
    assert [policy.beta_label(b) for b in (0, 0.01, 1.0, 1e4, np.inf)] == [
        "0 (reward only)", "0.01", "1", "10000", "∞ (reference)"]
