"""Speed benchmarks (``make bench``): JSON on stdout, ratios measured side by side in one run.

* ``engine_vs_paper``: a SmolLM2-135M-shaped classifier RM (random weights, the
  model's own ChatML template) scores the same N vocabulary tokens with the
  engine (cached prefix, token + suffix only) and with ``mode="paper"`` as the
  paper ran it (decode, template, tokenize, pad, full forward: ``paper_forward="full"``).
  Reports tokens/s of each, their ratio, and the ratio's ceiling
  (prefix+token+suffix)/(token+suffix) from the actual lengths; beside them
  mode "paper" as rmlib runs it by default (the texts' common prefix run once).
* ``logprob_full_vocab``: wall time of the log-prob scorer over the full
  vocabulary of the default model (load and scoring reported apart).
* ``gcg``: GCG steps per second on the default model (``rmlib.bench.gcg_speed``).
* ``search``: coordinate sweeps on the default trained RM (``trained:default``), L = 2 and 3:
  candidates per second and time to a single-swap local optimum over a stated vocabulary,
  beside GCG's steps per second (``rmlib.bench.search_speed``; ``--skip-search`` leaves it out).
* ``search_goal``: issue 14's goal on the tiny random classifier RM, full ASCII vocabulary,
  L = 2 and 3, both directions: time, single-swap optimal, gap to a 20-restart run; as built
  (``tiny``, scores about ±0.2) and with weights drawn at 1.0 (``tiny_rugged``, about ±12)
  (``rmlib.bench.search_speed``; ``--skip-search`` leaves it out).
* ``search_anytime``: search quality at equal budget on five seeded rugged tiny RMs, L = 2 and 3,
  both directions: the share of cells within 1 % of a 20-restart reference with the earlier
  three-start rule and with the anytime restarts (``rmlib.bench.search_speed``; ``--skip-search``
  leaves it out).
* ``--only NAME[,NAME]``: run only these sections (names as above, plus ``engine_vs_paper``,
  ``logprob_full_vocab``, ``threads_scaling``, ``train_rm``, ``chapter_scoring``, ``book_workers``).
* ``startup``, ``whole_process``, ``threads``: whole ``rmlib score`` processes
  timed from outside (cold and warm start-up to the first score; 2,048 tokens,
  engine vs the paper's method) and the thread count under contention
  (``rmlib.bench.startup``).
* ``train_rm``: reward-model training throughput (items/s through the frozen
  model, BT pairs/s) and the trained RM's vocabulary scoring (tokens/s), for
  both default bases (``rmlib.bench.train_speed``; ``--skip-train`` leaves it out).
* ``chapter_scoring``: the chapters' vocabulary scoring with each trained RM, as they load it
  now (lite forward, grown CPU batch) against transformers at batch 64, side by side
  (``rmlib.bench.chapter_speed``).
* ``book_workers``: what ``make book``'s parallel chapters rest on: the trained
  SmolLM2 RM's vocabulary scoring in one process with every core against two
  processes with half the cores each, and two oversubscribed ones
  (``rmlib.bench.workers``; tokens/s and ratios, alternating rounds).
* ``--quick``: the start-up, thread and worker sections on the tiny models, in seconds (for the tests).
* ``--gpu-gemma2-2b``: the full 256,000-token vocabulary on a Gemma-2-2B-shaped
  RM in bf16 on one GPU, with the achieved fraction of the FLOP bound.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

import numpy as np
import torch

from .. import __version__
from ..prompts import PAPER_PROMPTS

H100_BF16_DENSE_FLOPS = 989e12  # NVIDIA H100 SXM, bf16 dense tensor-core peak
BENCH_PROMPT = PAPER_PROMPTS["greatest"]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def engine_vs_paper(n_tokens: int = 384, repeats: int = 3, engine_batch: int = 256, paper_batch: int = 64) -> dict:
    """Each path at its own sensible batch size: the engine's candidates are 3 tokens long,
    the paper path's whole sequences ~45, so 256 x 3 and 64 x 45 tokens per forward. Beside them,
    mode "paper" as rmlib runs it by default (``paper_forward="shared-prefix"``, CLI default batch):
    the same published inputs with their common prefix run once."""
    from ..engine.models import load_model
    from ..engine.scorers import Scorer

    loaded = load_model("random:smollm2-135m-classifier")
    engine_scorer = Scorer(loaded, batch_size=engine_batch)
    paper_scorer = Scorer(loaded, batch_size=paper_batch, paper_forward="full")  # the published computation
    shared_scorer = Scorer(loaded)  # mode "paper" as rmlib runs it by default
    ids = np.linspace(100, engine_scorer.vocab_size - 1, n_tokens).astype(np.int64)  # spread over the vocabulary
    frame = engine_scorer.frame(BENCH_PROMPT)
    engine_scorer.token_scores(BENCH_PROMPT, ids[:8])  # warm up both paths
    paper_scorer.token_scores(BENCH_PROMPT, ids[:8], mode="paper")
    shared_scorer.token_scores(BENCH_PROMPT, ids[:8], mode="paper")
    engine_t, paper_t, shared_t = [], [], []
    for _ in range(repeats):  # interleaved, so drift in machine speed hits all alike
        engine, t = _timed(lambda: engine_scorer.token_scores(BENCH_PROMPT, ids))
        engine_t.append(t)
        paper, t = _timed(lambda: paper_scorer.token_scores(BENCH_PROMPT, ids, mode="paper"))
        paper_t.append(t)
        shared, t = _timed(lambda: shared_scorer.token_scores(BENCH_PROMPT, ids, mode="paper"))
        shared_t.append(t)
    p, s = len(frame.prefix_ids), len(frame.suffix_ids)
    te, tp, ts = float(np.median(engine_t)), float(np.median(paper_t)), float(np.median(shared_t))
    return {
        "model": "random:smollm2-135m-classifier (SmolLM2-135M shape, random weights, fp32)",
        "template": "ChatML (the SmolLM2 tokenizer's own)", "n_tokens": int(n_tokens), "repeats": repeats,
        "engine_batch_size": engine_batch, "paper_batch_size": paper_batch,
        "prefix_len": p, "suffix_len": s, "engine_s_median": round(te, 3), "paper_s_median": round(tp, 3),
        "engine_tokens_per_s": round(n_tokens / te, 1), "paper_tokens_per_s": round(n_tokens / tp, 1),
        "ratio": round(tp / te, 2), "ratio_ceiling": round((p + 1 + s) / (1 + s), 2),
        "max_abs_diff_engine_vs_paper": float(np.abs(engine - paper).max()),
        "paper_shared_prefix_s_median": round(ts, 3), "paper_shared_prefix_tokens_per_s": round(n_tokens / ts, 1),
        "paper_shared_prefix_vs_full_ratio": round(tp / ts, 2),
        "max_abs_diff_paper_shared_prefix_vs_full": float(np.abs(shared - paper).max()),
    }


def logprob_full_vocab() -> dict:
    from ..engine.models import default_model_folder, load_model
    from ..engine.scorers import Scorer

    default_model_folder()  # one-time GGUF conversion is not part of the timing
    loaded, load_s = _timed(lambda: load_model("default"))
    scorer = Scorer(loaded)
    table, score_s = _timed(lambda: scorer.score_tokens(BENCH_PROMPT))
    return {"model": loaded.model_id, "revision": loaded.revision, "vocab_size": len(table),
            "load_s": round(load_s, 2), "score_full_vocab_s": round(score_s, 3),
            "prob_mass": float(np.exp(table["score"]).sum())}


def gemma2_2b_gpu(batch_size: int = 2048, prefix_len: int = 24, suffix_len: int = 2) -> dict:
    """Full 256,000-token vocabulary on a Gemma-2-2B-shaped RM (random weights, bf16, one GPU)."""
    from transformers import AutoModelForSequenceClassification, Gemma2Config

    from ..engine.models import LoadedModel
    from ..engine.kernel import PrefixKernel

    if not torch.cuda.is_available():
        raise SystemExit("--gpu-gemma2-2b needs a CUDA GPU")
    cfg = Gemma2Config(vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                       num_attention_heads=8, num_key_value_heads=4, head_dim=256, sliding_window=4096,
                       num_labels=1, pad_token_id=0)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(cfg, dtype=torch.bfloat16).cuda().eval()
    loaded = LoadedModel("random:gemma2-2b", "random:gemma2-2b", None, "classifier", model, None, "bfloat16")
    gen = torch.Generator().manual_seed(0)
    prefix = torch.randint(1000, 200000, (prefix_len,), generator=gen).tolist()
    suffix = torch.randint(1000, 200000, (suffix_len,), generator=gen).tolist()
    kernel = PrefixKernel(loaded, prefix)
    vocab = torch.arange(cfg.vocab_size, device="cuda")
    suffix_t = torch.tensor(suffix, device="cuda")

    def run_all(bs):
        out = torch.empty(cfg.vocab_size, device="cuda")
        for start in range(0, cfg.vocab_size, bs):
            tok = vocab[start:start + bs, None]
            ids = torch.cat([tok, suffix_t.expand(tok.shape[0], -1)], dim=1)
            last = torch.full((tok.shape[0],), ids.shape[1] - 1, device="cuda")
            out[start:start + bs] = kernel.classifier(ids, last)
        return out

    with torch.no_grad():
        while True:
            try:
                run_all(batch_size) if batch_size else None
                break
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                batch_size //= 2
        torch.cuda.synchronize()
        _, wall = _timed(lambda: (run_all(batch_size), torch.cuda.synchronize()))
    n_params = sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" not in n)
    new = 1 + suffix_len
    ctx = prefix_len + new
    flops = cfg.vocab_size * (2 * n_params * new
                              + cfg.num_hidden_layers * 4 * cfg.num_attention_heads * cfg.head_dim * new * ctx)
    return {"model": "Gemma-2-2B-shaped classifier RM, random weights, bf16", "gpu": torch.cuda.get_device_name(),
            "vocab": cfg.vocab_size, "prefix_len": prefix_len, "suffix_len": suffix_len, "batch_size": batch_size,
            "wall_s": round(wall, 2), "tokens_per_s": round(cfg.vocab_size / wall),
            "flop_bound_s": round(flops / H100_BF16_DENSE_FLOPS, 3),
            "fraction_of_flop_bound": round(flops / H100_BF16_DENSE_FLOPS / wall, 3)}


def _sections(args) -> dict:
    """The full run's sections, in order: name -> a function returning its JSON part."""
    from . import startup

    def gcg():
        try:
            from .gcg_speed import bench_gcg
        except ImportError:
            return "not available"
        return bench_gcg()

    def train_rm():
        from .train_speed import bench_train

        return {base: bench_train(base) for base in ("default", "gemma-3-270m")}

    def search():
        from .search_speed import bench_search

        return bench_search()

    def search_goal():
        from .search_speed import bench_search_goal

        return {"tiny": bench_search_goal(), "tiny_rugged": bench_search_goal(init_range=1.0)}

    def search_anytime():
        from .search_speed import bench_search_anytime

        return bench_search_anytime()

    def chapter_scoring():
        from .chapter_speed import chapter_scoring as run

        return run()

    def book_workers():
        from .workers import worker_scaling

        return worker_scaling()

    return {"startup": lambda: startup.startup("default"),
            "whole_process": lambda: startup.whole_process(n_tokens=args.whole_tokens),
            "engine_vs_paper": lambda: engine_vs_paper(args.n_tokens),
            "threads_scaling": startup.thread_scaling, "logprob_full_vocab": logprob_full_vocab,
            "train_rm": train_rm, "chapter_scoring": chapter_scoring, "book_workers": book_workers, "gcg": gcg,
            "search": search, "search_goal": search_goal, "search_anytime": search_anytime}


