"""The plain-torch Llama and Gemma-2 forward (rmlib.engine.lite_llama) against transformers' own.

Each tiny checkpoint is saved to a folder with weights drawn larger than its init
(std 0.3, norms 1 ± 0.3) so that scores differ from token to token by far more
than the tolerance, then loaded twice, with and without ``lite``; every kernel
path must give transformers' numbers.
"""

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from rmlib.engine import kernel as kernel_mod
from rmlib.engine import lite_llama
from rmlib.engine.embedded import embedded_model_folder
from rmlib.engine.models import load_model
from rmlib.engine.tokenizer_files import read_tokenizer
from rmlib.engine.scorers import Scorer
from rmlib.errors import InputError
from rmlib.tables.store import load_scores

from .models_fixture import tiny

PROMPT = "What is the greatest thing ever?"
TEXTS = ["hello there", "The cat sat on the mat.", "x", "I love you so much, really", "4"]


def _save(tmp_path, arch, name, edit_config=None, **save):
    """A tiny model of ``arch`` with spread-out weights, saved as save_pretrained writes it (``gemma2-lm``: the
    Gemma-2 classifier's config as a causal LM)."""
    loaded = tiny("gemma2-classifier" if arch == "gemma2-lm" else arch).loaded
    folder = tmp_path / name
    if arch == "gemma2-lm":
        from transformers import Gemma2ForCausalLM

        config = copy.deepcopy(loaded.model.config)
        config.architectures = ["Gemma2ForCausalLM"]
        model = Gemma2ForCausalLM(config)
    else:
        model = type(loaded.model)(loaded.model.config)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3 + (1.0 if "norm" in name else 0.0))
    model.save_pretrained(folder, safe_serialization=True, **save)
    loaded.tokenizer.save_pretrained(folder)
    if edit_config:
        cfg = json.loads((folder / "config.json").read_text())
        edit_config(cfg)
        (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture(scope="module")
def classifier_folder(tmp_path_factory):
    return _save(tmp_path_factory.mktemp("lite"), "llama-classifier", "clf")


@pytest.fixture(scope="module", params=["llama-classifier", "gemma2-classifier"])
def any_classifier_folder(request, tmp_path_factory):
    return _save(tmp_path_factory.mktemp("lite"), request.param, "clf")


@pytest.fixture(scope="module", params=["llama-lm", "gemma2-lm"])
def lm_folder(request, tmp_path_factory):
    return _save(tmp_path_factory.mktemp("lite"), request.param, "lm")


def _pair(folder, batch_size=64):
    ref = Scorer(load_model(str(folder)), batch_size=batch_size)
    lite = Scorer(load_model(str(folder), lite=True), batch_size=batch_size)
    assert ref.loaded.forward == "transformers"
    assert lite.loaded.forward == "lite"
    assert lite.loaded.revision == ref.loaded.revision and lite.loaded.kind == ref.loaded.kind
    return ref, lite


# transformers' packed candidates (16) and its batched call with a copied prefix (2048), each against the
# lite forward's shared-prefix attention (lite_llama.SharedPrefix)
@pytest.mark.parametrize("batch_size", [16, 2048])
def test_classifier_token_and_text_scores_equal_transformers(any_classifier_folder, batch_size):
    ref, lite = _pair(any_classifier_folder, batch_size)
    ids = np.arange(200, 1400)
    assert (batch_size * (1 + len(ref.frame(PROMPT).suffix_ids)) > kernel_mod.PACK_MAX_TOKENS) == (batch_size > 16)
    a, b = ref.token_scores(PROMPT, ids), lite.token_scores(PROMPT, ids)
    assert a.std() > 1000 * 1e-5 * max(1.0, np.abs(a).max())  # the scores spread far beyond the tolerance
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * max(1.0, np.abs(a).max()))
    ta, tb = ref.score_texts(PROMPT, TEXTS), lite.score_texts(PROMPT, TEXTS)
    np.testing.assert_allclose(tb["score"], ta["score"], rtol=0, atol=1e-5 * max(1.0, ta["score"].abs().max()))


