"""Training Bradley–Terry reward models (rmlib.training.train) on tiny models, and its CLI."""

import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from rmlib.cli import main as cli_main
from rmlib.errors import InputError
from rmlib.training import bradley_terry, classifier, configuration, folders, preferences, train, trained
from rmlib.training.configuration import TrainConfig
from rmlib.training.train import train_reward_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = dict(base="tiny:llama-lm", max_items=120, epochs=3, lr=1e-2, pairs_per_item=10, batch_size=128)


def tiny_config(**kw) -> TrainConfig:
    return TrainConfig(**{**TINY, **kw})


def weights(folder) -> dict:
    return load_file(str(pathlib.Path(folder) / "model.safetensors"))


def test_bt_loss_matches_hand_computation():
    s_i, s_j, p = torch.tensor([1.5, -0.2, 0.0]), torch.tensor([0.5, 0.3, 2.0]), torch.tensor([0.9, 0.25, 1.0])
    hand = []
    for a, b, q in zip(s_i.tolist(), s_j.tolist(), p.tolist()):
        d = a - b
        hand.append(-(q * math.log(1 / (1 + math.exp(-d))) + (1 - q) * math.log(1 / (1 + math.exp(d)))))
    assert bradley_terry.bt_loss(s_i, s_j, p).item() == pytest.approx(sum(hand) / 3, rel=1e-6)


def test_elo_probability():
    assert bradley_terry.elo_probability(1400, 1000) == pytest.approx(1 / (1 + 10 ** -1))
    assert bradley_terry.elo_probability(1000, 1000) == 0.5
    assert bradley_terry.elo_probability(1000, 1400) + bradley_terry.elo_probability(1400, 1000) == pytest.approx(1.0)


def test_split_is_seeded_disjoint_and_complete():
    a_train, a_test = preferences.split_items(101, 0.5, seed=3)
    b_train, b_test = preferences.split_items(101, 0.5, seed=3)
    assert np.array_equal(a_train, b_train) and np.array_equal(a_test, b_test)
    assert not set(a_train) & set(a_test)
    assert sorted(set(a_train) | set(a_test)) == list(range(101))
    assert len(a_test) == 50
    assert not np.array_equal(preferences.split_items(101, 0.5, seed=4)[1], a_test)


def test_no_test_item_in_any_training_pair_full_eloeverything():
    config = TrainConfig()
    data, tr, te = train.prepare(config)
    assert len(data.items) > 7000
    pairs = train.training_pairs(config, data, tr)
    used = set(pairs["i"]) | set(pairs["j"])
    assert not used & set(te)
    assert (pairs["i"] != pairs["j"]).all()
    assert len(pairs) == config.pairs_per_item * len(tr)
    r = data.items["rating"].to_numpy()
    np.testing.assert_allclose(pairs["p"], 1 / (1 + 10 ** ((r[pairs["j"]] - r[pairs["i"]]) / 400)))
    # the data-quantity ablation takes a prefix of the same pairs
    part = train.training_pairs(TrainConfig(data_fraction=0.1), data, tr)
    assert len(part) == round(0.1 * len(pairs)) and part.equals(pairs.iloc[:len(part)])


def test_training_lowers_loss_and_raises_training_tau(tmp_path):
    run = train_reward_model(tiny_config(epochs=5), out=tmp_path / "rm", progress=False)
    curve = run.info["loss_curve"]
    assert len(curve) == 5
    assert curve[-1]["loss"] < curve[0]["loss"] < math.log(2) + 1e-3
    assert run.info["train_tau"] > run.info["train_tau_untrained_head"] + 0.05
    # the recorded split: test items are exactly the items absent from training
    data, tr, te = train.prepare(tiny_config())
    assert run.info["split"]["test_items"] == data.items["text"].iloc[te].tolist()
    assert run.info["n_pairs"] == 10 * len(tr)


