"""Fast start: a light command line, the tokenizer converted once, threads for the load, make bench."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from rmlib.errors import InputError

from rmlib import options
from rmlib.engine import threads

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "pandas", "pyarrow", "numpy", "scipy")

# Runs `python -m rmlib ARGS` in a fresh interpreter and reports its exit code and which heavy modules it imported.
PROBE = """
import json, runpy, sys
sys.argv = ["rmlib", *json.loads(sys.argv[1])]
try:
    runpy.run_module("rmlib", run_name="__main__")
    code = 0
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
print(json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules]}), file=sys.stderr)
""" % (HEAVY,)


def _probe(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"], proc.stdout, proc.stderr


def test_help_lists_every_subcommand_without_importing_torch():
    code, heavy, out, _ = _probe("--help")
    assert code == 0 and heavy == []
    for command in ("score", "bench", "import-paper-csv", "chapter", "book"):
        assert f"    {command}" in out
    code, heavy, out, _ = _probe("score", "--help")
    assert code == 0 and heavy == []
    assert "--threads" in out and "{token,paper}" in out and "{float32,bfloat16,float16}" in out


@pytest.mark.parametrize("args, message", [
    (("score", "--prompt", "hi", "--tokens", "5:1"), "STOP must be greater than START"),
    (("score", "--prompt", "hi", "--mode", "fast"), "invalid choice: 'fast'"),
    (("score", "--prompt", "hi", "--threads", "0"), "whole number >= 1 or 'auto'"),
    (("score", "--model", "tiny:llama-classifier"), "--prompt"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_argument_errors_answer_without_importing_torch(args, message):
    code, heavy, _, err = _probe(*args)
    assert code == 2 and heavy == []
    assert message in err


def test_chapter_and_book_forward_to_the_book_command_line():
    code, heavy, out, _ = _probe("chapter", "--help")
    assert code == 0 and "python -m rmlib.book chapter" in out and "--no-build" in out
    assert "torch" not in heavy
    code, _, out, _ = _probe("book", "--help")
    assert code == 0 and "python -m rmlib.book" in out  # help, not a run of every chapter
    from rmlib.cli import build_parser

    args = build_parser().parse_args(["chapter", "01", "-p", "prompt", "What is best?", "--no-build"])
    assert args.func.__name__ == "chapter" and args.args == ["01", "-p", "prompt", "What is best?", "--no-build"]


def test_cli_choices_are_the_librarys():
    from rmlib.engine import frames, models

    assert tuple(models.DTYPES) == options.DTYPE_NAMES
    assert models.MODEL_KINDS == options.MODEL_KINDS and models.TINY_ARCHS == options.TINY_ARCHS
    assert set(options.TEMPLATE_NAMES) == set(frames.TEMPLATES)
    assert options.TEMPLATE_NAMES == tuple(frames.TEMPLATES)


# ----------------------------------------------------------------------------- tokenizer cache
def test_embedded_tokenizer_is_converted_once_then_read_from_the_cache(tmp_path, monkeypatch):
    from rmlib.engine import embedded, models, tokenizer_files

    real_folder = embedded.embedded_tokenizer_folder("default")  # the user's cache (converted here if new)
    calls = []

    def converter(emb):  # stands in for the slow GGUF conversion, counting calls
        calls.append(emb.model_id)
        return tokenizer_files.read_tokenizer(real_folder)

    monkeypatch.setattr(embedded, "convert_gguf_tokenizer", converter)
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    folder = embedded.embedded_tokenizer_folder("default")
    assert calls == ["HuggingFaceTB/SmolLM2-135M-Instruct"]
    assert folder == tmp_path / "models" / "smollm2-135m-instruct-q4_1.tokenizer"
    assert (folder / "tokenizer.json").stat().st_size > 1_000_000
    assert not (tmp_path / "models" / "smollm2-135m-instruct-q4_1").exists()  # no weights were de-quantized

    tokenizer_files.read_tokenizer.cache_clear()  # as in a new process
    assert embedded.embedded_tokenizer_folder("default") == folder
    loaded = models.load_model("tiny:llama-classifier")
    assert calls == ["HuggingFaceTB/SmolLM2-135M-Instruct"]  # not converted again
    assert loaded.tokenizer.get_vocab() == tokenizer_files.read_tokenizer(real_folder).get_vocab()
    assert loaded.tokenizer is not embedded.default_tokenizer()  # each model owns its copy

    # Once the de-quantized model folder holds a tokenizer, that one is used.
    beside = tmp_path / "models" / "smollm2-135m-instruct-q4_1"
    tokenizer_files.read_tokenizer(real_folder).save_pretrained(beside)
    assert embedded.embedded_tokenizer_folder("default") == beside
    assert calls == ["HuggingFaceTB/SmolLM2-135M-Instruct"]


# ----------------------------------------------------------------------------- tokenizer read by `tokenizers`
TOKENIZER_TEXTS = ["Hello, world", "  spaced   out\n\ttabs", "émoji 🤖 and 中文 ü", "<start_of_turn>user\nhi<end_of_turn>\n",
                   "<|im_start|>user\nWhat is best?<|im_end|>", "<bos><eos><pad> <unk>", "x", ""]


def _same_tokenizer(ours, auto, step: int = 1) -> None:
    """``ours`` and transformers' AutoTokenizer agree on everything rmlib reads from a tokenizer."""
    from rmlib.engine.tokenizer_files import tokenizer_pipeline

    assert type(ours) is type(auto) and len(ours) == len(auto)
    assert ours.get_vocab() == auto.get_vocab()
    flags = lambda tok: {i: (t.content, t.special, t.lstrip, t.rstrip, t.normalized, t.single_word)  # noqa: E731
                         for i, t in tok.added_tokens_decoder.items()}
    assert flags(ours) == flags(auto)
    assert ours.special_tokens_map == auto.special_tokens_map and ours.all_special_ids == auto.all_special_ids
    assert (ours.padding_side, ours.truncation_side, ours.model_max_length) == \
        (auto.padding_side, auto.truncation_side, auto.model_max_length)
    assert tokenizer_pipeline(ours.backend_tokenizer) == tokenizer_pipeline(auto.backend_tokenizer)
    post = lambda tok: tok.backend_tokenizer.post_processor  # noqa: E731
    assert (post(ours) and post(ours).__getstate__()) == (post(auto) and post(auto).__getstate__())
    ids = list(range(0, len(auto), step))
    assert ours.convert_ids_to_tokens(ids) == auto.convert_ids_to_tokens(ids)
    assert [ours.decode([i]) for i in ids] == [auto.decode([i]) for i in ids]
    for text in TOKENIZER_TEXTS:
        assert ours(text).input_ids == auto(text).input_ids
        assert ours(text, add_special_tokens=False).input_ids == auto(text, add_special_tokens=False).input_ids
    assert ours(TOKENIZER_TEXTS, padding=True).input_ids == auto(TOKENIZER_TEXTS, padding=True).input_ids
    assert ours.chat_template == auto.chat_template
    if auto.chat_template:
        chat = [{"role": "user", "content": "What is the greatest thing ever?"}, {"role": "assistant", "content": "x"}]
        assert ours.apply_chat_template(chat, tokenize=False) == auto.apply_chat_template(chat, tokenize=False)
        assert ours.apply_chat_template(chat[:1], add_generation_prompt=True) == \
            auto.apply_chat_template(chat[:1], add_generation_prompt=True)


