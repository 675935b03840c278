"""Whole-process benchmarks: what a user meets when typing ``rmlib score``, timed from outside.

* :func:`startup`: time from starting ``python -m rmlib score`` to its first
  printed score, cold (a fresh rmlib cache: every one-time conversion included)
  and warm (the same cache again; median of ``runs``). Each run gets a fresh
  score cache, so it really scores.
* :func:`startup_parts`: where a warm start goes, for the default model and for a local reward model
  with a real Gemma tokenizer (:func:`gemma_tokenizer_folder`): the whole ``rmlib score`` process
  (median of ``runs``) beside its parts timed in a fresh process (imports, the model stack's imports,
  weights, tokenizer, scoring, token table, writing: :data:`PARTS_PROGRAM`) and their sum, whether the
  tokenizer was read and transformers imported (a warm start does neither); beside them the whole
  vocabulary's token table built and read back from its cache.
* :func:`whole_process`: wall time of the whole ``rmlib score`` process for N
  vocabulary tokens in ``--mode token`` (the engine; for a Llama checkpoint
  rmlib's plain-torch forward, ``rmlib.engine.lite_llama``) and ``--mode
  paper --paper-forward full`` (the published method as the paper ran it,
  transformers' forward), run the same way
  (CLI defaults, fresh score cache) on the model saved as a local folder.
* :func:`thread_scaling`: in-process tokens/s of both paths at 1 thread and at
  every core, on the machine as it is and with the other cores kept busy by
  spin loops, beside the count :func:`rmlib.engine.threads.choose_threads` picks
  in each condition, so the default can be checked to be the best.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from ..prompts import PAPER_PROMPTS

BENCH_PROMPT = PAPER_PROMPTS["greatest"]
_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update({k: str(v) for k, v in extra.items() if v is not None})
    return env


def run_score(model: str, tokens: str, *, mode: str = "token", env: dict | None = None, extra=(),
              timeout: float = 3600) -> dict:
    """One ``python -m rmlib score`` process: seconds to its first score line, and to its exit."""
    with tempfile.TemporaryDirectory(prefix="rmlib-bench-scores-") as scores:
        cmd = [sys.executable, "-m", "rmlib", "score", "--model", model, "--prompt", BENCH_PROMPT,
               "--tokens", tokens, "--mode", mode, "--no-progress", "--cache-dir", scores, *extra]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or _env())
        first = None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if first is None and line.startswith("scored "):
                first = time.perf_counter() - t0
        err = proc.stderr.read()
        rc = proc.wait(timeout=timeout)
        wall = time.perf_counter() - t0
    if rc != 0 or first is None:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {rc}):\n{''.join(lines)}{err[-2000:]}")
    return {"first_score_s": round(first, 3), "wall_s": round(wall, 3)}


def startup(model: str = "default", runs: int = 3, tokens: str = "0:8") -> dict:
    """Cold (fresh rmlib cache) and warm (cached) start-up of ``rmlib score`` to the first score."""
    with tempfile.TemporaryDirectory(prefix="rmlib-bench-cache-") as cache:
        env = _env(RMLIB_CACHE_DIR=cache)
        cold = run_score(model, tokens, env=env)
        warm = [run_score(model, tokens, env=env) for _ in range(runs)]
    return {"model": model, "tokens": tokens, "runs": runs,
            "cold_first_score_s": cold["first_score_s"], "cold_wall_s": cold["wall_s"],
            "warm_first_score_s_median": round(statistics.median(w["first_score_s"] for w in warm), 3),
            "warm_first_score_s_all": [w["first_score_s"] for w in warm],
            "warm_wall_s_median": round(statistics.median(w["wall_s"] for w in warm), 3)}


@contextlib.contextmanager
def gemma_tokenizer_folder(hidden_size: int = 64, layers: int = 2):
    """A small Gemma-2 sequence classifier (seeded random weights, ``model.safetensors``) saved as an ordinary
    Hugging Face folder beside a real Gemma tokenizer: the embedded Gemma 3 270M's (262,144 ids, converted
    into the user cache once), with the Gemma-2 chat template. What a user's reward model folder looks like
    to ``rmlib score``, at a size where its start-up is what shows."""
    import torch
    from transformers import AutoModelForSequenceClassification, Gemma2Config

    from ..engine.frames import TEMPLATES
    from ..engine.embedded import embedded_tokenizer_folder
    from ..engine.tokenizer_files import load_tokenizer

    tok = load_tokenizer(embedded_tokenizer_folder("gemma-3-270m"))
    tok.chat_template = TEMPLATES["gemma"]
    config = Gemma2Config(vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                          num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=hidden_size // 4, sliding_window=64, max_position_embeddings=1024, num_labels=1,
                          pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                          architectures=["Gemma2ForSequenceClassification"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_config(config)
    with tempfile.TemporaryDirectory(prefix="rmlib-bench-gemma-rm-") as folder:
        model.save_pretrained(folder, safe_serialization=True)
        tok.save_pretrained(folder)
        del model
        yield folder


#: Run in a fresh process by :func:`startup_parts`: ``rmlib score``'s steps one by one, each timed, as the command
#: runs them: "imports" what it imports (transformers only where it loads the model: "imports_model_stack"),
#: "weights" the model loaded (with transformers, its tokenizer read too; with the lite forward the tokenizer
#: is read on first use), "tokenizer" what scoring needs from it (the chat frame, the vocabulary size: from the
#: cached tokenizer facts of a tokenizer seen before, :mod:`rmlib.engine.tokenizer_facts`, else read now),
#: "token_table" the scored ids' strings. It reports whether the tokenizer was read and transformers imported.
PARTS_PROGRAM = """
import json, pathlib, sys, time
t = time.perf_counter
spec, start, stop, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4])
prompt, device, dtype = sys.argv[5], sys.argv[6] or None, sys.argv[7] or None
parts, t0 = {}, t()
from rmlib.engine.threads import apply_threads, cpu_sample
started = cpu_sample()  # as `rmlib score` does: the machine's load over the imports picks the threads
from rmlib.engine import embedded, models, token_tables
from rmlib.engine.lite_llama import lite_config
from rmlib.engine.scorers import Scorer
from rmlib.stats.vocab import top_bottom
from rmlib.tables.store import atomic_write_table
apply_threads(None, since=started)
parts["imports"] = t() - t0
what = models.check_model_spec(spec)
folder = {"embedded": embedded.embedded_model_folder, "folder": pathlib.Path}.get(what, lambda s: None)(spec)
lite = folder is not None and lite_config(folder) is not None
t0 = t()
if not lite:
    import transformers.modeling_utils
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
parts["imports_model_stack"] = t() - t0
import torch
def settled():  # a GPU's copies and kernels finished before the clock is read
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return t()
t0 = t(); loaded = models.load_model(spec, lite=True, device=device, dtype=dtype); parts["weights"] = settled() - t0
t0 = t(); scorer = Scorer(loaded); ids = scorer.token_ids(range(start, stop)); scorer.frame(prompt)
parts["tokenizer"] = t() - t0
t0 = t(); scores = scorer.token_scores(prompt, ids); parts["scoring"] = settled() - t0
t0 = t(); scorer.token_texts(ids); parts["token_table"] = t() - t0
t0 = t()
prov = scorer.provenance(prompt, "token")
table = scorer.token_table(ids, scores, prov)
atomic_write_table(table, out / "scores.parquet", prov)
top_bottom(table, 5)
parts["writing"] = t() - t0
read, imported = loaded.tokenizer_read, "transformers" in sys.modules
every = range(len(loaded.tokenizer))
import os
os.environ["RMLIB_CACHE_DIR"] = str(out / "cache")  # an empty cache: the whole vocabulary's table is built
token_tables.TOKEN_TABLES.clear()
t0 = t(); token_tables.token_strings(loaded.tokenizer, every); built = t() - t0
token_tables.TOKEN_TABLES.clear()
t0 = t(); token_tables.token_strings(loaded.tokenizer, every); read_back = t() - t0
print(json.dumps({"parts": parts, "forward": loaded.forward, "vocab_size": len(loaded.tokenizer),
                  "device": str(next(loaded.model.parameters()).device), "dtype": loaded.dtype,
                  "tokenizer_read": read, "transformers_imported": imported,
                  "whole_vocab_token_table_build_s": built, "whole_vocab_token_table_read_s": read_back}))