def test_seed_determinism_and_reuse(tmp_path):
    a = train_reward_model(tiny_config(), out=tmp_path / "a", progress=False)
    b = train_reward_model(tiny_config(), out=tmp_path / "b", progress=False)
    wa, wb = weights(a.folder), weights(b.folder)
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    c = train_reward_model(tiny_config(seed=1), out=tmp_path / "c", progress=False)
    assert not torch.equal(weights(c.folder)["score.weight"], wa["score.weight"])
    again = train_reward_model(tiny_config(), out=tmp_path / "a", progress=False)
    assert again.reused and again.info["key"] == a.info["key"]


def test_top_blocks_path_equals_full_forward_before_training():
    """Cached lower blocks + the top K blocks give the same scores as the whole model."""
    cfg = tiny_config()
    data, tr, te = train.prepare(cfg)
    model, tok, template, _ = classifier.build_classifier(cfg.base)
    enc0 = classifier.encode_items(model, tok, template, data.items, 0, progress=False)
    enc1 = classifier.encode_items(model, tok, template, data.items, 1, progress=False)
    idx = np.arange(len(data.items))
    s0 = classifier.ItemScorer(model, enc0, 0, tok.pad_token_id).all(idx)
    s1 = classifier.ItemScorer(model, enc1, 1, tok.pad_token_id).all(idx)
    np.testing.assert_allclose(s1, s0, atol=1e-5)


def test_unfrozen_blocks_change_and_frozen_do_not(tmp_path):
    run = train_reward_model(tiny_config(unfreeze_blocks=1, epochs=2, lr=3e-3), out=tmp_path / "k1", progress=False)
    model, *_ = classifier.build_classifier("tiny:llama-lm")
    init = {k: v for k, v in model.state_dict().items()}
    after = weights(run.folder)
    assert not torch.equal(after["model.layers.1.mlp.up_proj.weight"], init["model.layers.1.mlp.up_proj.weight"])
    assert torch.equal(after["model.layers.0.mlp.up_proj.weight"], init["model.layers.0.mlp.up_proj.weight"])
    assert run.info["trained"] == "score head + top 1 blocks + final norm"


KILL_SCRIPT = """
import os, signal, sys
from rmlib.training.configuration import TrainConfig
from rmlib.training.train import train_reward_model
cfg = TrainConfig(**{tiny})
def die(epoch, state):
    if epoch == 2:
        os.kill(os.getpid(), signal.SIGKILL)
train_reward_model(cfg, out=sys.argv[1], progress=False, on_epoch_end=die)
"""


@pytest.mark.parametrize("k", [0, 1])
def test_resume_after_kill_9_gives_identical_weights(tmp_path, k):
    tiny = {**TINY, "epochs": 4, "unfreeze_blocks": k, "lr": 1e-2 if k == 0 else 3e-3}
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT.replace("{tiny}", repr(tiny)))
    # The killed run uses this process's thread count: float sums in a matmul depend on it, and the
    # resumed and straight runs below run here.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(torch.get_num_threads()),
           "RMLIB_THREADS": str(torch.get_num_threads())}
    out = tmp_path / "killed"
    proc = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert sorted(p.name for p in (out / ".checkpoints").iterdir()) == ["epoch-2.json", "epoch-2.safetensors"]
    assert not (out / "model.safetensors").exists()
    seen = []
    resumed = train_reward_model(TrainConfig(**tiny), out=out, progress=False,
                                 on_epoch_end=lambda e, s: seen.append(e))
    assert seen == [3, 4]  # epochs 1-2 came from the checkpoint
    straight = train_reward_model(TrainConfig(**tiny), out=tmp_path / "straight", progress=False)
    wa, wb = weights(resumed.folder), weights(straight.folder)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    assert resumed.info["loss_curve"] == straight.info["loss_curve"]
    assert not (out / ".checkpoints").exists()