@pytest.mark.parametrize("window", [None, 4])
def test_shared_prefix_attention_equals_a_masked_attention_over_copied_keys(window):
    """SharedPrefix.attend against torch's attention over the prefix copied per candidate, grouped-query
    heads repeated, and a causal mask within each candidate (with a sliding window of 4 positions: only
    keys less than 4 positions behind each query)."""
    gen = torch.Generator().manual_seed(0)
    batch, heads, kv, length, prefix, dim = 5, 6, 2, 6, 7, 8
    q = torch.randn(batch, heads, length, dim, generator=gen)
    k, v = torch.randn(2, batch, kv, length, dim, generator=gen)
    kp, vp = torch.randn(2, 1, kv, prefix, dim, generator=gen)
    got = lite_llama.SharedPrefix([(kp, vp)]).attend(0, q, k, v, dim ** -0.5, window=window)
    keys = torch.cat([kp.expand(batch, -1, -1, -1), k], dim=2).repeat_interleave(heads // kv, dim=1)
    values = torch.cat([vp.expand(batch, -1, -1, -1), v], dim=2).repeat_interleave(heads // kv, dim=1)
    sees = torch.zeros(length, prefix + length, dtype=torch.bool)
    for i in range(length):
        for j in range(prefix + i + 1):
            sees[i, j] = window is None or prefix + i - j < window
    expected = torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=sees)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_lm_log_probs_equal_transformers(lm_folder):
    ref, lite = _pair(lm_folder)
    ids = np.arange(0, ref.vocab_size, 97)
    np.testing.assert_allclose(lite.token_scores(PROMPT, ids), ref.token_scores(PROMPT, ids), rtol=0, atol=1e-5)
    seqs = [[100, 200, 300], [5], [400, 401], [7, 8, 9, 10, 11]]
    np.testing.assert_allclose(lite.sequence_scores(PROMPT, seqs), ref.sequence_scores(PROMPT, seqs), rtol=0, atol=1e-4)


def test_gradients_through_embeddings_equal_transformers(any_classifier_folder):
    """GCG differentiates the packed kernel through one-hot embeddings: same values, same gradients."""
    ref, lite = _pair(any_classifier_folder)
    suffix = list(ref.frame(PROMPT).suffix_ids)
    ids = torch.tensor([[300, 301] + suffix, [302, 303] + suffix])
    last = torch.full((2,), ids.shape[1] - 1)
    out = []
    for scorer in (ref, lite):
        emb = scorer.loaded.model.get_input_embeddings().weight
        onehot = torch.nn.functional.one_hot(ids, emb.shape[0]).float().requires_grad_(True)
        scores = scorer.kernel(PROMPT)[1].classifier(None, last, embeds=onehot @ emb)
        scores.sum().backward()
        out.append((scores.detach(), onehot.grad[:, :2]))
    torch.testing.assert_close(out[1][0], out[0][0], rtol=0, atol=1e-4)
    torch.testing.assert_close(out[1][1], out[0][1], rtol=1e-4, atol=1e-4)


def test_default_model_lite_equals_transformers():
    """The embedded SmolLM2 (30 layers, grouped-query attention, tied head): same log-probs."""
    ref = Scorer(load_model("default"))
    lite = Scorer(load_model("default", lite=True))
    assert lite.loaded.forward == "lite" and lite.loaded.model.lm_head.weight is lite.loaded.model.model.embed_tokens.weight
    ids = np.arange(0, ref.vocab_size, 211)
    np.testing.assert_allclose(lite.token_scores(PROMPT, ids), ref.token_scores(PROMPT, ids), rtol=0, atol=1e-5)
    ta, tb = ref.score_texts(PROMPT, TEXTS), lite.score_texts(PROMPT, TEXTS)
    np.testing.assert_allclose(tb["score"], ta["score"], rtol=0, atol=1e-4)
    assert lite.provenance(PROMPT, "token")["forward"] == "rmlib lite_llama"
    assert ref.provenance(PROMPT, "token")["forward"] == "transformers"


def _rope_scaled(cfg):
    cfg["rope_parameters"] = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}


def _sharded(folder):
    (folder / "model.safetensors").rename(folder / "model-00001-of-00001.safetensors")


def _mistral(cfg):
    cfg.update(architectures=["MistralForSequenceClassification"], model_type="mistral")


@pytest.mark.parametrize("arch,edit,why", [
    ("llama-classifier", _mistral, "another architecture"),
    ("gemma2-classifier", lambda cfg: cfg.update(hidden_activation="gelu"), "another activation"),
    ("llama-classifier", _rope_scaled, "RoPE scaling"),
    ("llama-classifier", lambda cfg: cfg.update(hidden_act="gelu"), "another activation"),
])
def test_checkpoints_it_does_not_reproduce_load_with_transformers(tmp_path, arch, edit, why):
    folder = _save(tmp_path, arch, "m", edit)
    assert lite_llama.lite_config(folder) is None, why
    loaded = load_model(str(folder), lite=True)
    assert loaded.forward == "transformers"