"""


def time_parts(model: str, tokens: str = "100:164", device: str | None = None, dtype: str | None = None) -> dict:
    """``rmlib score``'s steps timed one by one in a fresh process (see :data:`PARTS_PROGRAM`), on ``device``
    in ``dtype`` (default: as ``rmlib score`` chooses)."""
    import json

    start, stop = (int(x) for x in tokens.split(":"))
    with tempfile.TemporaryDirectory(prefix="rmlib-bench-parts-") as out:
        proc = subprocess.run([sys.executable, "-c", PARTS_PROGRAM, model, str(start), str(stop), out, BENCH_PROMPT,
                               device or "", dtype or ""], capture_output=True, text=True, env=_env(), timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"timing the parts of {model} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def model_parts(spec: str, described: str, tokens: str = "100:164", runs: int = 3, device: str | None = None,
                dtype: str | None = None) -> dict:
    """A warm ``rmlib score`` of ``tokens`` by ``spec`` as a whole process (median of ``runs``, after one run that
    fills the caches) beside its parts (:func:`time_parts`) and their sum, on ``device`` in ``dtype`` (default: as
    ``rmlib score`` chooses). ``described``: what the model is, for the report."""
    extra = tuple(x for flag, value in (("--device", device), ("--dtype", dtype)) if value for x in (flag, value))
    run_score(spec, tokens, extra=extra)  # conversions, the token table: cached from here on
    whole = [run_score(spec, tokens, extra=extra) for _ in range(runs)]
    timed = time_parts(spec, tokens, device, dtype)
    parts = {k: round(v, 3) for k, v in timed["parts"].items()}
    return {
        "model": described, "vocab_size": timed["vocab_size"], "forward": timed["forward"],
        "device": timed["device"], "dtype": timed["dtype"], "tokens": tokens, "runs": runs,
        "tokenizer_read": timed["tokenizer_read"], "transformers_imported": timed["transformers_imported"],
        "whole_process_wall_s_median": round(statistics.median(w["wall_s"] for w in whole), 3),
        "whole_process_wall_s_all": [w["wall_s"] for w in whole],
        "first_score_s_median": round(statistics.median(w["first_score_s"] for w in whole), 3),
        "parts_s": parts, "parts_sum_s": round(sum(parts.values()), 3),
        "whole_vocab_token_table_build_s": round(timed["whole_vocab_token_table_build_s"], 3),
        "whole_vocab_token_table_read_s": round(timed["whole_vocab_token_table_read_s"], 3),
    }


def startup_parts(runs: int = 3, tokens: str = "100:164") -> dict:
    """:func:`model_parts` for the default model and for a local reward model with Gemma's tokenizer
    (:func:`gemma_tokenizer_folder`), on this machine's CPU."""
    with gemma_tokenizer_folder() as gemma:
        return {
            "default": model_parts("default", "default (SmolLM2-135M-Instruct, lite forward)", tokens, runs),
            "gemma_tokenizer_rm": model_parts(
                gemma, "2-layer Gemma-2 classifier (hidden 64, random weights) in a local folder, Gemma 3's "
                "tokenizer", tokens, runs)}