def test_checkpoints_keep_only_the_latest_and_resume_from_it(tmp_path):
    out = tmp_path / "rm"
    listed = []

    def stop_at_25(epoch, state):
        listed.append(sorted(p.name for p in (out / ".checkpoints").iterdir()))
        if epoch == 25:
            raise KeyboardInterrupt

    cfg = tiny_config(epochs=30)
    with pytest.raises(KeyboardInterrupt, match="25 of 30 epochs finished"):
        train_reward_model(cfg, out=out, progress=False, on_epoch_end=stop_at_25)
    assert listed == [[f"epoch-{e}.json", f"epoch-{e}.safetensors"] for e in range(1, 26)]
    state = json.loads((out / ".checkpoints" / "epoch-25.json").read_text())
    assert [c["epoch"] for c in state["curve"]] == list(range(1, 26))
    seen = []
    resumed = train_reward_model(cfg, out=out, progress=False, on_epoch_end=lambda e, s: seen.append(e))
    assert seen == list(range(26, 31))
    straight = train_reward_model(cfg, out=tmp_path / "straight", progress=False)
    wa, wb = weights(resumed.folder), weights(straight.folder)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    assert resumed.info["loss_curve"] == straight.info["loss_curve"]


def test_training_runs_at_its_configured_thread_count_whatever_the_process_uses(tmp_path):
    """float sums depend on the thread count: a run pins its configuration's count, part of its key."""
    cfg = tiny_config(unfreeze_blocks=1, epochs=4, lr=3e-3)
    before = torch.get_num_threads()
    runs = {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            runs[n] = train_reward_model(cfg, out=tmp_path / f"process-{n}", progress=False)
            assert torch.get_num_threads() == n  # put back after the run
    finally:
        torch.set_num_threads(before)
    w1, w2 = weights(runs[1].folder), weights(runs[2].folder)
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert runs[1].info["config"]["threads"] == configuration.TRAIN_THREADS == 1
    data, _, _ = train.prepare(cfg)
    two = tiny_config(unfreeze_blocks=1, epochs=4, lr=3e-3, threads=2)
    assert two.key(data.sha256) != cfg.key(data.sha256)  # another count is another model, never the cached one
    seen = []
    train.train_reward_model(two, out=tmp_path / "two", progress=False,
                             on_epoch_end=lambda e, s: seen.append(torch.get_num_threads()))
    assert seen == [2] * 4 and torch.get_num_threads() == before
    with pytest.raises(InputError, match="threads must be a whole number"):
        tiny_config(threads=0).validate()


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_run_into_the_same_out_is_refused_naming_the_first(tmp_path, capsys):
    out = tmp_path / "rm"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out / configuration.LOCK_NAME)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match=rf"--out {out}: process {holder.pid} \(.*python.*\) is training"):
            train_reward_model(tiny_config(), out=out, progress=False)
        assert cli_main(["train-rm", "--base", "tiny:llama-lm", "--max-items", "120", "--epochs", "1",
                         "--out", str(out), "--no-progress"]) == 2
        assert f"process {holder.pid}" in capsys.readouterr().err
        assert not (out / ".checkpoints").exists()  # the refused runs trained nothing
    finally:
        holder.kill()
        holder.wait()
    run = train_reward_model(tiny_config(), out=out, progress=False)  # the lock ends with its holder
    assert not run.reused and (out / "model.safetensors").exists()


def test_the_model_folder_is_written_whole_with_training_json_last(tmp_path, monkeypatch):
    from rmlib.files import current_umask

    model, tok, template, _ = classifier.build_classifier("tiny:llama-lm")
    folder = tmp_path / "rm"
    real = type(tok).save_pretrained

    def full_disk(self, *a, **k):  # the model's weights are written, then the tokenizer's files fail
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(tok), "save_pretrained", full_disk)
    with pytest.raises(OSError, match="No space"):
        folders.save_folder(folder, model, tok, template, {"key": "k"})
    assert list(folder.iterdir()) == []  # no weights without a tokenizer, no training.json, no staging folder
    monkeypatch.setattr(type(tok), "save_pretrained", real)
    (folder / ".checkpoints").mkdir()
    folders.save_folder(folder, model, tok, template, {"key": "k"})
    names = sorted(p.name for p in folder.iterdir())
    assert {"config.json", "model.safetensors", "training.json", "tokenizer_config.json"} <= set(names)
    assert not [n for n in names if n.startswith(".")]  # the checkpoints dropped, nothing staged left
    assert json.loads((folder / "training.json").read_text()) == {"key": "k"}
    assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o666 & ~current_umask()}  # as open(, "w")
    saved = weights(folder)
    assert torch.equal(saved["score.weight"], model.score.weight.detach())