SECTIONS = ("startup", "whole_process", "engine_vs_paper", "threads_scaling", "logprob_full_vocab", "train_rm",
            "chapter_scoring", "book_workers", "gcg", "search", "search_goal", "search_anytime")


def _only(value) -> set | None:
    """``--only a,b`` as a set of section names; a clear error for an unknown one."""
    if not value:
        return None
    names = {v.strip() for v in value.split(",") if v.strip()}
    bad = sorted(names - set(SECTIONS))
    if bad:
        raise ValueError(f"--only: unknown section(s) {bad}; choose from {', '.join(SECTIONS)}")
    return names


def main(args) -> int:
    from ..engine.threads import apply_threads
    from . import startup

    only = _only(getattr(args, "only", None))  # a bad name fails before any work
    threads = apply_threads(getattr(args, "threads", None))
    report = {"rmlib_version": __version__, "torch": torch.__version__, "python": platform.python_version(),
              "threads": threads, "load_avg_1min_at_start": round(os.getloadavg()[0], 2)}
    quick = getattr(args, "quick", False)
    if getattr(args, "gpu_gemma2_2b", False):
        report["gemma2_2b_full_vocab_gpu"] = gemma2_2b_gpu()
    elif quick:  # seconds, on tiny models: for the tests
        report["startup"] = startup.startup("tiny:llama-classifier", runs=1)
        report["whole_process"] = startup.whole_process("tiny:llama-classifier", n_tokens=64)
        report["threads_scaling"] = startup.thread_scaling("tiny:llama-classifier", n_engine=64, n_paper=16, repeats=1)
        from .workers import worker_scaling

        report["book_workers"] = worker_scaling("tiny:llama-classifier", n_tokens=64, rounds=1, lite=False)
        from .chapter_speed import chapter_scoring

        report["chapter_scoring"] = chapter_scoring(("tiny:llama-classifier",), n_tokens=300, rounds=1)
    else:
        skip = {"gcg": args.skip_gcg, "search": getattr(args, "skip_search", False),
                "search_goal": getattr(args, "skip_search", False), "search_anytime": getattr(args, "skip_search", False),
                "train_rm": getattr(args, "skip_train", False)}
        for name, fn in _sections(args).items():
            if (only is None and not skip.get(name)) or (only is not None and name in only):
                report[name] = fn()
    if "whole_process" in report and "engine_vs_paper" in report:
        report["whole_process"]["in_process_ratio"] = report["engine_vs_paper"]["ratio"]
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0