@pytest.fixture
def json_reads(monkeypatch):
    """The sizes of the JSON texts Python's json decodes while the test runs."""
    import json as json_mod

    sizes, original = [], json_mod.JSONDecoder.raw_decode

    def counted(self, s, idx=0):
        sizes.append(len(s) - idx)
        return original(self, s, idx)

    monkeypatch.setattr(json_mod.JSONDecoder, "raw_decode", counted)
    return sizes


@pytest.mark.parametrize("name, step", [("default", 1), ("gemma-3-270m", 3)])
def test_tokenizer_read_by_tokenizers_equals_autotokenizer(tmp_path, name, step, json_reads):
    """SmolLM2's tokenizer (the generic fast class) and Gemma 3's (262,144 ids, ``GemmaTokenizer``, which
    transformers rebuilds in Python), saved with a chat template as a user's reward model folder holds them:
    read by ``tokenizers`` from tokenizer.json, never parsed by Python's json, and equal to AutoTokenizer's."""
    from transformers import AutoTokenizer

    from rmlib.engine import embedded, tokenizer_files
    from rmlib.engine.frames import TEMPLATES

    source = embedded.embedded_tokenizer_folder(name)
    folder = tmp_path / "tokenizer"
    folder.mkdir()
    for path in source.iterdir():
        if path.name.startswith("tokenizer") or path.name.endswith(".jinja"):
            (folder / path.name).write_bytes(path.read_bytes())
    if name == "gemma-3-270m":
        (folder / "chat_template.jinja").write_text(TEMPLATES["gemma"])
    size = (folder / "tokenizer.json").stat().st_size
    json_reads.clear()
    ours = tokenizer_files.read_tokenizer(folder)
    assert json_reads and max(json_reads) < size / 100  # the configuration only
    assert type(ours).__name__ == ("TokenizersBackend" if name == "default" else "GemmaTokenizer")
    again = tokenizer_files.auto_tokenizer(str(folder))  # what a folder or hub model is read with
    assert max(json_reads) < size / 100
    auto = AutoTokenizer.from_pretrained(str(folder))
    assert max(json_reads) > size / 2  # transformers' own read parses the file in Python: the test sees it
    _same_tokenizer(ours, auto, step)
    _same_tokenizer(again, auto, step)