@contextlib.contextmanager
def saved_folder(spec: str):
    """A config-built model (``tiny:``, ``random:``) saved to a temporary local folder, the way a user's
    checkpoint arrives (``save_pretrained``: config, safetensors, tokenizer)."""
    from ..engine.models import load_model

    loaded = load_model(spec)
    with tempfile.TemporaryDirectory(prefix="rmlib-bench-model-") as folder:
        loaded.model.save_pretrained(folder, safe_serialization=True)
        loaded.tokenizer.save_pretrained(folder)
        del loaded
        yield folder


def whole_process(model: str = "random:smollm2-135m-classifier", n_tokens: int = 2048, start: int = 100,
                  token_runs: int = 3) -> dict:
    """Whole ``rmlib score`` processes for ``n_tokens`` vocabulary tokens of ``model`` saved as a local
    folder: the engine (token mode; median of ``token_runs`` processes, whose start-up makes a single
    run noisy) vs the paper's method (paper mode with full forwards, transformers' forward; one process, the
    slow one)."""
    from ..engine.lite_llama import lite_config

    tokens = f"{start}:{start + n_tokens}"
    with saved_folder(model) as folder:
        engine = [run_score(folder, tokens, mode="token") for _ in range(token_runs)]
        paper = run_score(folder, tokens, mode="paper", extra=("--paper-forward", "full"))
        forward = "rmlib lite_llama" if lite_config(folder) is not None else "transformers"
    token_wall = statistics.median(e["wall_s"] for e in engine)
    return {"model": model, "loaded_from": "a local folder written by save_pretrained", "n_tokens": n_tokens,
            "tokens": tokens, "batch_size": "CLI default (on a CPU 512 with the lite forward; with transformers' 64, grown to 256 positions for short candidates)", "token_mode_forward": forward,
            "token_mode_wall_s": round(token_wall, 3), "token_mode_wall_s_all": [e["wall_s"] for e in engine],
            "paper_mode_wall_s": paper["wall_s"],
            "token_mode_first_score_s": statistics.median(e["first_score_s"] for e in engine),
            "ratio": round(paper["wall_s"] / token_wall, 2)}


