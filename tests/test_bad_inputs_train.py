"""``train-rm`` never trains on wrong data silently: every bad input gets one clear line before any work.

One table of cases run through the CLI in-process: exit status 2, one line, no traceback, the message
naming the input (file and rows, or the option), the problem and the fix, and nothing written (no
output folder, no cached features). Then the cases whose old outcome was a wrong model (exit 0):
the base folder's content in the cache key, CSV text variants read as the same data, Ctrl-C saying
what was saved, non-finite features named as such. Tiny models, a fresh cache per test.
"""

from __future__ import annotations

import pathlib
import re
import sys

import numpy as np
import pytest
import torch

from rmlib import cli
from rmlib.errors import InputError, NonFiniteError
from rmlib.training import classifier, configuration, preferences, train
from rmlib.training.configuration import TrainConfig

BASE = "tiny:llama-lm"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty rmlib cache that still sees the de-quantized models' tokenizers."""
    from rmlib.paths import cache_dir

    models = cache_dir() / "models"
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(folder))
    if models.is_dir():
        (folder / "models").symlink_to(models)
    return folder


def write(folder: pathlib.Path, name: str, text: str | bytes) -> str:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def items(n: int = 20, extra: tuple[str, ...] = (), header: str = "item,rating", newline: str = "\n") -> str:
    rows = [header, *(f"thing {i},{1000 + 10 * i}" for i in range(n)), *extra]
    return newline.join(rows) + newline


def pairs(n: int = 10, prompt=None) -> str:
    rows = ["prompt,chosen,rejected" if prompt else "chosen,rejected"]
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            rows.append((f"{prompt(k)}," if prompt else "") + f"thing {i},thing {j}")
            k += 1
    return "\n".join(rows) + "\n"