def test_a_tokenizer_rewritten_in_place_is_read_again(tmp_path):
    """A folder's tokenizer is read once per process, but files written again (a model saved anew at the same
    path) are read again."""
    import os

    from rmlib.engine import embedded, tokenizer_files

    source = embedded.embedded_tokenizer_folder("default")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    first = tokenizer_files.load_tokenizer(tmp_path)
    assert tokenizer_files.read_tokenizer(tmp_path) is tokenizer_files.read_tokenizer(tmp_path)  # read once
    assert first.chat_template is None
    (tmp_path / "chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    os.utime(tmp_path / "tokenizer_config.json")
    assert tokenizer_files.load_tokenizer(tmp_path).chat_template == "{{ messages[0]['content'] }}"


def test_a_class_that_rebuilds_another_pipeline_is_read_as_transformers_reads_it(tmp_path):
    """``GemmaTokenizer`` sets its own pre-tokenizer and decoder whatever tokenizer.json says: a file whose
    pipeline differs is read the slow way, and the tokenizer still equals AutoTokenizer's."""
    from tokenizers import decoders, pre_tokenizers
    from transformers import AutoTokenizer
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer

    from rmlib.engine import tokenizer_files

    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "a", "b", "ab", "▁", "▁a"])}
    GemmaTokenizer(vocab=vocab, merges=[("a", "b"), ("▁", "a")]).save_pretrained(tmp_path)
    edited = tokenizer_files.read_tokenizer(tmp_path).backend_tokenizer
    edited.pre_tokenizer = pre_tokenizers.Whitespace()
    edited.decoder = decoders.Metaspace()
    edited.save(str(tmp_path / "tokenizer.json"))
    tokenizer_files.read_tokenizer.cache_clear()
    from tokenizers import Tokenizer

    in_file = tokenizer_files.tokenizer_pipeline(Tokenizer.from_file(str(tmp_path / "tokenizer.json")))
    ours, auto = tokenizer_files.read_tokenizer(tmp_path), AutoTokenizer.from_pretrained(str(tmp_path))
    assert tokenizer_files.tokenizer_pipeline(auto.backend_tokenizer) != in_file  # the class's own pipeline won
    _same_tokenizer(ours, auto)
    assert ours("ab a b").input_ids == auto("ab a b").input_ids