def test_wrong_shapes_fall_back_to_transformers_and_its_error(tmp_path):
    folder = _save(tmp_path, "llama-classifier", "m",
                   lambda cfg: cfg.update(intermediate_size=cfg["intermediate_size"] * 2))
    assert lite_llama.lite_config(folder) is not None
    with pytest.raises(Exception) as err:
        load_model(str(folder), lite=True)
    assert "lite" not in str(err.value).lower()  # transformers' own loading error, not the lite loader's


def test_default_batch_is_larger_for_the_shared_prefix_path(classifier_folder):
    assert Scorer(load_model(str(classifier_folder), lite=True)).batch_size == 512
    assert Scorer(load_model(str(classifier_folder))).batch_size == 64


def test_lite_default_batch_keeps_to_a_position_budget_for_long_texts(classifier_folder, monkeypatch):
    """The lite default (512 candidates) would pad long texts to the longest of 512: each call keeps to
    LITE_CPU_POSITIONS positions instead (single tokens still go 512 at a time); scores unchanged."""
    from rmlib.engine import plan

    monkeypatch.setattr(plan, "LITE_CPU_POSITIONS", 60)  # tiny texts: a budget they exceed (the plan is made at load)
    lite = Scorer(load_model(str(classifier_folder), lite=True))
    tok = lite.tokenizer
    texts = [" ".join(["word"] * n) for n in (1, 2, 3, 5, 8, 13, 21)] * 6
    suffix = len(lite.frame(PROMPT).suffix_ids)
    calls = []
    kernel = lite.kernel(PROMPT)[1]
    real = kernel.classifier

    def spy(ids, last, embeds=None):  # each forward's shape: candidates x longest
        calls.append(tuple(ids.shape))
        return real(ids, last, embeds)

    monkeypatch.setattr(kernel, "classifier", spy)
    seqs = [list(tok(t, add_special_tokens=False).input_ids) for t in texts]
    batched = lite.sequence_scores(PROMPT, seqs)
    assert len(calls) > 4 and all(n * longest <= 60 or n == 1 for n, longest in calls), calls
    calls.clear()
    got = lite.score_texts(PROMPT, texts)["score"].to_numpy()  # fixed places: rows = text positions // length
    rows = lite.loaded.plan.text_rows
    assert calls and all(n == rows(longest) for n, longest in calls), calls
    one = Scorer(lite.loaded, batch_size=1).score_texts(PROMPT, texts)["score"].to_numpy()
    np.testing.assert_allclose(got, one, atol=1e-5, rtol=0)
    np.testing.assert_allclose(batched, one, atol=1e-5, rtol=0)


def test_paper_mode_refuses_a_lite_model(classifier_folder):
    lite = Scorer(load_model(str(classifier_folder), lite=True))
    with pytest.raises(InputError, match="paper"):
        lite.token_scores(PROMPT, np.arange(10), mode="paper")


def test_tokenizer_read_by_its_named_class_equals_autotokenizer():
    from transformers import AutoTokenizer

    folder = embedded_model_folder("default")
    read_tokenizer.cache_clear()
    direct, auto = read_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder))
    assert type(direct) is type(auto)
    assert direct.get_vocab() == auto.get_vocab() and len(direct) == len(auto)
    assert direct.all_special_tokens == auto.all_special_tokens and direct.pad_token_id == auto.pad_token_id
    ids = list(range(len(auto)))
    assert [direct.decode([i]) for i in ids] == [auto.decode([i]) for i in ids]
    for text in TEXTS + ["  spaced   out\n\ttabs", "émoji 🤖 and 中文"]:
        assert direct(text).input_ids == auto(text).input_ids
    chat = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "x"}]
    assert direct.apply_chat_template(chat, tokenize=False) == auto.apply_chat_template(chat, tokenize=False)


