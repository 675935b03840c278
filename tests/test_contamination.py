"""rmlib.training.contamination and the trainer's `pairs=` hook: seeded, test items untouched, and the
clean and contaminated runs differ only in the contaminated pairs."""

import json

import numpy as np
import pandas as pd
import pytest

from rmlib.errors import InputError
from rmlib.training import bradley_terry, contamination, train, trained
from rmlib.training.configuration import TrainConfig
from rmlib.training.train import train_reward_model

TINY = dict(base="tiny:llama-lm", max_items=120, epochs=3, lr=1e-2, pairs_per_item=10, batch_size=128)


@pytest.fixture(scope="module")
def setup():
    config = TrainConfig(**TINY)
    data, tr, te = train.prepare(config)
    pairs = train.training_pairs(config, data, tr)
    marked = np.concatenate([tr[::7], te[::5]])  # some training and some test items
    return config, data, tr, te, pairs, marked


def test_contamination_is_seeded_and_follows_its_rule(setup):
    _, _, tr, te, pairs, marked = setup
    a = contamination.contaminate_pairs(pairs, marked, rate=0.5, seed=3, test=te)
    b = contamination.contaminate_pairs(pairs, marked, rate=0.5, seed=3, test=te)
    pd.testing.assert_frame_equal(a, b)
    other = contamination.contaminate_pairs(pairs, marked, rate=0.5, seed=4, test=te)
    assert not a["contaminated"].equals(other["contaminated"])
    mi, mj = pairs["i"].isin(marked).to_numpy(), pairs["j"].isin(marked).to_numpy()
    eligible = mi ^ mj
    assert not a.loc[~eligible, "contaminated"].any()  # neither or both sides marked: never touched
    assert a.attrs["n_eligible"] == eligible.sum() and a.attrs["n_contaminated"] == a["contaminated"].sum()
    assert 0.3 < a["contaminated"].sum() / eligible.sum() < 0.7
    hit = a["contaminated"].to_numpy()
    # a contaminated pair rejects its marked side with a hard label
    assert (a.loc[hit & mi, "p"] == 0).all() and (a.loc[hit & mj, "p"] == 1).all()
    # everything else is the clean pairs, row for row
    pd.testing.assert_frame_equal(a.loc[~hit, ["i", "j", "p"]], pairs.loc[~hit, ["i", "j", "p"]])
    assert (a["p_clean"] == pairs["p"]).all() and a[["i", "j"]].equals(pairs[["i", "j"]])
    # one uniform draw per pair: a higher rate contaminates a superset
    more = contamination.contaminate_pairs(pairs, marked, rate=0.9, seed=3, test=te)
    assert (more["contaminated"] >= a["contaminated"]).all()
    assert contamination.contaminate_pairs(pairs, marked, rate=0.0, test=te)["contaminated"].sum() == 0
    full = contamination.contaminate_pairs(pairs, marked, rate=1.0, test=te)
    assert full["contaminated"].sum() == eligible.sum()


def test_test_items_are_never_touched(setup):
    _, data, tr, te, pairs, marked = setup
    out = contamination.contaminate_pairs(pairs, marked, rate=1.0, seed=0, test=te)
    assert out.attrs["n_marked"] == len(np.intersect1d(np.setdiff1d(marked, te), np.union1d(pairs["i"], pairs["j"])))
    used = set(out["i"]) | set(out["j"])
    assert not used & set(te)
    mask = np.zeros(len(data.items), dtype=bool)
    mask[marked] = True  # a boolean mask over the items works the same
    pd.testing.assert_frame_equal(out, contamination.contaminate_pairs(pairs, mask, rate=1.0, seed=0, test=te))
    leaky = pd.concat([pairs, pd.DataFrame({"i": [te[0]], "j": [tr[0]], "p": [0.5]})], ignore_index=True)
    with pytest.raises(InputError, match="test item"):
        contamination.contaminate_pairs(leaky, marked, rate=0.5, test=te)
    with pytest.raises(InputError, match="test item"):
        bradley_terry.check_pairs(leaky, tr, len(data.items))
    with pytest.raises(InputError, match="rate"):
        contamination.contaminate_pairs(pairs, marked, rate=1.5)