def test_saved_folder_loads_with_plain_transformers_and_matches_rmlib(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from rmlib.engine.scorers import load_scorer

    run = train_reward_model(tiny_config(), out=tmp_path / "rm", progress=False)
    folder = run.folder
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForSequenceClassification"]
    assert AutoModelForSequenceClassification.from_pretrained(str(folder)).config.num_labels == 1
    info = json.loads((folder / "training.json").read_text())
    for key in ("prompt", "split", "n_pairs", "epochs", "lr", "unfreeze_blocks", "loss_curve", "heldout_tau",
                "wall_s", "rmlib_version", "data"):
        assert key in info
    assert len(info["data"]["sha256"]) == 64
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    tok = AutoTokenizer.from_pretrained(str(folder))
    assert tok.chat_template
    # the reward is read at the end-of-turn token: the rendered conversation ends with it
    end = tok.apply_chat_template([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                                  tokenize=False)
    assert end.endswith("<|im_end|>") and configuration.TrainConfig().chat_template is None
    texts = info["split"]["test_items"][:12] + ["Love", "Sliced bread"]
    plain = []
    for text in texts:
        enc = tok.apply_chat_template([{"role": "user", "content": info["prompt"]},
                                       {"role": "assistant", "content": text}],
                                      return_dict=True, return_tensors="pt")
        with torch.no_grad():
            plain.append(model(**enc).logits[0, 0].item())
    ours = load_scorer(str(folder)).score_texts(info["prompt"], texts)["score"].to_numpy()
    np.testing.assert_allclose(ours, plain, atol=1e-5)
    # a padded batch, as a user scores many texts with plain transformers: the pad token is not the
    # end-of-turn token, so each text's reward is still read at its own last token
    rendered = [tok.apply_chat_template([{"role": "user", "content": info["prompt"]},
                                         {"role": "assistant", "content": t}], tokenize=False) for t in texts]
    batch = tok(rendered, padding=True, add_special_tokens=False, return_tensors="pt")
    assert tok.pad_token_id == model.config.pad_token_id != batch["input_ids"][0, batch["attention_mask"][0].sum() - 1]
    with torch.no_grad():
        np.testing.assert_allclose(model(**batch).logits[:, 0].numpy(), plain, atol=1e-5)
    # the held-out tau recorded is the tau of these very scores
    data, tr, te = train.prepare(tiny_config())
    test_scores = load_scorer(str(folder)).score_texts(info["prompt"], data.items["text"].iloc[te].tolist())
    from rmlib.stats import kendall_tau_b

    tau = kendall_tau_b(test_scores["score"], data.items["rating"].iloc[te])
    assert tau == pytest.approx(info["heldout_tau"], abs=1e-6)
    # and the recorded test scores (used by the chapter's comparisons) are rmlib's scores of the folder
    np.testing.assert_allclose(info["test_scores"], test_scores["score"], atol=1e-5)


@pytest.mark.parametrize("name", ["chatml", "llama3", "plain"])
def test_ending_at_turn_end_drops_only_the_newline_after_the_assistant_turn(name):
    from rmlib.engine.frames import TEMPLATES, ending_at_turn_end, render
    from rmlib.engine.models import load_model

    tok = load_model("tiny:llama-lm").tokenizer
    base, ended = TEMPLATES[name], ending_at_turn_end(TEMPLATES[name])
    user = [{"role": "user", "content": "Best thing?"}]
    convo = user + [{"role": "assistant", "content": "Love"}]
    for messages, kw in ((user, {"add_generation_prompt": True}), (user, {}), (convo, {"add_generation_prompt": True})):
        assert render(tok, messages, ended, **kw) == render(tok, messages, base, **kw)
    full = render(tok, convo, base)
    assert render(tok, convo, ended) == (full[:-1] if full.endswith("\n") else full)
    assert full.endswith("\n") == (name == "chatml")  # llama3 ends with <|eot_id|>, plain with the response


def test_frozen_features_are_cached_across_training_settings(tmp_path, monkeypatch):
    fresh_cache(tmp_path / "cache", monkeypatch)
    train_reward_model(tiny_config(), out=tmp_path / "a", progress=False)
    calls = []
    real = classifier.encode_items
    monkeypatch.setattr(classifier, "encode_items", lambda *a, **k: calls.append(1) or real(*a, **k))
    b = train_reward_model(tiny_config(epochs=2, data_fraction=0.5), out=tmp_path / "b", progress=False)
    assert calls == [] and b.info["n_pairs"] == round(0.5 * b.info["n_pairs"] / 0.5)
    train_reward_model(tiny_config(max_items=100), out=tmp_path / "c", progress=False)  # other items: encoded
    assert calls == [1]


def fresh_cache(folder, monkeypatch):
    """An empty rmlib cache folder that still sees the de-quantized default model (not converted again),
    and an empty score store inside it (the checkout's ``data/scores`` is left alone)."""
    from rmlib.paths import cache_dir

    models = cache_dir() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(folder))
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(folder / "scores"))
    if models.is_dir():
        (folder / "models").symlink_to(models)


