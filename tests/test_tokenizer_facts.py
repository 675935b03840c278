"""A warm start: a lite-forward model whose tokenizer was seen before scores from the cached tokenizer facts and
chat frame (rmlib.engine.tokenizer_facts) without reading its tokenizer or importing transformers, with the
same scores and provenance as reading it; changed tokenizer files and damaged records are noticed."""

import copy
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROMPT = "What is the greatest thing?"


@pytest.fixture
def rm_folder(tmp_path, monkeypatch):
    """A tiny Llama classifier (the lite forward runs it) saved as a folder with the default model's tokenizer;
    the user cache a fresh folder."""
    from .models_fixture import tiny

    built = tiny("llama-classifier").loaded
    folder = tmp_path / "rm"
    built.model.save_pretrained(folder, safe_serialization=True)
    built.tokenizer.save_pretrained(folder)
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "cache"))
    return folder


def _score(folder, scores, prompt=PROMPT, ids=range(100, 164), **kw):
    """Load the folder afresh and score ``ids`` through the store; the table, its file read back, the loaded model."""
    from rmlib.engine.models import load_model
    from rmlib.engine.scorers import Scorer
    from rmlib.tables.store import load_scores, score_vocabulary

    loaded = load_model(str(folder), lite=True)
    assert loaded.forward == "lite" and not loaded.tokenizer_read  # read on first use only
    out = scores / "out.parquet"
    table = score_vocabulary(Scorer(loaded, **kw), prompt, np.array(list(ids)), cache_dir=scores, progress=False,
                             out=out)
    return table, load_scores(out), loaded


def _same(a, b):
    assert a.attrs["provenance"] == b.attrs["provenance"]
    assert list(a.columns) == list(b.columns)
    assert a["token_id"].tolist() == b["token_id"].tolist()
    assert a["token"].tolist() == b["token"].tolist() and a["decoded"].tolist() == b["decoded"].tolist()
    assert np.array_equal(a["score"].to_numpy().view(np.int64), b["score"].to_numpy().view(np.int64))  # bit for bit


def test_a_warm_start_scores_without_the_tokenizer_and_equals_reading_it(rm_folder, tmp_path):
    from rmlib.engine.frames import chat_frame
    from rmlib.engine.tokenizer_files import read_tokenizer

    read_tokenizer.cache_clear()
    cold, cold_file, loaded = _score(rm_folder, tmp_path / "s1")
    assert loaded.tokenizer_read  # the first time: read, and the cache filled
    facts = list((tmp_path / "cache" / "tokenizer-facts").glob("*.json"))
    frames = list((tmp_path / "cache" / "tokenizer-facts" / "frames").glob("*.json"))
    assert len(facts) == 1 and len(frames) == 1
    warm, warm_file, loaded = _score(rm_folder, tmp_path / "s2")
    assert not loaded.tokenizer_read  # scored, its table written, and the tokenizer never read
    assert not copy.copy(loaded).tokenizer_read and not copy.deepcopy(loaded).tokenizer_read  # copies defer it too
    _same(cold, warm)
    _same(cold_file, warm_file)
    prov = warm.attrs["provenance"]
    tok = loaded.tokenizer  # read now: the facts used agree with it
    frame = chat_frame(tok, PROMPT)
    assert (prov["prefix_text"], prov["suffix_text"], prov["prefix_ids"], prov["suffix_ids"]) == (
        frame.prefix_text, frame.suffix_text, list(frame.prefix_ids), list(frame.suffix_ids))
    assert warm["decoded"].tolist() == [tok.decode([i]) for i in range(100, 164)]
    import transformers

    assert prov["transformers_version"] == transformers.__version__

    # a prompt seen for the first time reads the tokenizer (and is recorded); a chat template given to the scorer
    # is another frame
    other, _, loaded = _score(rm_folder, tmp_path / "s3", prompt="Name a colour.")
    assert loaded.tokenizer_read
    again, _, loaded = _score(rm_folder, tmp_path / "s4", prompt="Name a colour.")
    assert not loaded.tokenizer_read
    _same(other, again)
    plain, _, loaded = _score(rm_folder, tmp_path / "s5", chat_template="plain")
    assert loaded.tokenizer_read and plain.attrs["provenance"]["prefix_text"].startswith("User: ")
    plain_warm, _, loaded = _score(rm_folder, tmp_path / "s6", chat_template="plain")
    assert not loaded.tokenizer_read
    _same(plain, plain_warm)