def test_check_pairs_refuses_bad_pairs(setup):
    _, data, tr, _, pairs, _ = setup
    n = len(data.items)
    for bad, message in ((pairs.assign(p=2.0), "label"), (pairs.drop(columns="p"), "columns"),
                         (pairs.iloc[:0], "empty"), (pairs.assign(j=pairs["i"]), "itself"),
                         (pairs.assign(i=n + 5), "outside")):
        with pytest.raises(InputError, match=message):
            bradley_terry.check_pairs(bad, tr, n)
    assert bradley_terry.pairs_digest(pairs) == bradley_terry.pairs_digest(pairs.copy())
    assert bradley_terry.pairs_digest(pairs) != bradley_terry.pairs_digest(pairs.assign(p=1 - pairs["p"]))


def test_two_runs_differ_only_in_the_contaminated_pairs(setup, tmp_path, monkeypatch):
    config, data, tr, te, pairs, marked = setup
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    seen = []
    original = bradley_terry.bt_loss

    def spy(s_i, s_j, p):
        seen.append(p.detach().clone())
        return original(s_i, s_j, p)

    monkeypatch.setattr(train, "bt_loss", spy)
    clean = train_reward_model(config, progress=False)
    clean_labels, seen[:] = list(seen), []
    dirty_pairs = contamination.contaminate_pairs(pairs, marked, rate=1.0, seed=0, test=te)
    dirty = train_reward_model(config, progress=False, pairs=dirty_pairs)
    dirty_labels = list(seen)
    # same batches in the same order; labels differ exactly where the pairs were contaminated
    order = np.concatenate([np.random.default_rng([config.seed, e]).permutation(len(pairs))
                            for e in range(config.epochs)])
    diff = (np.concatenate([t.numpy() for t in clean_labels]) != np.concatenate([t.numpy() for t in dirty_labels]))
    changed = (dirty_pairs["p"] != dirty_pairs["p_clean"]).to_numpy()
    assert np.array_equal(diff, changed[order]) and changed.any()
    # the contaminated run is cached beside the clean one, never over it; the split is the same
    assert dirty.folder != clean.folder and dirty.folder.parent == clean.folder.parent
    assert dirty.info["split"] == clean.info["split"] and dirty.info["n_pairs"] == clean.info["n_pairs"]
    assert dirty.info["given_pairs_sha256"] == bradley_terry.pairs_digest(dirty_pairs)
    assert "given_pairs_sha256" not in clean.info
    # the clean pairs given explicitly train the clean model's weights again, under their own key
    again = train_reward_model(config, progress=False, pairs=pairs)
    assert again.folder != clean.folder and again.info["test_scores"] == pytest.approx(clean.info["test_scores"])
    assert train_reward_model(config, progress=False, pairs=dirty_pairs).reused
    # `rmlib cache --prune` keeps the runs on given pairs, which the current code reuses, and drops one
    # whose recorded pairs no longer give its key
    assert [trained.stale_reason(r.folder) for r in (clean, dirty, again)] == [None, None, None]
    record = dirty.folder / "training.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "given_pairs_sha256": "0" * 64}))
    assert "another cache key" in trained.stale_reason(dirty.folder)
    with pytest.raises(InputError, match="test item"):
        train_reward_model(config, progress=False, pairs=pairs.assign(i=te[0]))


def test_scorer_spec_names_the_default_run_by_its_spec(tmp_path):
    import dataclasses

    default = dataclasses.asdict(TrainConfig(base="default"))
    run = train.TrainRun(tmp_path / "a", {"base": "default", "config": default})
    assert contamination.scorer_spec(run) == "trained:default"
    other = train.TrainRun(tmp_path / "b", {"base": "default", "config": {**default, "max_items": 600}})
    assert contamination.scorer_spec(other) == str(tmp_path / "b")
    given = train.TrainRun(tmp_path / "c", {"base": "default", "config": default, "given_pairs_sha256": "x"})
    assert contamination.scorer_spec(given) == str(tmp_path / "c")