# ----------------------------------------------------------------------------- token table
@pytest.mark.parametrize("name, step", [("default", 1), ("gemma-3-270m", 5)])
def test_token_table_is_built_once_per_tokenizer_and_read_back(tmp_path, monkeypatch, name, step):
    """Many ids take their token and decoded text from the tokenizer's whole table, the same strings as
    decoding each id; the table is written once under the tokenizer's fingerprint and later read back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rmlib.engine import embedded, token_tables, tokenizer_files

    source = embedded.embedded_tokenizer_folder(name)  # the user's cache: converted there once
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    tok = tokenizer_files.load_tokenizer(source)
    ids = list(range(0, len(tok), step))
    assert len(ids) >= token_tables.TOKEN_TABLE_MIN_IDS
    one_by_one = token_tables.token_strings(tok, ids[:7])  # few ids: decoded one by one, no table
    assert not (tmp_path / "token-tables").exists()
    tokens, decoded = token_tables.token_strings(tok, ids)
    assert tokens == tok.convert_ids_to_tokens(ids)
    assert decoded == [tok.decode([i]) for i in ids]
    assert one_by_one == token_tables.token_strings(tok, ids[:7]) == (tokens[:7], decoded[:7])  # now from the table
    path = tmp_path / "token-tables" / (token_tables.tokenizer_fingerprint(tok) + ".parquet")
    stored = pq.read_table(path)
    assert stored.num_rows == len(tok) and stored["decoded"].to_pylist()[::step] == decoded

    # A later process (a fresh tokenizer object) reads the file: a marked row shows it was read, not rebuilt.
    marked = stored.set_column(1, "decoded", pa.array(["MARK"] + stored["decoded"].to_pylist()[1:]))
    pq.write_table(marked, path)
    token_tables.TOKEN_TABLES.clear()
    assert token_tables.token_strings(tokenizer_files.load_tokenizer(source), range(len(tok)))[1][0] == "MARK"

    # A damaged file is built again.
    path.write_bytes(b"not parquet")
    token_tables.TOKEN_TABLES.clear()
    assert token_tables.token_strings(tokenizer_files.load_tokenizer(source), ids)[1] == decoded
    assert pq.read_table(path).num_rows == len(tok)


def test_token_table_follows_the_tokenizer(tmp_path, monkeypatch):
    """A tokenizer with one more token has another fingerprint and a table one row longer; a tokenizer
    built in memory (no folder) is fingerprinted by its serialization."""
    import copy

    from rmlib.engine import embedded, token_tables, tokenizer_files
    from rmlib.engine.shapes import synthetic_tokenizer

    source = embedded.embedded_tokenizer_folder("default")
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    tok = tokenizer_files.load_tokenizer(source)
    grown = copy.deepcopy(tok)
    grown.add_tokens(["<brand-new-token>"])
    assert token_tables.tokenizer_fingerprint(grown) != token_tables.tokenizer_fingerprint(tok)
    ids = range(len(grown))
    assert token_tables.token_strings(grown, ids)[1][-1] == "<brand-new-token>"
    assert len(token_tables.token_strings(tok, range(len(tok)))[1]) == len(tok)
    assert len(list((tmp_path / "token-tables").iterdir())) == 2
    built = synthetic_tokenizer(5000, {"<pad>": 0, "<eos>": 1, "<bos>": 2}, bos="<bos>", eos="<eos>", pad="<pad>",
                                chat_template=None)
    tokens, decoded = token_tables.token_strings(built, range(len(built)))
    assert decoded == [built.decode([i]) for i in range(len(built))]
    assert len(list((tmp_path / "token-tables").iterdir())) == 3


# ----------------------------------------------------------------------------- weights onto the device
@pytest.mark.parametrize("arch, lite", [("gemma2-classifier", False), ("llama-classifier", True)])
def test_weights_are_read_straight_onto_the_device_asked(tmp_path, monkeypatch, arch, lite):
    """A folder's safetensors are read onto the device the model runs on (transformers: ``device_map``;
    the lite forward: ``load_file(device=...)``), so a GPU run stages nothing through the CPU; the same
    path on a CPU gives the file's tensors, in the dtype asked for."""
    import safetensors.torch
    import torch
    from transformers.modeling_utils import PreTrainedModel

    from rmlib.engine.models import load_model

    from .models_fixture import tiny

    built = tiny(arch).loaded
    folder = tmp_path / "rm"
    built.model.save_pretrained(folder, safe_serialization=True)
    built.tokenizer.save_pretrained(folder)
    placements = []
    read_file, from_pretrained = safetensors.torch.load_file, PreTrainedModel.from_pretrained.__func__

    def spy_read(path, device="cpu"):
        placements.append(("safetensors", str(device)))
        return read_file(path, device=device)

    def spy_pretrained(cls, *args, **kwargs):
        placements.append(("transformers", kwargs.get("device_map")))
        return from_pretrained(cls, *args, **kwargs)

    monkeypatch.setattr(safetensors.torch, "load_file", spy_read)
    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(spy_pretrained))
    loaded = load_model(str(folder), device="cpu", lite=lite)
    assert loaded.forward == ("lite" if lite else "transformers")
    assert placements == [("safetensors" if lite else "transformers", "cpu")]
    saved = read_file(str(folder / "model.safetensors"))
    params = dict(loaded.model.named_parameters())
    assert sorted(saved) == sorted(params) and all(torch.equal(params[name], saved[name]) for name in saved)
    assert {p.device.type for p in params.values()} == {"cpu"} and {p.dtype for p in params.values()} == {torch.float32}