def test_cli_token_mode_uses_the_lite_forward_and_never_imports_transformers_models(tmp_path, classifier_folder):
    out = tmp_path / "scores.parquet"
    code = ("import sys\nfrom rmlib.cli import main\n"
            "rc = main(['score', '--model', sys.argv[1], '--prompt', 'hi', '--tokens', '0:8', '--no-progress', "
            "'--cache-dir', sys.argv[3], '--out', sys.argv[2]])\n"
            "print('EXIT', rc, 'MODELING', any('modeling_llama' in m for m in sys.modules), flush=True)")
    proc = subprocess.run([sys.executable, "-c", code, str(classifier_folder), str(out), str(tmp_path / "cache")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "EXIT 0 MODELING False" in proc.stdout
    table = load_scores(out)
    assert table.attrs["provenance"]["forward"] == "rmlib lite_llama"
    ref = Scorer(load_model(str(classifier_folder)))
    expected = ref.token_scores("hi", np.arange(8))
    np.testing.assert_allclose(table.sort_values("token_id")["score"], expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_chapter_scoring_runs_the_lite_forward_with_the_same_scores(classifier_folder, tmp_path, monkeypatch):
    from rmlib.runs import scoring

    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path / "explorer"))  # not the checkout's data/scores

    ids = list(range(100, 400, 7))
    long = scoring.score_models([str(classifier_folder)], [PROMPT], token_ids=ids, progress=False, cache_dir=tmp_path)
    assert long.attrs["provenance"][0]["forward"] == "rmlib lite_llama"
    reference = Scorer(load_model(str(classifier_folder))).token_scores(PROMPT, np.array(ids))  # transformers
    np.testing.assert_allclose(long["score"].to_numpy(), reference, atol=1e-5, rtol=0)
    explorer = scoring.CachedScorer(str(classifier_folder))
    assert explorer.scorer.loaded.forward == "lite"
    np.testing.assert_allclose(explorer.score_tokens(PROMPT, ids)["score"].to_numpy(), reference, atol=1e-5, rtol=0)


def test_gemma2_sliding_window_is_applied_beyond_it(tmp_path):
    """A prompt longer than Gemma-2's sliding window (6 here): the alternate layers see only the window, on the
    shared-prefix path as in transformers' own forward (whole texts, the expanded cache)."""
    folder = _save(tmp_path, "gemma2-classifier", "w", lambda cfg: cfg.update(sliding_window=6))
    ref, lite = _pair(folder)
    assert lite.kernel(PROMPT)[1].prefix_len > 6
    ids = np.arange(300, 700)
    a, b = ref.token_scores(PROMPT, ids), lite.token_scores(PROMPT, ids)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * max(1.0, np.abs(a).max()))
    unwindowed = Scorer(load_model(str(_save(tmp_path, "gemma2-classifier", "nw")), lite=True)).token_scores(PROMPT, ids)
    assert np.abs(unwindowed - b).max() > 1e-3  # the window changes the scores: it is not a no-op here
    ta, tb = ref.score_texts(PROMPT, TEXTS), lite.score_texts(PROMPT, TEXTS)
    np.testing.assert_allclose(tb["score"], ta["score"], rtol=0, atol=1e-5 * max(1.0, ta["score"].abs().max()))


def test_sharded_checkpoint_loads_every_shard(tmp_path):
    folder = _save(tmp_path, "gemma2-classifier", "s", max_shard_size="200KB")
    shards = lite_llama.weight_files(folder)
    assert len(shards) > 1 and not (folder / "model.safetensors").exists()
    ref, lite = _pair(folder)
    ids = np.arange(100, 300)
    np.testing.assert_allclose(lite.token_scores(PROMPT, ids), ref.token_scores(PROMPT, ids), rtol=0, atol=1e-5)


def test_bfloat16_lite_agrees_with_transformers_to_bfloat16_rounding(any_classifier_folder):
    """On a GPU the lite forward runs in the registry's dtype (bfloat16): on the CPU here, in bfloat16, the
    two forwards' scores agree to bfloat16 rounding (they round at the same steps, in a different order)."""
    ref = Scorer(load_model(str(any_classifier_folder), dtype="bfloat16", device="cpu"), batch_size=64)
    lite = Scorer(load_model(str(any_classifier_folder), dtype="bfloat16", device="cpu", lite=True), batch_size=64)
    assert lite.loaded.forward == "lite" and lite.loaded.model.dtype == torch.bfloat16
    exact = Scorer(load_model(str(any_classifier_folder)), batch_size=64)
    ids = np.arange(200, 1200)
    a, b, c = ref.token_scores(PROMPT, ids), lite.token_scores(PROMPT, ids), exact.token_scores(PROMPT, ids)
    # the lite bfloat16 forward is as close to the float32 scores as transformers' (no extra error)
    assert np.corrcoef(b, c)[0, 1] > 0.95 and np.abs(b - c).mean() < 2 * np.abs(a - c).mean()


def test_a_score_table_is_finished_by_the_forward_that_started_it(classifier_folder):
    """The two forwards agree only to rounding: their tables of one model and prompt are two tables."""
    from rmlib.tables.store import KEY_FIELDS, table_key

    ref, lite = _pair(classifier_folder)
    a, b = ref.provenance(PROMPT, "token"), lite.provenance(PROMPT, "token")
    assert [k for k in KEY_FIELDS if a.get(k) != b.get(k)] == ["forward"]
    assert table_key(a) != table_key(b)