def run(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    try:
        rc = cli.main(["train-rm", "--no-progress", "--epochs", "1", *argv])
    except SystemExit as stop:
        rc = stop.code
    out = capsys.readouterr()
    return rc, out.err + out.out


def saved_folder(folder: pathlib.Path) -> None:
    """A tiny causal LM saved as a local folder (safetensors + tokenizer)."""
    from rmlib.engine.models import load_model

    loaded = load_model(BASE)
    loaded.model.save_pretrained(folder, safe_serialization=True)
    loaded.tokenizer.save_pretrained(folder)


def classifier_folder(folder: pathlib.Path) -> None:
    from rmlib.engine.models import load_model

    loaded = load_model("tiny:llama-classifier")
    loaded.model.save_pretrained(folder, safe_serialization=True)
    loaded.tokenizer.save_pretrained(folder)


def encoder_folder(folder: pathlib.Path) -> None:
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(folder, safe_serialization=True)


# (id, argv (tmp folder -> argv), regex the one line must match)
CASES = [
    # the data file: what it holds
    ("pairs-empty-prompt-cells", lambda d: ["--data", write(d, "pe.csv", pairs(prompt=lambda k: "" if k % 2 else "Which?"))],
     r"pe.csv: rows 2, 4, 6, 8, 10 … \(lines 3, 5, 7, 9, 11 …\): the 'prompt' cell is empty; fill in every prompt, or "
     r"drop the 'prompt' column"),
    ("pairs-blank-prompt-cell", lambda d: ["--data", write(d, "pb.csv", pairs(prompt=lambda k: "  " if k == 4 else "Which?"))],
     r"pb.csv: row 5 \(line 6\): the 'prompt' cell is empty"),
    ("pairs-empty-rejected", lambda d: ["--data", write(d, "pr.csv", "chosen,rejected\na,b\nc,\n")],
     r"pr.csv: row 2 \(line 3\): the 'rejected' cell is empty; every pair needs two responses"),
    ("pairs-same-response", lambda d: ["--data", write(d, "ps.csv", pairs() + "thing 1,thing 1\n")],
     r"ps.csv: row 46 \(line 47\): the chosen and the rejected response are the same text"),
    ("pairs-prompt-forged", lambda d: ["--data", write(d, "pf.csv", pairs(prompt=lambda k: "Hi<|im_end|>"))],
     r"pf.csv: rows 1, 10, .*: the prompt contains the special-token text \['<\|im_end\|>'\] of tiny:llama-lm's "
     r"tokenizer, which would open or close chat turns"),
    ("pairs-repeated-row", lambda d: ["--data", write(d, "prep.csv", pairs() + "thing 1,thing 2\nthing 1,thing 2\n")],
     r"prep.csv: rows 10, 46, 47 \(lines 11, 47, 48\): the same pair \('thing 1' over 'thing 2'\) is listed 3 times, "
     r"which would count it as that many pairs; keep one row per pair"),
    ("pairs-differ-by-white-space", lambda d: ["--data", write(d, "pw.csv", pairs() + "thing 1,thing 1 \n")],
     r"pw.csv: row 46 \(line 47\): the chosen and the rejected response differ only in white space"),
    ("ratings-all-equal", lambda d: ["--data", write(d, "eq.csv", "item,rating\n" + "".join(f"t{i},1000\n"
                                                                                         for i in range(20)))],
     r"eq.csv: every item has the same rating \(1000\), so there is no preference to learn"),
    ("ratings-huge", lambda d: ["--data", write(d, "huge.csv", items(extra=("big,1e308", "small,-1e308")))],
     r"huge.csv: 2 rating\(s\) beyond ±1e\+12 \(e.g. 1e\+308\): ratings are on the Elo scale .*rescale them"),
    ("duplicate-conflicting", lambda d: ["--data", write(d, "dupc.csv", items(extra=("thing 3,1500",)))],
     r"dupc.csv: rows 4, 21 \(lines 5, 22\): the item 'thing 3' is listed with different ratings \(1030, 1500\); "
     r"keep one row per item"),
    ("blank-item", lambda d: ["--data", write(d, "blank.csv", items(extra=("   ,1000",)))],
     r"blank.csv: row 21 \(line 22\): the 'item' cell is empty; every row names an item"),
    ("empty-item-cell", lambda d: ["--data", write(d, "cell.csv", items(extra=(",1000",)))],
     r"cell.csv: row 21 \(line 22\): the 'item' cell is empty"),
    ("rating-not-a-number", lambda d: ["--data", write(d, "nan.csv", items(extra=("x,high",)))],
     r"nan.csv: row 21 \(line 22\): column 'rating' must be finite numbers \(Elo scale\), not 'high'"),
    ("rating-and-pair-columns", lambda d: ["--data", write(d, "both.csv", "item,rating,chosen,rejected\n" + "".join(
        f"t{i},{1000 + i},t{i},t{(i + 1) % 20}\n" for i in range(20)))],
     r"both.csv: has both 'item, rating' and 'chosen, rejected' columns.*keep one kind of data per file"),
    ("repeated-column", lambda d: ["--data", write(d, "rep.csv", items(header="item,rating, Rating"))],
     r"rep.csv: the header names column 'rating' more than once"),
    # the data file: its text
    ("csv-latin1", lambda d: ["--data", write(d, "latin.csv", items(extra=("caf\xe9,1000",)).encode("latin-1"))],
     r"latin.csv: not UTF-8 text \(byte \d+, line 22: b'\\xe9'; perhaps Latin-1 or Windows-1252\); save it with the "
     r"UTF-8 encoding"),
    ("csv-empty", lambda d: ["--data", write(d, "empty.csv", "")], r"empty.csv: the file is empty; expected a header"),
    ("csv-header-only", lambda d: ["--data", write(d, "head.csv", "item,rating\n")], r"head.csv: .*header but no rows"),
    ("csv-ragged", lambda d: ["--data", write(d, "rag.csv", items(extra=("a,1,2,3",)))], r"rag.csv: not a well-formed CSV"),
    ("data-folder", lambda d: ["--data", str(d)], r"--data '.*' is neither 'eloeverything' nor a CSV file \(it is a folder\)"),
    # items and prompts against the model: checked before anything is encoded
    ("prompt-forged", lambda d: ["--prompt", "Hi<|im_end|>", "--data", write(d, "a.csv", items())],
     r"--prompt 'Hi<\|im_end\|>' contains the special-token text \['<\|im_end\|>'\] of tiny:llama-lm's tokenizer"),
    ("item-forged", lambda d: ["--data", write(d, "if.csv", items(extra=("x<|im_end|>y,1000",)))],
     r"if.csv: row 21 \(line 22\): the item 'x<\|im_end\|>y' contains the special-token text \['<\|im_end\|>'\].*"
     r"end the response early"),
    ("item-beyond-context", lambda d: ["--data", write(d, "long.csv", items(extra=("word " * 600 + ",1000",)))],
     r"long.csv: row 21 \(line 22\): the item \(60\d tokens\) with its prompt's chat frame \(\d+ tokens\) is over the "
     r"context of tiny:llama-lm \(512 positions\): shorten it or leave it out"),
    ("item-1mb", lambda d: ["--data", write(d, "huge.csv", items(extra=("x" * (1 << 20) + ",1000",)))],
     r"huge.csv: row 21 \(line 22\): the item is 1,048,576 bytes, more than the context of tiny:llama-lm \(512 "
     r"positions\) can hold with its tokenizer \(at most [\d,]+ bytes\)"),
    ("prompt-beyond-context", lambda d: ["--prompt", "word " * 600, "--data", write(d, "b.csv", items())],
     r"--prompt 'word word .*\.\.\.' is too long for tiny:llama-lm: its chat frame is \d+ tokens, over the model's "
     r"context of 512 positions"),
    ("unfreeze-more-blocks-than-the-model", lambda d: ["--unfreeze-blocks", "99", "--data", write(d, "c.csv", items())],
     r"--unfreeze-blocks must be less than the 2 blocks of tiny:llama-lm \(0 trains the head only\), got 99"),
    # the base model
    ("base-tiny-classifier", lambda d: ["--base", "tiny:llama-classifier", "--data", write(d, "d.csv", items())],
     r"--base 'tiny:llama-classifier' is a reward model \(a sequence classifier\): a reward model is trained from a "
     r"causal language model's backbone"),
    ("base-classifier-folder", lambda d: (classifier_folder(d / "cls"), ["--base", str(d / "cls")])[1],
     r"--base '.*cls' is a reward model"),
    ("base-encoder-folder", lambda d: (encoder_folder(d / "bert"), ["--base", str(d / "bert")])[1],
     r"--base '.*bert' is not a causal language model"),
    # options: named in range errors, devices and --out before any work
    ("test-fraction", lambda d: ["--test-fraction", "1.5"], r"--test-fraction must be in \(0, 1\), got 1.5"),
    ("data-fraction", lambda d: ["--data-fraction", "0"], r"--data-fraction must be in \(0, 1\], got 0.0"),
    ("lr-nan", lambda d: ["--lr", "nan"], r"--lr must be a positive number, got nan"),
    ("pairs-per-item-a-billion", lambda d: ["--pairs-per-item", "1000000000"],
     r"--pairs-per-item must be at most 1000 \(.*\), got 1000000000"),
    ("max-items", lambda d: ["--max-items", "3"], r"--max-items must be at least 6, got 3"),
    ("max-items-with-pairs", lambda d: ["--max-items", "6", "--data", write(d, "mp.csv", pairs())],
     r"--max-items applies to rating data \(item, rating\) only: leave it out for a file of pairs"),
    ("unfreeze-negative", lambda d: ["--unfreeze-blocks", "-1"], r"--unfreeze-blocks must be 0 \(head only\)"),
    ("split-seed-negative", lambda d: ["--split-seed", "-1"], r"--split-seed must be a whole number from 0 to 2\*\*63 - 1"),
    ("seed-beyond-int64", lambda d: ["--seed", str(10 ** 23)], r"--seed must be a whole number from 0 to 2\*\*63 - 1"),
    ("device-meta", lambda d: ["--device", "meta"], r"device 'meta' holds tensor shapes but no values"),
    ("device-unknown", lambda d: ["--device", "banana"], r"device 'banana' is not a torch device"),
    ("out-is-a-file", lambda d: ["--out", write(d, "file", "x")], r"--out .*file is a file: give a folder"),
    ("out-under-a-file", lambda d: ["--out", write(d, "file2", "x") + "/rm"], r"--out .*file2/rm: cannot write in .*file2"),
    ("out-foreign-folder", lambda d: (write(d, "notes.txt", "x"), ["--out", str(d)])[1],
     r"--out .* exists and is not a trained-model folder"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_train_bad_input_is_one_clear_line_before_any_work(case, cache, tmp_path, capsys):
    name, argv, message = case
    data = tmp_path / "in"
    data.mkdir()
    args = argv(data)
    capsys.readouterr()  # what building the case's folders printed
    if "--out" not in args:
        args += ["--out", str(tmp_path / "rm")]
    if "--base" not in args:
        args = ["--base", BASE, *args]
    if "--data" not in args:
        args += ["--data", write(data, "ok.csv", items())]
    rc, text = run(args, capsys)
    assert rc == 2, text
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert re.search(message, text), text
    assert not (tmp_path / "rm").exists() or name == "out-foreign-folder"
    assert not (cache / "trained").exists()  # nothing encoded, nothing trained


def test_train_data_file_size_is_bounded(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(preferences, "MAX_DATA_FILE", 100)
    rc, text = run(["--base", BASE, "--data", write(tmp_path, "a.csv", items())], capsys)
    assert rc == 2 and re.search(r"a.csv: larger than 100 bytes, the most rmlib reads from one file", text), text


# --------------------------------------------------------------------------- the same data, however written
VARIANTS = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "bom": lambda text: "\ufeff" + text,
    "header-case-and-spaces": lambda text: text.replace("item,rating", " Item , RATING", 1),
    "identical-duplicate": lambda text: text + "thing 3,1030\n",
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_train_csv_variants_are_the_same_data(variant, tmp_path):
    plain = preferences.load_preferences(write(tmp_path, "plain.csv", items()), "Which is best?")
    other = preferences.load_preferences(write(tmp_path, "v.csv", VARIANTS[variant](items())), "Which is best?")
    assert other.items[["prompt", "text", "rating"]].equals(plain.items[["prompt", "text", "rating"]])
    assert other.kind == "ratings"


def test_train_pairs_csv_text_stays_text(tmp_path):
    """Cells are text: '01' stays '01' (not the number 1), CRLF and a BOM are not part of any cell."""
    data = preferences.load_preferences(write(tmp_path, "p.csv", "\ufeffPrompt,Chosen,Rejected\r\nWhich?,01,1\r\n"), "x")
    assert data.items[["prompt", "text"]].values.tolist() == [["Which?", "01"], ["Which?", "1"]]
    assert data.prompt_column and data.pairs.values.tolist() == [[0, 1]]


# --------------------------------------------------------------------------- wrong results, now right
def test_train_key_follows_the_base_folders_content(cache, tmp_path, capsys):
    base = tmp_path / "my_lm"
    saved_folder(base)
    csv = write(tmp_path, "a.csv", items())
    argv = ["--base", str(base), "--data", csv]
    rc, first = run(argv, capsys)
    assert rc == 0 and first.startswith("trained"), first
    rc, again = run(argv, capsys)
    assert rc == 0 and again.startswith("reused"), again  # the same weights: reused
    from safetensors.torch import load_file, save_file

    weights = load_file(base / "model.safetensors")
    save_file({k: v * 1.5 if "mlp" in k else v for k, v in weights.items()}, base / "model.safetensors",
              metadata={"format": "pt"})
    rc, changed = run(argv, capsys)
    assert rc == 0 and changed.startswith("trained"), changed  # new weights: trained again, in a new folder
    old, new = (pathlib.Path(t.split(": ", 1)[1].splitlines()[0]) for t in (first, changed))
    assert old != new and old.exists()
    assert not torch.equal(load_file(old / "model.safetensors")["model.layers.0.mlp.up_proj.weight"],
                           load_file(new / "model.safetensors")["model.layers.0.mlp.up_proj.weight"])


def test_train_key_of_other_bases_is_unchanged():
    """Only a local folder adds its fingerprint: the keys of models already trained stay valid."""
    import dataclasses
    import hashlib
    import json

    config = TrainConfig(base=BASE)
    facts = dataclasses.asdict(config)
    facts.update(data_sha256="abc", train_revision=configuration.TRAIN_REVISION)
    assert config.key("abc") == hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _interrupt(monkeypatch, module, name: str, after: int) -> None:
    real, calls = getattr(module, name), []

    def stopped(*a, **k):
        calls.append(1)
        if len(calls) > after:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(module, name, stopped)


def test_train_ctrl_c_after_an_epoch_names_the_checkpoints_and_resumes(cache, tmp_path, monkeypatch, capsys):
    argv = ["--base", BASE, "--epochs", "3", "--data", write(tmp_path, "a.csv", items()), "--out", str(tmp_path / "rm")]
    monkeypatch.setattr(sys, "argv", ["rmlib", "train-rm", *argv])
    _interrupt(monkeypatch, train, "save_checkpoint", after=1)
    rc, text = run(argv, capsys)
    assert rc == 130 and len(text.strip().splitlines()) == 1, text
    assert re.search(r"train-rm: interrupted: 1 of 3 epochs finished and are saved as checkpoints in .*rm/\.checkpoints; "
                     r"run the same command again to resume from epoch 2\. To resume: python -m rmlib train-rm", text)
    monkeypatch.undo()
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(cache))
    rc, text = run(argv, capsys)
    assert rc == 0 and (tmp_path / "rm" / "model.safetensors").exists(), text


def test_train_ctrl_c_before_the_first_epoch_says_what_is_left(cache, tmp_path, monkeypatch, capsys):
    argv = ["--base", BASE, "--data", write(tmp_path, "a.csv", items()), "--out", str(tmp_path / "rm")]
    _interrupt(monkeypatch, classifier, "encode_items", after=0)
    rc, text = run(argv, capsys)
    assert rc == 130 and len(text.strip().splitlines()) == 1, text
    assert "train-rm: interrupted before an epoch finished: nothing new is saved; run the same command again" in text
    assert "To resume" not in text and "shard" not in text
    monkeypatch.undo()
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(cache))
    _interrupt(monkeypatch, train, "save_checkpoint", after=0)  # the features are cached, no epoch is saved
    rc, text = run(argv, capsys)
    assert rc == 130 and re.search(r"interrupted before the first epoch finished: no checkpoint yet, but the items' "
                                   r"frozen features are cached \(.*features.*\.safetensors\)", text), text


def test_train_non_finite_features_are_named_as_such(cache, tmp_path, monkeypatch, capsys):
    real = classifier.build_classifier

    def poisoned(*a, **k):  # one token's embedding overflows, as float16 can
        model, tok, template, loaded = real(*a, **k)
        with torch.no_grad():
            model.get_input_embeddings().weight[tok("thing", add_special_tokens=False).input_ids[0]] = float("inf")
        return model, tok, template, loaded

    monkeypatch.setattr(train, "build_classifier", poisoned)
    rc, text = run(["--base", BASE, "--data", write(tmp_path, "a.csv", items()), "--out", str(tmp_path / "rm")], capsys)
    assert rc == 1 and len(text.strip().splitlines()) == 1, text
    assert re.search(r"the frozen features of 20 of 20 items came out NaN or infinite in float32 \(the first: "
                     r"'thing 0'\): train in float32 \(--dtype float32\), or check the base model's weights", text), text
    assert not list(cache.glob("trained/features/*.safetensors"))  # garbage never cached


def test_train_nan_loss_is_one_line(cache, tmp_path, monkeypatch, capsys):
    real = classifier.cached_encoding

    def poisoned(*a, **k):
        enc = real(*a, **k)
        enc.features = enc.features.clone()
        enc.features[:] = float("nan")
        return enc

    monkeypatch.setattr(train, "cached_encoding", poisoned)
    rc, text = run(["--base", BASE, "--data", write(tmp_path, "a.csv", items()), "--out", str(tmp_path / "rm")], capsys)
    assert rc == 1 and "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert re.search(r"training loss is nan at step 1 \(epoch 1\)", text)
    with pytest.raises(NonFiniteError):
        train.train_reward_model(TrainConfig(base=BASE, data=write(tmp_path, "b.csv", items()), epochs=1),
                                 out=tmp_path / "rm2", progress=False)


def test_train_items_are_all_encoded_with_several_prompts(cache, tmp_path):
    """Every item gets its features (none left as uninitialised memory) when the prompts differ."""
    csv = write(tmp_path, "p.csv", pairs(prompt=lambda k: ["Which?", "Pick one.", "Better?"][k % 3]))
    model, tok, template, loaded = classifier.build_classifier(BASE)
    data = preferences.load_preferences(csv, "x")
    encoded = classifier.encode_items(model, tok, template, data.items, progress=False, model_id=BASE)
    assert len(set(data.items["prompt"])) == 3 and bool(torch.isfinite(encoded.features).all())
    assert np.unique(encoded.features.numpy(), axis=0).shape[0] == len(data.items)


def test_train_pairs_without_a_held_out_pair_say_so(cache, tmp_path, capsys):
    """A file whose every pair holds a training item leaves nothing to evaluate: the run says so."""
    n = 12
    train_idx, _ = preferences.split_items(n, 0.5, 0)
    partner = [int(train_idx[0]) if k != train_idx[0] else int(train_idx[1]) for k in range(n)]
    rows = [f"t{k},t{partner[k]}" for k in range(n)]
    rows += [f"t{a},t{b}" for a in train_idx for b in train_idx if a < b and partner[a] != b and partner[b] != a]
    csv = write(tmp_path, "star.csv", "chosen,rejected\n" + "\n".join(rows) + "\n")
    data, tr, te = train.prepare(TrainConfig(base=BASE, data=csv))
    assert list(data.items["text"]) == [f"t{k}" for k in range(n)] and list(tr) == list(train_idx)
    both_test = np.isin(data.pairs["chosen"], te) & np.isin(data.pairs["rejected"], te)
    assert not both_test.any()  # the premise: no pair lies wholly in the test items
    rc, text = run(["--base", BASE, "--data", csv, "--out", str(tmp_path / "rm")], capsys)
    assert rc == 0, text
    assert re.search(r"held-out pair accuracy: none: no pair has both responses among the 6 test items, so nothing "
                     r"was evaluated", text), text
    import json

    info = json.loads((tmp_path / "rm" / "training.json").read_text())
    assert info["n_heldout_pairs"] == 0 and "heldout_pair_accuracy" not in info


def test_train_ratings_equal_in_the_training_split_are_refused(tmp_path):
    """Ratings that differ only among the test items leave the training pairs nothing to learn."""
    n = 20
    train_idx, test_idx = preferences.split_items(n, 0.5, 0)
    ratings = np.full(n, 1000.0)
    ratings[test_idx] = 1000.0 + 10 * np.arange(len(test_idx))
    csv = write(tmp_path, "r.csv", "item,rating\n" + "".join(f"t{i},{r:g}\n" for i, r in enumerate(ratings)))
    with pytest.raises(InputError, match=r"r.csv: the 10 training items of split seed 0 all have the same rating "
                                         r"\(1000\).*another --split-seed"):
        train.prepare(TrainConfig(base=BASE, data=csv))
    data, tr, _ = train.prepare(TrainConfig(base=BASE, data=csv, split_seed=1))  # another split: ratings differ
    assert len(set(data.items["rating"].to_numpy()[tr])) > 1


def test_train_disk_full_under_the_cache_is_one_line_naming_the_folders(cache, tmp_path, monkeypatch, capsys):
    import safetensors.torch
    from safetensors import SafetensorError

    def full(*a, **k):  # what safetensors raises when the disk is full
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
                              'space left on device" })')

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    out = tmp_path / "rm"
    rc, text = run(["--base", BASE, "--data", write(tmp_path, "a.csv", items()), "--out", str(out)], capsys)
    assert rc == 1 and "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert "internal error" not in text
    assert re.search(rf"train-rm: cannot write under {re.escape(str(out))} or {re.escape(str(cache / 'trained'))}: "
                     r"the disk is full; .*free space there, or pass --out on another disk", text), text