@contextlib.contextmanager
def busy_cores(n: int):
    """``n`` spin loops (other processes), for measuring under contention."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def thread_scaling(model: str = "random:smollm2-135m-classifier", n_engine: int = 512, n_paper: int = 64,
                   repeats: int = 3) -> dict:
    """Tokens/s of the engine and the paper path at 1 and all threads, idle-as-is and with the other cores busy."""
    import numpy as np
    import torch

    from ..engine.models import load_model
    from ..engine.scorers import Scorer
    from ..engine.threads import available_cpus, busy_cores as measure_busy, choose_threads

    cpus = available_cpus()
    loaded = load_model(model)
    engine, paper = Scorer(loaded, batch_size=256), Scorer(loaded, batch_size=64, paper_forward="full")
    ids = np.linspace(100, engine.vocab_size - 1, n_engine).astype(np.int64)
    engine.token_scores(BENCH_PROMPT, ids[:8])
    paper.token_scores(BENCH_PROMPT, ids[:8], mode="paper")
    before = torch.get_num_threads()
    out = {"model": model, "cpus": cpus, "n_engine": n_engine, "n_paper": n_paper, "repeats": repeats,
           "conditions": []}
    try:
        for n_busy in sorted({0, cpus - 1} if cpus > 1 else {0}):
            with busy_cores(n_busy):
                busy = measure_busy(window=0.5)
                cond = {"spin_loops": n_busy, "busy_cores_measured": round(busy, 2),
                        "load_avg_1min": round(os.getloadavg()[0], 2),
                        "chosen_threads": choose_threads("auto", busy=busy), "by_threads": {}}
                for threads in sorted({1, cpus}):
                    torch.set_num_threads(threads)
                    te, tp = [], []
                    for _ in range(repeats):  # interleaved, so drift hits both paths alike
                        t = time.perf_counter()
                        engine.token_scores(BENCH_PROMPT, ids)
                        te.append(time.perf_counter() - t)
                        t = time.perf_counter()
                        paper.token_scores(BENCH_PROMPT, ids[:n_paper], mode="paper")
                        tp.append(time.perf_counter() - t)
                    e_rate, p_rate = n_engine / statistics.median(te), n_paper / statistics.median(tp)
                    cond["by_threads"][threads] = {"engine_tokens_per_s": round(e_rate, 1),
                                                   "paper_tokens_per_s": round(p_rate, 1),
                                                   "ratio": round(e_rate / p_rate, 2)}
                best = max(cond["by_threads"], key=lambda k: cond["by_threads"][k]["engine_tokens_per_s"])
                cond["best_threads_engine"] = best
                out["conditions"].append(cond)
    finally:
        torch.set_num_threads(before)
    return out