# ----------------------------------------------------------------------------- threads
@pytest.fixture
def no_thread_env(monkeypatch):
    monkeypatch.delenv("RMLIB_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    return monkeypatch


@pytest.mark.parametrize("cpus, busy, expected", [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 4.5, 1), (1, 0.0, 1), (16, 3.2, 13), (16, 0.0, 16),
])
def test_threads_are_the_cores_others_leave_free(no_thread_env, cpus, busy, expected):
    assert threads.choose_threads(None, cpus=cpus, busy=busy) == expected
    assert threads.choose_threads("auto", cpus=cpus, busy=busy) == expected


def test_an_explicit_thread_count_wins(no_thread_env):
    assert threads.choose_threads(3, cpus=2, busy=2.0) == 3
    no_thread_env.setenv("OMP_NUM_THREADS", "1")
    assert threads.choose_threads(None, cpus=16, busy=0.0) == 1
    no_thread_env.setenv("RMLIB_THREADS", "4")
    assert threads.choose_threads(None, cpus=16, busy=0.0) == 4  # rmlib's own variable before OpenMP's
    assert threads.choose_threads("2", cpus=16, busy=0.0) == 2
    for bad in ("0", "-1", "many"):
        with pytest.raises(ValueError, match="number of threads"):
            threads.choose_threads(bad, cpus=2, busy=0.0)


def test_a_thread_count_far_beyond_the_cpus_is_refused_from_any_source(no_thread_env):
    most = threads.most_threads()
    assert most == max(64, 4 * threads.available_cpus())
    assert threads.choose_threads(most, cpus=2, busy=0.0) == most
    with pytest.raises(InputError, match=r"--threads=100000: far more threads than the \d+ CPUs"):
        threads.choose_threads(100000)
    no_thread_env.setenv("RMLIB_THREADS", str(most + 1))
    with pytest.raises(InputError, match=rf"RMLIB_THREADS={most + 1}: far more threads"):
        threads.choose_threads(None)


def test_busy_cores_leave_out_this_process(monkeypatch):
    since = threads.CpuSample(wall=100.0, busy_s=50.0, own_s=3.0)
    # 2 s later: the machine spent 3.0 busy CPU seconds, 1.8 of them this process's (its imports)
    monkeypatch.setattr(threads, "cpu_sample", lambda: threads.CpuSample(wall=102.0, busy_s=53.0, own_s=4.8))
    assert threads.busy_cores(since) == pytest.approx(0.6)
    monkeypatch.setattr(threads, "cpu_sample", lambda: threads.CpuSample(wall=102.0, busy_s=None, own_s=4.8))
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.5, 1.0, 0.5))
    assert threads.busy_cores(threads.CpuSample(100.0, None, 3.0)) == 1.5  # off Linux: the load average


def test_busy_cores_see_a_spinning_process():
    if threads.cpu_sample().busy_s is None:  # /proc/stat unreadable here
        pytest.skip("needs /proc/stat")
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = threads.busy_cores(window=0.5)
    finally:
        spin.kill()
        spin.wait()
    assert 0.5 <= busy <= threads.available_cpus() + 0.1


def test_available_cpus_follow_the_affinity_mask():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity masks here")
    assert 1 <= threads.available_cpus() <= len(os.sched_getaffinity(0))


# ----------------------------------------------------------------------------- make bench
def ratio_of_rounded(ratio, num, den, half_step):
    """Whether `ratio` (rounded to 0.01) can be num/den when num and den were each rounded to within
    `half_step`: the exact interval, not a first-order one, which is too narrow when den is a few steps."""
    lo = (num - half_step) / (den + half_step)
    hi = (num + half_step) / (den - half_step) if den > half_step else float("inf")
    return lo - 0.0051 <= ratio <= hi + 0.0051


def test_ratio_of_rounded_takes_the_exact_interval():
    # 0.0293 s / 0.0055 s = 5.33, printed as 0.029 and 0.006 (ratio 4.83): the first-order bound missed it
    assert ratio_of_rounded(round(0.0293 / 0.0055, 2), 0.029, 0.006, half_step=0.0005)
    assert not ratio_of_rounded(5.6, 0.029, 0.006, half_step=0.0005)  # beyond 0.0295 / 0.0055 = 5.36
    assert not ratio_of_rounded(4.3, 0.029, 0.006, half_step=0.0005)  # below 0.0285 / 0.0065 = 4.38


