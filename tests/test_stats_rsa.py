"""rmlib.stats.rsa against hand-built matrices and direct least squares."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from rmlib import registry
from rmlib.stats import design, rsa_regression, similarity_matrices

LABELS = [f"m{i}" for i in range(7)]


def test_similarity_matrices_by_hand():
    facts = pd.DataFrame({
        "hub_id": ["a", "b", "c"],
        "family": ["gemma2", "gemma2", "llama3"],
        "developer": ["X", "Y", "X"],
        "params_b": [27, 2, 8],
        "rewardbench_rank": [2, 31, 10],
    })
    m = similarity_matrices(facts)
    assert set(m) == {"base_model", "developer", "params", "rewardbench_rank"}
    np.testing.assert_array_equal(m["base_model"].to_numpy(), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(m["developer"].to_numpy(), [[1, 0, 1], [0, 1, 0], [1, 0, 1]])
    assert m["params"].loc["a", "b"] == pytest.approx(1 / 26)
    assert m["params"].loc["c", "a"] == pytest.approx(1 / 20)
    assert m["rewardbench_rank"].loc["b", "c"] == pytest.approx(1 / 22)
    assert all(np.allclose(np.diag(x), 1) for x in m.values())


def test_similarity_matrices_from_the_registry():
    facts = registry.paper_models()
    m = similarity_matrices(facts)
    assert m["base_model"].shape == (10, 10)
    # The paper's base_model is the family (Gemma vs Llama): 4 Gemma, 6 Llama models
    assert m["base_model"].to_numpy().sum() == 4 * 4 + 6 * 6


def test_missing_fact_column_is_named():
    with pytest.raises(KeyError, match="params_b"):
        similarity_matrices(pd.DataFrame({"hub_id": ["a"], "family": ["g"], "developer": ["d"],
                                          "rewardbench_rank": [1]}))


@pytest.fixture
def synthetic():
    """An agreement matrix built from two predictor matrices plus noise."""
    rng = np.random.default_rng(5)
    k = len(LABELS)

    def sym(x):
        x = (x + x.T) / 2
        np.fill_diagonal(x, 1.0)
        return pd.DataFrame(x, index=LABELS, columns=LABELS)

    p1 = sym(rng.uniform(size=(k, k)))
    p2 = sym(rng.uniform(size=(k, k)))
    p3 = sym(rng.uniform(size=(k, k)))
    noise = sym(rng.normal(scale=0.02, size=(k, k)))
    agreement = sym(0.2 + 0.5 * p1.to_numpy() + 0.1 * p2.to_numpy() + noise.to_numpy())
    return agreement, {"p1": p1, "p2": p2, "p3": p3}


def _lstsq(y, X):
    Xc = np.column_stack([np.ones(len(y)), X])
    beta, *_ = np.linalg.lstsq(Xc, y, rcond=None)
    resid = y - Xc @ beta
    r2 = 1 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))
    sigma2 = resid @ resid / (len(y) - Xc.shape[1])
    se = np.sqrt(np.diag(sigma2 * np.linalg.inv(Xc.T @ Xc)))
    return beta, se, r2


def _triu(m):
    i, j = np.triu_indices(len(LABELS), k=1)
    return m.to_numpy()[i, j]


def test_design_is_the_upper_triangle(synthetic):
    agreement, preds = synthetic
    d = design(agreement, preds)
    assert len(d) == 21
    np.testing.assert_array_equal(d["agreement"], _triu(agreement))
    np.testing.assert_array_equal(d["p2"], _triu(preds["p2"]))


def test_single_and_multiple_match_lstsq(synthetic):
    agreement, preds = synthetic
    y = _triu(agreement)
    single = rsa_regression(agreement, preds, "single")
    for name, m in preds.items():
        beta, se, r2 = _lstsq(y, _triu(m)[:, None])
        rows = single[single["model"] == name].set_index("term")
        np.testing.assert_allclose(rows.loc[["const", name], "coef"], beta)
        np.testing.assert_allclose(rows.loc[["const", name], "se"], se)
        assert rows["r2"].iloc[0] == pytest.approx(r2)
    multi = rsa_regression(agreement, preds, "multiple").set_index("term")
    X = np.column_stack([_triu(preds[n]) for n in ("p1", "p2", "p3")])
    beta, se, r2 = _lstsq(y, X)
    np.testing.assert_allclose(multi.loc[["const", "p1", "p2", "p3"], "coef"], beta)
    np.testing.assert_allclose(multi.loc[["const", "p1", "p2", "p3"], "se"], se)
    assert multi["r2"].iloc[0] == pytest.approx(r2)
    assert multi["n_pairs"].iloc[0] == 21


def test_standardized_coefficients_are_betas(synthetic):
    agreement, preds = synthetic
    out = rsa_regression(agreement, {"p1": preds["p1"]}, "single", standardize=True).set_index("term")
    r = np.corrcoef(_triu(agreement), _triu(preds["p1"]))[0, 1]
    assert out.loc["p1", "coef"] == pytest.approx(r)


def test_stepwise_is_forward_selection_by_aic(synthetic):
    agreement, preds = synthetic
    out = rsa_regression(agreement, preds, "stepwise")
    steps = out.attrs["steps"]
    assert steps[1]["added"] == "p1"  # the strongest predictor enters first
    chosen = [s["added"] for s in steps[1:]]
    y = pd.Series(_triu(agreement))
    X = pd.DataFrame({n: _triu(m) for n, m in preds.items()})

    def aic(cols):
        return sm.OLS(y, sm.add_constant(X[cols], has_constant="add")).fit().aic

    # each step lowered AIC and no remaining predictor would lower it further
    aics = [aic([])] + [aic(chosen[: i + 1]) for i in range(len(chosen))]
    assert all(b < a for a, b in zip(aics, aics[1:]))
    for extra in set(preds) - set(chosen):
        assert aic(chosen + [extra]) >= aics[-1]
    assert out["aic"].iloc[0] == pytest.approx(aics[-1])
    assert set(out["term"]) == {"const", *chosen}


def test_stepwise_by_pvalue_stops_at_alpha(synthetic):
    agreement, preds = synthetic
    out = rsa_regression(agreement, preds, "stepwise", criterion="pvalue", alpha_enter=0.05)
    for s in out.attrs["steps"][1:]:
        assert s["p"] < 0.05


def test_collinear_predictors_are_an_error(synthetic):
    agreement, preds = synthetic
    twice = {"p1": preds["p1"], "p1_again": preds["p1"] * 2}
    with pytest.raises(ValueError, match="collinear"):
        rsa_regression(agreement, twice, "multiple")


def test_labels_must_match(synthetic):
    agreement, preds = synthetic
    other = preds["p1"].rename(index={"m0": "zz"}, columns={"m0": "zz"})
    with pytest.raises(KeyError, match="m0"):
        rsa_regression(agreement, {"p": other})
