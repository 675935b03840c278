"""The on-disk store: provenance, resume after kill -9, bad shards, concurrent writers, torchrun."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from rmlib.engine.scorers import NonFiniteScoreError
from rmlib.tables.store import import_paper_csv, load_scores, score_vocabulary
from tests.models_fixture import poisoned_classifier, tiny, tiny_implicit

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROMPT = "What, in one word, is the best thing ever?"


#: CLI processes started by the running test; the fixture below kills those still running at its end.
STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def kill_leftover_processes():
    """A failing test must not leave a scoring process behind to slow the tests after it."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.wait()


def cli(*args, cache, **kw):
    # The CLI's thread count is this process's: float sums in a matmul depend on it, and the
    # reference tables below are computed here.
    import torch

    env = dict(os.environ, RMLIB_SCORES_DIR=str(cache), PYTHONPATH=str(ROOT), RMLIB_THREADS=str(torch.get_num_threads()))
    process = subprocess.Popen([sys.executable, "-m", "rmlib", "score", "--no-progress", *args], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    STARTED.append(process)
    return process


def test_table_carries_provenance_and_reads_back(tmp_path):
    scorer = tiny("llama-classifier")
    out = tmp_path / "out.parquet"
    table = score_vocabulary(scorer, PROMPT, range(0, 700), cache_dir=tmp_path / "c", shard_size=256,
                             progress=False, out=out)
    back = load_scores(out)
    pd.testing.assert_frame_equal(back, table)
    prov = back.attrs["provenance"]
    for field in ("model_id", "revision", "dtype", "prompt", "chat_template", "mode", "rmlib_version", "scorer"):
        assert field in prov, field
    assert prov["prompt"] == PROMPT and prov["mode"] == "token"
    assert list(back.columns) == ["token_id", "token", "decoded", "score"]
    np.testing.assert_allclose(back["score"], scorer.token_scores(PROMPT, np.arange(700)), atol=1e-6)
    # a second call is served from the cache, and a slice of it too
    again = score_vocabulary(scorer, PROMPT, range(100, 200), cache_dir=tmp_path / "c", shard_size=256, progress=False)
    pd.testing.assert_frame_equal(again.reset_index(drop=True), table.iloc[100:200].reset_index(drop=True))


def test_resume_after_kill_9_gives_the_identical_table(tmp_path):
    args = ["--model", "tiny:llama-classifier", "--prompt", PROMPT, "--shard-size", "500", "--batch-size", "2",
            "--tokens", "0:16000"]
    whole = cli(*args, "--out", str(tmp_path / "whole.parquet"), cache=tmp_path / "a")
    victim = cli(*args, "--out", str(tmp_path / "resumed.parquet"), cache=tmp_path / "b")
    shards = tmp_path / "b"
    deadline = time.time() + 600  # a loaded machine can take long to start
    while time.time() < deadline and len(list(shards.glob("*.shards/shard-*.parquet"))) < 2:
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    done = len(list(shards.glob("*.shards/shard-*.parquet")))
    assert 2 <= done < 32, "the run was not stopped midway"
    assert whole.wait() == 0, whole.stderr.read()
    resumed = cli(*args, "--out", str(tmp_path / "resumed.parquet"), cache=tmp_path / "b")
    assert resumed.wait() == 0, resumed.stderr.read()
    a, b = load_scores(tmp_path / "whole.parquet"), load_scores(tmp_path / "resumed.parquet")
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert len(a) == 16000


def test_a_slice_then_the_whole_equals_the_whole_in_one_go(tmp_path):
    """A score does not depend on which other ids were scored with it: a table built from a slice (half a
    shard) and then the rest equals one scored in one go, bit for bit."""
    scorer = tiny("llama-classifier")
    fresh = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path / "fresh", shard_size=256,
                             progress=False)
    score_vocabulary(scorer, PROMPT, range(300, 1024), cache_dir=tmp_path / "grown", shard_size=256, progress=False)
    score_vocabulary(scorer, PROMPT, [5, 17, 900, 260, 1000], cache_dir=tmp_path / "grown", shard_size=256,
                     progress=False)
    grown = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path / "grown", shard_size=256,
                             progress=False)
    assert np.array_equal(grown["score"].to_numpy(), fresh["score"].to_numpy())
    assert grown["token_id"].tolist() == list(range(1024))
    # the same scores uncached, asked in any order or subset
    rng = np.random.default_rng(0)
    some = rng.permutation(1024)[:333]
    assert np.array_equal(scorer.token_scores(PROMPT, some), fresh["score"].to_numpy()[some])