def test_bench_quick_times_whole_processes_on_tiny_models():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "rmlib", "bench", "--quick", "--threads", "auto"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    start = report["startup"]
    assert 0 < start["cold_first_score_s"] <= start["cold_wall_s"]
    assert 0 < start["warm_first_score_s_median"] <= start["warm_wall_s_median"]
    whole = report["whole_process"]
    assert whole["n_tokens"] == 64
    assert whole["ratio"] == round(whole["paper_mode_wall_s"] / whole["token_mode_wall_s"], 2)
    assert len(whole["token_mode_wall_s_all"]) == 3
    assert whole["token_mode_wall_s"] == sorted(whole["token_mode_wall_s_all"])[1]  # the median of three
    assert whole["token_mode_forward"] == "rmlib lite_llama"  # the tiny Llama, saved as a folder
    scaling = report["threads_scaling"]
    assert scaling["conditions"][0]["spin_loops"] == 0
    for cond in scaling["conditions"]:
        assert 1 <= cond["chosen_threads"] <= scaling["cpus"]
        for row in cond["by_threads"].values():
            assert row["engine_tokens_per_s"] > 0 and row["paper_tokens_per_s"] > 0
    chapter = report["chapter_scoring"]["tiny:llama-classifier"]
    assert chapter["batch"]["before_transformers_batch_64"] == 64
    assert chapter["batch"]["chapters_default"] == max(64, 256 // chapter["candidate_tokens"]) > 64  # grown
    assert chapter["max_abs_score_diff"] <= 1e-5  # the same scores either way
    # a ratio rounded to 0.01, of rates rounded to 0.1 token/s: equal to the ratio of the printed rates
    # within what the two roundings allow
    fast, slow = chapter["tokens_per_s"]["chapters_default"], chapter["tokens_per_s"]["before_transformers_batch_64"]
    assert ratio_of_rounded(chapter["speedup"], fast, slow, half_step=0.05)
    texts = report["text_scoring"]
    for name in ("big2_nouns", "eloeverything_items"):
        part = texts[name]
        assert part["n_texts"] == (263 if name == "big2_nouns" else 40)
        assert set(part["seconds"]) == {"batched"} | {f"placed_{p}" for p in (16, 32, 64, 128)}
        assert all(v <= 1e-5 for v in part["max_abs_score_diff"].values())  # the same scores, to rounding
        for key, ratio in part["ratio_to_batched"].items():
            base = part["seconds"]["batched"]
            # a ratio rounded to 0.01 of seconds each rounded to 0.001: equal within what the roundings allow
            assert ratio_of_rounded(ratio, part["seconds"][key], base, half_step=0.0005)
    workers = report["book_workers"]
    share = max(1, workers["cpus"] // workers["jobs"])
    layouts = {"one_process_all_cores", f"2_processes_{share}_threads", f"2_processes_{workers['cpus']}_threads_oversubscribed"}
    assert set(workers["tokens_per_s"]) == set(workers["ratio_to_one_process"]) == layouts
    assert workers["ratio_to_one_process"]["one_process_all_cores"] == 1.0
    for name, rate in workers["tokens_per_s"].items():
        one = workers["tokens_per_s"]["one_process_all_cores"]
        assert rate > 0 and ratio_of_rounded(workers["ratio_to_one_process"][name], rate, one, half_step=0.05)


def test_process_exit_after_a_model_keeps_output_files_and_exit_codes(tmp_path):
    """`python -m rmlib` ends a command that loaded torch with os._exit (no interpreter teardown): its
    printed lines still arrive through a pipe, the file it wrote reads back whole, and exit codes hold."""
    import pandas as pd

    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMLIB_THREADS": "1"}
    out = tmp_path / "s.parquet"
    proc = subprocess.run([sys.executable, "-m", "rmlib", "score", "--model", "tiny:llama-classifier", "--prompt",
                           "hi there", "--tokens", "0:8", "--no-progress", "--cache-dir", str(tmp_path / "c"),
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("scored 8 tokens") and lines[-1] == f"wrote {out}" and len(lines) == 7
    assert sorted(pd.read_parquet(out)["token_id"]) == list(range(8))
    bad = subprocess.run([sys.executable, "-m", "rmlib", "score", "--model", "tiny:llama-classifier", "--prompt",
                          "hi there", "--tokens", "0:99999999", "--no-progress", "--cache-dir", str(tmp_path / "c")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and "outside the vocabulary" in bad.stderr  # found after the model loaded