def test_trained_spec_loads_only_once_trained_and_ensure_trained_trains_once(tmp_path, monkeypatch):
    from rmlib.engine.models import check_model_spec, load_model
    from rmlib.engine.trained_pointers import trained_pointer

    fresh_cache(tmp_path, monkeypatch)
    with pytest.raises(InputError, match=r"not trained yet: train it with `rmlib train-rm --base tiny:llama-lm`"):
        load_model("trained:tiny:llama-lm")  # the engine loads, it does not train
    calls = []
    real = train.train_reward_model

    def small(config, **kw):
        calls.append(config.base)
        return real(tiny_config(base=config.base), **kw)

    monkeypatch.setattr(trained, "train_reward_model", small)
    assert check_model_spec("trained:tiny:llama-lm") == "trained"
    folder = trained.ensure_trained("trained:tiny:llama-lm", progress=False)
    assert trained_pointer("tiny:llama-lm").read_text().strip() == folder.name
    a = load_model("trained:tiny:llama-lm")
    assert trained.ensure_trained("trained:tiny:llama-lm", progress=False) == folder
    b = load_model("trained:tiny:llama-lm")
    assert a.kind == "classifier" and a.model_id == "trained:tiny:llama-lm" and a.revision.startswith("trained:")
    assert a.revision == b.revision == "trained:" + json.loads((folder / "training.json").read_text())["key"]
    assert len([p for p in (tmp_path / "trained").iterdir() if p.is_dir() and p.name != "features"]) == 1
    assert calls == ["tiny:llama-lm", "tiny:llama-lm"]  # the second call found the cached folder
    with pytest.raises(InputError, match="not a trained: spec"):
        trained.ensure_trained("tiny:llama-lm")
    with pytest.raises(ValueError, match="trained:<base>"):
        check_model_spec("trained:")
    with pytest.raises(ValueError, match="unknown model"):
        check_model_spec("trained:no-such-model")


def test_only_the_default_training_becomes_trained_base(tmp_path, monkeypatch):
    from rmlib.engine.trained_pointers import trained_pointer

    fresh_cache(tmp_path, monkeypatch)
    run = train_reward_model(tiny_config(), progress=False)  # not the base's default configuration
    assert run.folder.parent == tmp_path / "trained" and not trained_pointer("tiny:llama-lm").exists()


def test_pair_csv_source(tmp_path):
    items = [f"item {i}" for i in range(20)]
    rows = [{"chosen": items[i], "rejected": items[j]} for i in range(20) for j in range(20) if i < j]
    csv = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    run = train_reward_model(tiny_config(data=str(csv), max_items=None, epochs=3), out=tmp_path / "rm",
                             progress=False)
    assert run.info["data"]["kind"] == "pairs"
    assert 0 <= run.info["heldout_pair_accuracy"] <= 1 and run.info["n_heldout_pairs"] > 0


def test_nan_loss_stops_with_step_and_lr(tmp_path, monkeypatch):
    real = classifier.cached_encoding
    _, tr, _ = train.prepare(tiny_config())

    def poisoned(*args, **kwargs):  # one item's frozen features come out NaN (a broken base in low precision)
        enc = real(*args, **kwargs)
        enc.features = enc.features.clone()
        enc.features[tr[0]] = float("nan")
        return enc

    monkeypatch.setattr(train, "cached_encoding", poisoned)
    with pytest.raises(FloatingPointError, match=r"loss is nan at step \d+ \(epoch 1\) with lr 0.01"):
        train_reward_model(tiny_config(), out=tmp_path / "nan", progress=False)