def test_an_interrupted_table_resumed_at_another_thread_count_equals_one_scored_in_one_go(tmp_path):
    import torch

    from rmlib.engine.scorers import Scorer
    from rmlib.errors import Interrupted
    from rmlib.tables import store

    before = torch.get_num_threads()
    calls = []

    class Counting(Scorer):
        """The tiny classifier, recording the threads each shard is scored at; Ctrl-C at the third shard."""

        stop_at = None

        def token_scores(self, prompt, ids, mode="token", progress=False, slots=None):
            calls.append(torch.get_num_threads())
            if len(calls) == self.stop_at:
                raise KeyboardInterrupt
            return super().token_scores(prompt, ids, mode, progress, slots)

    scorer = Counting(tiny("llama-classifier").loaded)
    try:
        torch.set_num_threads(1)
        fresh = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path / "fresh", shard_size=128,
                                 progress=False)
        scorer.stop_at, calls[:] = 3, []
        with pytest.raises(Interrupted, match="2 finished shard"):
            score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path / "resumed", shard_size=128,
                             progress=False)
        shards = next((tmp_path / "resumed").glob("*.shards"))
        record = json.loads((shards / store.LAYOUT).read_text())
        assert record[store.THREADS] == 1 and record[store.SLOTS] == scorer.token_slots(PROMPT)
        torch.set_num_threads(2)
        scorer.stop_at, calls[:] = None, []
        with pytest.warns(UserWarning, match="started with 1 thread"):
            resumed = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path / "resumed",
                                       shard_size=128, progress=False)
        assert calls == [1] * 6  # the six missing shards, at the recorded count
        assert torch.get_num_threads() == 2  # and the caller's count is put back
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(resumed["score"].to_numpy(), fresh["score"].to_numpy())
    pd.testing.assert_frame_equal(resumed, fresh, check_exact=True)


def test_truncated_and_foreign_shards_are_recomputed(tmp_path):
    scorer = tiny("llama-classifier")
    cache = tmp_path / "c"
    first = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=cache, shard_size=256, progress=False)
    other = score_vocabulary(scorer, "Another prompt?", range(0, 1024), cache_dir=cache, shard_size=256, progress=False)
    mine = next(p for p in cache.glob("*.shards") if first.attrs["provenance"]["prompt"] and
                load_scores(next(p.glob("shard-*.parquet"))).attrs["provenance"]["prompt"] == PROMPT)
    theirs = next(p for p in cache.glob("*.shards") if p != mine)
    # truncate one shard, replace another by a foreign one, put garbage in a third
    s0, s1, s2 = (mine / f"shard-00000{i}.parquet" for i in range(3))
    s0.write_bytes(s0.read_bytes()[:200])
    shutil.copy(theirs / "shard-000001.parquet", s1)
    s2.write_bytes(b"not parquet at all")
    for final in cache.glob("*.parquet"):
        final.unlink()
    with pytest.warns(UserWarning, match="recomputing shard") as record:
        again = score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=cache, shard_size=256, progress=False)
    reasons = " ".join(str(w.message) for w in record)
    assert "unreadable" in reasons and "foreign" in reasons
    pd.testing.assert_frame_equal(again, first, check_exact=True)
    assert not np.allclose(other["score"], first["score"])


def test_concurrent_writers_do_not_corrupt(tmp_path):
    args = ["--model", "tiny:llama-classifier", "--prompt", PROMPT, "--shard-size", "512", "--batch-size", "8",
            "--tokens", "0:6000"]
    runs = [cli(*args, "--out", str(tmp_path / f"run{i}.parquet"), cache=tmp_path / "shared") for i in range(2)]
    for r in runs:
        assert r.wait() == 0, r.stderr.read()
    single = cli(*args, "--out", str(tmp_path / "single.parquet"), cache=tmp_path / "alone")
    assert single.wait() == 0
    ref = load_scores(tmp_path / "single.parquet")
    for i in range(2):
        pd.testing.assert_frame_equal(load_scores(tmp_path / f"run{i}.parquet"), ref, check_exact=True)
    assert not list((tmp_path / "shared").glob("**/*.tmp-*"))