def _rewrite_same_size(path: pathlib.Path, old: bytes, new: bytes) -> None:
    """Replace one run of bytes by another of the same length, keeping the file's modification time."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("change", ["tokenizer.json", "tokenizer_config.json", "chat_template"])
def test_a_changed_tokenizer_file_is_read_again(rm_folder, tmp_path, change):
    from rmlib.engine.tokenizer_files import read_tokenizer

    _score(rm_folder, tmp_path / "s1")
    assert not _score(rm_folder, tmp_path / "s2")[2].tokenizer_read  # warm
    if change == "tokenizer.json":  # a byte of whitespace: the same tokenizer, other bytes
        _rewrite_same_size(rm_folder / "tokenizer.json", b'\n  "', b'\n\t "')
    elif change == "tokenizer_config.json":
        config = rm_folder / "tokenizer_config.json"
        _rewrite_same_size(config, b'"model_max_length": 1', b'"model_max_length": 2')
    else:
        template = rm_folder / "chat_template.jinja"
        _rewrite_same_size(template, b"system\nYou are a", b"system\nYou are A")
    read_tokenizer.cache_clear()
    changed, _, loaded = _score(rm_folder, tmp_path / "s3")
    assert loaded.tokenizer_read  # noticed: read again
    warm, _, loaded = _score(rm_folder, tmp_path / "s4")
    assert not loaded.tokenizer_read
    _same(changed, warm)
    if change == "chat_template":
        assert "You are A" in changed.attrs["provenance"]["prefix_text"]


def test_damaged_or_foreign_records_are_ignored_and_written_again(rm_folder, tmp_path):
    cold, _, _ = _score(rm_folder, tmp_path / "s1")
    other, _, _ = _score(rm_folder, tmp_path / "s2", prompt="Name a colour.")
    folder = tmp_path / "cache" / "tokenizer-facts"
    (facts,) = folder.glob("*.json")
    frames = sorted((folder / "frames").glob("*.json"), key=lambda p: json.loads(p.read_text())["body"]["prompt"])
    assert [json.loads(p.read_text())["body"]["prompt"] for p in frames] == ["Name a colour.", PROMPT]
    good_facts = facts.read_text()
    # a frame record holding another prompt's frame (foreign) is not trusted
    frames[1].write_text(frames[0].read_text())
    again, _, loaded = _score(rm_folder, tmp_path / "s3")
    assert loaded.tokenizer_read
    _same(cold, again)
    assert json.loads(frames[1].read_text())["body"]["prompt"] == PROMPT  # written again
    # damaged facts: not JSON, then a field of the wrong type, then another format
    record = json.loads(good_facts)
    wrong_type = {**record, "body": {**record["body"], "vocab_size": str(record["body"]["vocab_size"])}}
    for damaged in ("{not json", json.dumps(wrong_type), json.dumps({**record, "format": 999})):
        facts.write_text(damaged)
        again, _, loaded = _score(rm_folder, tmp_path / "s4")
        assert loaded.tokenizer_read
        _same(cold, again)
        assert facts.read_text() == good_facts
    assert not _score(rm_folder, tmp_path / "s5")[2].tokenizer_read


def _score_process(folder, cache, scores):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMLIB_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rmlib", "score", "--model", str(folder),
                           "--prompt", PROMPT, "--tokens", "100:164", "--no-progress", "--cache-dir", str(scores)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", proc.stderr, re.M)}
    return proc.stdout, imported


def test_a_warm_rmlib_score_imports_no_transformers(rm_folder, tmp_path):
    first, imported = _score_process(rm_folder, tmp_path / "cache", tmp_path / "s1")
    assert "transformers" in imported and "torch" in imported  # read the tokenizer: filled the cache
    warm, imported = _score_process(rm_folder, tmp_path / "cache", tmp_path / "s2")
    assert "torch" in imported and not {m for m in imported if m.split(".")[0] == "transformers"}
    assert "tokenizers" not in imported
    assert warm == first and warm.startswith("scored 64 tokens")


@pytest.mark.parametrize("quiet", [False, True])
def test_no_progress_silences_transformers_bars_it_did_not_import_yet(rm_folder, tmp_path, quiet):
    """``--no-progress`` no longer imports transformers to silence its bars (a warm start imports none); the
    model transformers loads later (mode "paper") still shows no "Loading weights" bar."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMLIB_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    proc = subprocess.run([sys.executable, "-m", "rmlib", "score", "--model", str(rm_folder), "--prompt", PROMPT,
                           "--tokens", "100:104", "--mode", "paper", "--cache-dir", str(tmp_path / "s"),
                           *(["--no-progress"] if quiet else [])],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("Loading weights" in proc.stderr) is not quiet