def _cli(argv, capsys):
    code = cli_main(["train-rm", "--no-progress", *argv])
    return code, capsys.readouterr()


@pytest.mark.parametrize("argv, message", [
    (["--base", "no-such-model"], "unknown model 'no-such-model'"),
    (["--base", "trained:default"], "not a trained reward model"),
    (["--test-fraction", "1.5"], "--test-fraction must be in"),
    (["--lr", "-1"], "--lr must be a positive"),
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--data", "nope.csv"], "--data 'nope.csv' is neither 'eloeverything' nor a CSV"),
])
def test_cli_bad_inputs_are_clear_errors(argv, message, capsys):
    code, out = _cli(["--base", "tiny:llama-lm", *argv] if "--base" not in argv else argv, capsys)
    assert code == 2
    assert message in out.err and "Traceback" not in out.err


def test_cli_bad_data_files(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("word,score\nlove,1\n")
    code, out = _cli(["--base", "tiny:llama-lm", "--data", str(bad)], capsys)
    assert code == 2 and "needs columns 'item, rating'" in out.err and "['score', 'word']" in out.err
    few = tmp_path / "few.csv"
    few.write_text("item,rating\na,1000\nb,1100\nc,900\n")
    code, out = _cli(["--base", "tiny:llama-lm", "--data", str(few)], capsys)
    assert code == 2 and "too few items (3)" in out.err
    inf = tmp_path / "inf.csv"
    inf.write_text("item,rating\na,1000\nb,inf\n")
    code, out = _cli(["--base", "tiny:llama-lm", "--data", str(inf)], capsys)
    assert code == 2 and "finite numbers" in out.err


def test_cli_trains_and_reports(tmp_path, capsys):
    code, out = _cli(["--base", "tiny:llama-lm", "--max-items", "60", "--epochs", "2", "--lr", "0.01",
                      "--out", str(tmp_path / "rm")], capsys)
    assert code == 0
    assert "held-out Kendall tau-b" in out.out and (tmp_path / "rm" / "model.safetensors").exists()
    code, out = _cli(["--base", "tiny:llama-lm", "--max-items", "60", "--epochs", "2", "--lr", "0.01",
                      "--out", str(tmp_path / "rm")], capsys)
    assert code == 0 and out.out.startswith("reused")


def test_bench_train_measures_the_end_of_turn_template_beside_the_base_template():
    from rmlib.bench.train_speed import bench_train

    out = bench_train("tiny:llama-lm", n_items=60, epochs=1, n_vocab=32)
    # the trained model's responses end at <|im_end|>; the base's own template adds the newline after it
    assert out["suffix_tokens"] == 1 and out["suffix_tokens_newline_kept"] == 2
    assert out["vocab_tokens_per_s"] > 0 and out["vocab_tokens_per_s_newline_kept"] > 0
    assert out["end_of_turn_speedup"] == pytest.approx(
        out["vocab_tokens_per_s"] / out["vocab_tokens_per_s_newline_kept"], rel=0.02)


@pytest.mark.parametrize("command", [["score", "--prompt", "Hi?", "--tokens", "0:4"],
                                     ["search", "--prompt", "Hi?", "--length", "2", "--direction", "max"]])
def test_cli_trains_a_trained_spec_before_loading_it(command, monkeypatch, capsys):
    """The CLI asks the training layer for a trained: model (and reference) before the engine loads it."""
    asked = []

    def record(spec, progress=True):
        asked.append(spec)
        raise InputError(f"stop after asking for {spec}")

    monkeypatch.setattr(trained, "ensure_trained", record)
    assert cli_main([*command, "--model", "trained:tiny:llama-lm", "--no-progress"]) == 2
    assert asked == ["trained:tiny:llama-lm"] and "stop after asking for trained:tiny:llama-lm" in capsys.readouterr().err