def test_torchrun_two_processes_match_one(tmp_path):
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    args = ["-m", "rmlib", "score", "--no-progress", "--model", "tiny:llama-classifier", "--prompt", PROMPT,
            "--shard-size", "256", "--tokens", "0:2000"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    two = subprocess.run([str(torchrun), "--nproc-per-node", "2", "--master-port", "29517", *args,
                          "--out", str(tmp_path / "two.parquet")], cwd=ROOT, capture_output=True, text=True,
                         env=dict(env, RMLIB_SCORES_DIR=str(tmp_path / "d")), timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    one = subprocess.run([sys.executable, *args, "--out", str(tmp_path / "one.parquet")], cwd=ROOT,
                         capture_output=True, text=True, env=dict(env, RMLIB_SCORES_DIR=str(tmp_path / "s")), timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    a, b = load_scores(tmp_path / "one.parquet"), load_scores(tmp_path / "two.parquet")
    pd.testing.assert_frame_equal(a, b, check_exact=False, atol=1e-6, rtol=0)
    assert len(b) == 2000


def test_a_sparse_subset_is_scored_in_pooled_calls_with_each_tokens_own_bits(tmp_path, monkeypatch):
    """A stated subset leaves a few ids in each block; the blocks are pooled into scoring calls of about a
    block's worth of ids (fewer, fuller forwards), and every shard still holds its own ids with exactly the
    scores those ids get when scored alone."""
    scorer = tiny("llama-classifier")
    ids = np.arange(0, 3000, 37)  # 82 ids, one or two in each block of 64
    calls = []
    real = scorer.token_scores

    def counted(prompt, need, **kw):
        calls.append(len(need))
        return real(prompt, need, **kw)

    monkeypatch.setattr(scorer, "token_scores", counted)
    table = score_vocabulary(scorer, PROMPT, ids, cache_dir=tmp_path, shard_size=64, progress=False)
    blocks = np.unique(ids // 64)
    assert sum(calls) == len(ids) and len(calls) == 2 < len(blocks)
    assert all(n >= 64 for n in calls[:-1])
    assert table["token_id"].tolist() == ids.tolist()
    shard_dir = next(tmp_path.glob("*.shards"))
    for b in blocks:
        mine = ids[ids // 64 == b]
        shard = load_scores(shard_dir / f"shard-{b:06d}.parquet")
        assert shard["token_id"].tolist() == mine.tolist()
        assert np.array_equal(shard["score"].to_numpy(), real(PROMPT, mine))
    # a later call for more ids of the same blocks adds them to those shards, scored the same way
    more = np.arange(5, 3000, 37)
    grown = score_vocabulary(scorer, PROMPT, np.union1d(ids, more), cache_dir=tmp_path, shard_size=64,
                             progress=False)
    assert np.array_equal(grown.set_index("token_id").loc[ids, "score"].to_numpy(), table["score"].to_numpy())
    assert np.array_equal(grown.set_index("token_id").loc[more, "score"].to_numpy(), real(PROMPT, more))


def test_non_finite_scores_stop_the_run_and_keep_earlier_shards(tmp_path):
    scorer = poisoned_classifier(PROMPT, 700, float("inf"))
    with pytest.raises(NonFiniteScoreError) as err:
        score_vocabulary(scorer, PROMPT, range(0, 1024), cache_dir=tmp_path, shard_size=256, progress=False)
    assert err.value.token_ids == [700]
    kept = sorted(p.name for p in tmp_path.glob("*.shards/shard-*.parquet"))
    assert kept == ["shard-000000.parquet", "shard-000001.parquet"]


def test_import_paper_csv(tmp_path):
    raw = pd.DataFrame({"token_id": [2, 0, 1], "token_name": ["<b>", "ĠNULL", "NaN"], "token_decoded": ["<b>", " NULL", "NaN"],
                        "greatest": [0.5, -1.0, 2.0], "best": [1.0, 2.0, 3.0], "worst": [-3.0, 0.0, 9.5]})
    path = tmp_path / "Ray2333--GRM-gemma2-2B-rewardmodel-ft.csv"
    raw.to_csv(path, index=False)
    tables = import_paper_csv(path, "Ray2333/GRM-gemma2-2B-rewardmodel-ft")
    assert set(tables) == {"What, in one word, is the greatest thing ever?", "What, in one word, is the best thing ever?",
                           "What, in one word, is the worst thing ever?"}
    worst = tables["What, in one word, is the worst thing ever?"]
    assert worst["token_id"].tolist() == [0, 1, 2]
    assert worst["score"].tolist() == [0.0, 9.5, -3.0]
    assert worst["decoded"].tolist() == [" NULL", "NaN", "<b>"]  # strings stay strings
    assert worst.attrs["provenance"]["mode"] == "paper" and worst.attrs["provenance"]["dtype"] == "float16"
    with pytest.raises(ValueError, match="missing columns"):
        pd.DataFrame({"a": [1]}).to_csv(tmp_path / "x.csv", index=False)
        import_paper_csv(tmp_path / "x.csv", "m")


def test_import_paper_csv_keeps_a_carriage_return_token(tmp_path):
    # the authors' to_csv writes a token that decodes to a bare "\r" unquoted
    raw = pd.DataFrame({"token_id": [0, 1, 2], "token_name": ["a", "\r", "b"], "token_decoded": ["a", "\r", "b"],
                        "greatest": [0.5, -1.0, 2.0], "best": [1.0, 2.0, 3.0], "worst": [-3.0, 0.0, 9.5]})
    path = tmp_path / "m.csv"
    raw.to_csv(path, index=False)
    assert b",\r,\r," in path.read_bytes()
    tables = import_paper_csv(path, "Ray2333/GRM-gemma2-2B-rewardmodel-ft")
    best = tables["What, in one word, is the best thing ever?"]
    assert best["decoded"].tolist() == ["a", "\r", "b"] and best["score"].tolist() == [1.0, 2.0, 3.0]


def test_implicit_reward_tables_go_through_the_store(tmp_path):
    implicit = tiny_implicit()
    policy = implicit.policy
    table = score_vocabulary(implicit, PROMPT, range(0, 600), cache_dir=tmp_path, shard_size=256, progress=False)
    expect = policy.token_scores(PROMPT, np.arange(600)) - implicit.reference.token_scores(PROMPT, np.arange(600))
    np.testing.assert_allclose(table["score"], expect, atol=1e-9)
    assert table.attrs["provenance"]["scorer"] == "implicit"
    assert "__implicit__" in next(tmp_path.glob("*.parquet")).name


def test_text_scores_are_cached_resumed_and_equal_direct_scores(tmp_path, monkeypatch):
    from rmlib.tables.store import score_texts

    scorer = tiny("llama-classifier")
    texts = ["Universe", "Water", "the love of my life", "a", "Mount Everest", "Water"]
    direct = scorer.score_texts(PROMPT, texts)
    first = score_texts(scorer, PROMPT, texts[:3], cache_dir=tmp_path, chunk=2, progress=False)
    np.testing.assert_array_equal(first["score"], direct["score"][:3])
    calls = []
    real = type(scorer).score_texts

    def counting(self, prompt, batch, **kw):
        calls.append(list(batch))
        return real(self, prompt, batch, **kw)

    monkeypatch.setattr(type(scorer), "score_texts", counting)
    both = score_texts(scorer, PROMPT, texts, cache_dir=tmp_path, chunk=2, progress=False)
    assert calls == [["a", "Mount Everest"]]  # only what the cache lacked
    assert both["text"].tolist() == texts
    np.testing.assert_array_equal(both["score"], direct["score"])  # grown in steps: the same bits
    assert both.attrs["provenance"]["prompt"] == PROMPT
    cached = next(tmp_path.glob("*__texts.parquet"))
    cached.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="unreadable"):
        again = score_texts(scorer, PROMPT, texts, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(again["score"], direct["score"])


def test_a_text_table_keeps_the_thread_count_it_was_started_with(tmp_path):
    """The text table records the thread count it was started with; a run that adds to it at another
    count scores with the recorded one (and records it again)."""
    from rmlib.engine.threads import pinned_threads
    from rmlib.tables.store import score_texts

    scorer = tiny("llama-classifier")
    texts = ["Universe", "Water", "the love of my life", "a", "Mount Everest", "peace and quiet, mostly"]
    seen = []
    real = type(scorer).score_texts

    def counting(self, prompt, batch, **kw):
        import torch

        seen.append(torch.get_num_threads())
        return real(self, prompt, batch, **kw)

    with pinned_threads(1):
        score_texts(scorer, PROMPT, texts[:2], cache_dir=tmp_path, progress=False)
    with pytest.MonkeyPatch.context() as m, pinned_threads(2):
        m.setattr(type(scorer), "score_texts", counting)
        grown = score_texts(scorer, PROMPT, texts, cache_dir=tmp_path, progress=False)
    assert seen == [1] and grown.attrs["provenance"]["threads"] == 1
    assert load_scores(next(tmp_path.glob("*__texts.parquet"))).attrs["provenance"]["threads"] == 1


def test_text_scores_go_into_a_cache_folder_that_does_not_exist_yet(tmp_path):
    """A fresh checkout has no data/scores: the first cached text scores create it."""
    from rmlib.tables.store import score_texts

    scorer = tiny("llama-classifier")
    root = tmp_path / "not" / "there"
    table = score_texts(scorer, "What is best?", ["a cat", "tea"], cache_dir=root, progress=False)
    assert list(table["text"]) == ["a cat", "tea"] and root.is_dir()
    again = score_texts(scorer, "What is best?", ["tea", "a cat"], cache_dir=root, progress=False)
    assert dict(zip(again["text"], again["score"])) == dict(zip(table["text"], table["score"]))


def test_a_block_another_run_holds_is_left_for_later_and_the_table_is_the_same(tmp_path):
    """``wait=False``: the blocks this run can lock are scored and the call returns None while another run
    holds one it needs; asked again once that lock is free, it returns the table one uninterrupted call
    gives, bit for bit."""
    from rmlib.files import file_lock
    from rmlib.tables.store import table_stem

    scorer = tiny("llama-classifier")
    ids = np.arange(0, 256)
    shard_dir = tmp_path / "shared" / f"{table_stem(scorer.provenance(PROMPT, 'token'))}.shards"
    shard_dir.mkdir(parents=True)
    with file_lock(shard_dir / "shard-000001.lock"):  # "another run" is scoring block 1
        assert score_vocabulary(scorer, PROMPT, ids, cache_dir=tmp_path / "shared", shard_size=64,
                                progress=False, wait=False) is None
        assert sorted(p.name for p in shard_dir.glob("shard-*.parquet")) == [
            "shard-000000.parquet", "shard-000002.parquet", "shard-000003.parquet"]
    later = score_vocabulary(scorer, PROMPT, ids, cache_dir=tmp_path / "shared", shard_size=64, progress=False,
                             wait=False)
    whole = score_vocabulary(scorer, PROMPT, ids, cache_dir=tmp_path / "alone", shard_size=64, progress=False)
    pd.testing.assert_frame_equal(later, whole, check_exact=True)


def test_score_models_scores_other_prompts_while_another_run_holds_a_block(tmp_path, monkeypatch):
    """A prompt whose block another run holds is finished after the model's other prompts (scored
    meanwhile, not waited for); the long table is in the prompts' order and equals one scored alone."""
    import threading

    from rmlib.engine.scorers import Scorer
    from rmlib.files import file_lock
    from rmlib.runs.scoring import score_models
    from rmlib.tables.store import table_stem

    other = "What, in one word, is the worst thing ever?"
    calls, real, seen_other = [], Scorer.token_scores, threading.Event()

    def recorded(self, prompt, ids, *a, **kw):
        calls.append(prompt)
        if prompt == other:
            seen_other.set()
        return real(self, prompt, ids, *a, **kw)

    monkeypatch.setattr(Scorer, "token_scores", recorded)
    shard_dir = tmp_path / "shared" / f"{table_stem(tiny('llama-classifier').provenance(PROMPT, 'token'))}.shards"
    shard_dir.mkdir(parents=True)
    held = threading.Event()

    def another_run():  # holds block 0 of the first prompt until the second prompt is being scored
        with file_lock(shard_dir / "shard-000000.lock"):
            held.set()
            seen_other.wait(timeout=120)

    thread = threading.Thread(target=another_run)
    thread.start()
    held.wait(timeout=60)
    long = score_models(["tiny:llama-classifier"], [PROMPT, other], token_ids="0:300", progress=False,
                        cache_dir=tmp_path / "shared")
    thread.join()
    assert calls == [other, PROMPT]
    calls.clear()
    alone = score_models(["tiny:llama-classifier"], [PROMPT, other], token_ids="0:300", progress=False,
                         cache_dir=tmp_path / "alone")
    assert calls == [PROMPT, other]
    pd.testing.assert_frame_equal(long, alone, check_exact=True)
