"""The tables chapter 7 prints about the RMs it trained (rmlib.training.evaluate: runs_table, loss_curves,
run_provenance, family_gaps, training_keys), read back against the training record and the direct calls."""

import dataclasses

import pandas as pd
import pytest

from rmlib.training import evaluate, preferences
from tests.test_memo import trained  # noqa: F401  (the module-scoped tiny trained RM)


def test_run_tables_read_the_training_record(trained):  # noqa: F811
    runs, _ = trained
    info = runs["tiny:llama-lm"].info
    row = evaluate.runs_table(runs).iloc[0]
    assert row["RM"] == "tiny:llama-lm" and row["pairs"] == info["n_pairs"] and row["epochs"] == info["epochs"]
    assert row["final loss"] == info["loss_curve"][-1]["loss"] and row["held-out tau"] == info["heldout_tau"]
    curves = evaluate.loss_curves(runs)
    assert list(curves["epoch"]) == [e["epoch"] for e in info["loss_curve"]] == [1, 2]
    assert list(curves["loss"]) == [e["loss"] for e in info["loss_curve"]]
    prov = evaluate.run_provenance(runs).iloc[0]
    assert prov["training key"] == info["key"] and prov["revision"] == info["base_revision"]
    assert info["data"]["sha256"].startswith(prov["data sha256"]) and len(prov["data sha256"]) == 12


def test_family_gaps_is_gap_with_ci_per_run(trained):  # noqa: F811
    runs, _ = trained
    run = runs["tiny:llama-lm"]
    gaps = evaluate.family_gaps(runs, n_boot=20, seed=0)
    direct = evaluate.gap_with_ci(evaluate.bigtwo_table(run.folder, run.info["prompt"]), n_boot=20, seed=0)
    assert list(gaps["RM"]) == ["tiny:llama-lm"] and gaps.iloc[0]["base model"] == run.info["base_model_id"]
    for k, v in direct.items():
        assert gaps.iloc[0][k] == pytest.approx(v) if isinstance(v, float) else gaps.iloc[0][k] == v


def test_training_keys_name_the_runs_before_training(trained):  # noqa: F811
    runs, config = trained
    keys = evaluate.training_keys(config, [0.5, 1.0])
    assert keys["tiny:llama-lm"][1] == runs["tiny:llama-lm"].info["key"]  # fraction 1.0 is the run trained
    half = dataclasses.replace(config["tiny:llama-lm"], data_fraction=0.5)
    assert keys["tiny:llama-lm"][0] != keys["tiny:llama-lm"][1]
    assert keys["tiny:llama-lm"][0] == half.key(preferences.load_preferences(half.data, half.prompt).sha256)


def test_cache_facts_change_with_the_settings_and_the_runs(trained):  # noqa: F811
    runs, _ = trained
    a = evaluate.cache_facts(runs, n_boot=20)
    assert a["runs"]["tiny:llama-lm"]["key"] == runs["tiny:llama-lm"].info["key"]
    assert a != evaluate.cache_facts(runs, n_boot=21) and "runs" not in evaluate.cache_facts(n_boot=20)
    assert a["eval_revision"] == evaluate.EVAL_REVISION and isinstance(pd.Series(a["data"]).iloc[0], str)


def test_other_prompt_on_a_seeded_sample_is_paired_with_the_training_prompt(trained):  # noqa: F811
    """The other wording scores a seeded sample of the test items; its tau, and the training prompt's tau on
    the same items, are Kendall's tau-b of those items alone (scipy), and every other ranker keeps all items."""
    import numpy as np
    from scipy.stats import kendalltau

    from rmlib.errors import InputError
    from rmlib.training.configuration import ALT_PROMPT

    runs, _ = trained
    name = "tiny:llama-lm"
    folders = {name: runs[name].folder}
    every_wide, every = evaluate.heldout_comparison(folders, n_boot=20, seed=0, alt_prompt=ALT_PROMPT)
    wide, taus = evaluate.heldout_comparison(folders, n_boot=20, seed=0, alt_prompt=ALT_PROMPT, alt_items=10)
    other = f"{name}, other prompt"
    picked = wide[other].notna().to_numpy()
    assert picked.sum() == 10 and every_wide[other].notna().all()
    texts = list(wide.index[picked])
    np.testing.assert_allclose(wide.loc[picked, other], evaluate.score_items(folders[name], ALT_PROMPT, texts),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(wide.loc[picked, other], every_wide.loc[picked, other], rtol=0, atol=1e-5)
    human = wide.loc[picked, "human"]
    assert taus.loc[other, "n_items"] == 10
    assert taus.loc[other, "tau"] == pytest.approx(kendalltau(wide.loc[picked, other], human).statistic)
    assert taus.loc[other, "tau_training_prompt"] == pytest.approx(kendalltau(wide.loc[picked, name], human).statistic)
    assert taus.loc[other, "low"] <= taus.loc[other, "tau"] <= taus.loc[other, "high"]
    rest = [r for r in taus.index if r != other]
    pd.testing.assert_frame_equal(taus.loc[rest, ["tau", "low", "high", "n_items"]],
                                  every.loc[rest, ["tau", "low", "high", "n_items"]])
    assert (taus.loc[rest, "n_items"] == len(wide)).all() and taus.loc[rest, "tau_training_prompt"].isna().all()
    _, without = evaluate.heldout_comparison(folders, n_boot=20, seed=0)  # no other prompt: the column, empty
    assert without["tau_training_prompt"].isna().all() and other not in without.index
    again, _ = evaluate.heldout_comparison(folders, n_boot=20, seed=0, alt_prompt=ALT_PROMPT, alt_items=10)
    assert list(again.index[again[other].notna()]) == texts  # the same seeded sample
    with pytest.raises(InputError, match="alt_items must be 0"):
        evaluate.heldout_comparison(folders, alt_prompt=ALT_PROMPT, alt_items=-1)
