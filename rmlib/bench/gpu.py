"""GPU benchmarks (``python -m rmlib bench --only gpu``): the paper RMs' shapes on one CUDA GPU.

The models are ``random:<shape>`` (:mod:`rmlib.engine.shapes`): the exact shapes of the paper RMs'
bases with seeded random weights and a synthetic tokenizer of the real vocabulary size (speed does
not depend on weight values). Every figure is scored the way a user scores: ``Scorer`` and its
default batching, unless a row says otherwise. Per shape:

* the full vocabulary (``score_tokens``: the scores and the token table), at the default batch and at
  larger ones probed on a sample; wall time, tokens/s and the fraction of the FLOP floor
  ``2 x non-embedding parameters x positions per candidate x tokens / peak`` (positions per candidate:
  the token and the template's suffix; the cached prefix runs once). The peak is the datasheet's
  dense bf16 rate and, beside it, the rate measured here on an 8192-cube matrix product;
* the same candidates through the prefix kernel alone, tensors already on the GPU (what the GPU
  costs without Python's share).

On the Gemma-2-2B shape also: bf16 against float32 on a sample; ``mode="paper"`` with both
``paper_forward`` settings against token mode on a sample; GCG steps per second at search width
512; an exact coordinate sweep's candidates per second. Beforehand, on small models of the Gemma-2
and Llama shapes, a GPU float32 table equals the CPU's (to 1e-5).

A section that fails records its error and the next one runs; ``deadline_s`` skips what would start
after it (each section's result is also written to ``partial`` as soon as it ends).
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np
import torch

from ..prompts import PAPER_PROMPTS

#: NVIDIA's dense bf16 tensor-core peaks (datasheets, SXM parts).
DATASHEET_BF16_FLOPS = {"H100": 989e12, "H200": 989e12}
PROMPT = PAPER_PROMPTS["greatest"]
#: The shapes timed over their whole vocabulary, and the sample the 27B one is timed on.
FULL_SHAPES = ("gemma2-2b-rm", "llama3.1-8b-rm")
SAMPLE_27B = 65_536
#: Where the models run (the tests dry-run the sections on the CPU with small shapes).
DEVICE = "cuda"


def _sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _timed(fn):
    _sync()
    t = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - t


def device_name() -> str:
    return torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE


def gpu_memory_gib() -> float | None:
    return round(torch.cuda.memory_allocated() / 2**30, 1) if DEVICE == "cuda" else None


def datasheet_peak() -> float | None:
    name = device_name()
    return next((v for k, v in DATASHEET_BF16_FLOPS.items() if k in name), None)


def measured_peak(n: int = 8192, repeats: int = 10) -> float:
    """bf16 FLOP/s of an n-cube matrix product on random data (median of ``repeats`` after warm-up)."""
    a, b = (torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        times.append(_timed(lambda: a @ b)[1])
    return 2 * n ** 3 / float(np.median(times))


def non_embedding_params(model) -> int:
    emb = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters() if p is not emb)


def floor_s(model, positions: int, n_tokens: int, peak: float | None) -> float | None:
    """The FLOP floor: 2 x non-embedding parameters x positions per candidate x tokens / peak."""
    return None if not peak else 2 * non_embedding_params(model) * positions * n_tokens / peak


def exactness(n_tokens: int = 512) -> dict:
    """Small Gemma-2 and Llama shapes (real vocabulary, 2 layers): GPU float32 vs CPU float32, and
    GPU bf16 vs GPU float32, over the same tokens."""
    from ..engine.models import LoadedModel
    from ..engine.scorers import Scorer
    from ..engine.shapes import build_random

    small = dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=64)
    out = {}
    for shape in ("gemma2-2b-rm", "llama3.1-8b-rm"):
        model, tok, kind = build_random(shape, torch.float32, "cpu", **small)  # one set of weights, copied
        scores = []
        for device, dtype in (("cpu", torch.float32), (DEVICE, torch.float32), (DEVICE, torch.bfloat16)):
            copy = model if device == "cpu" else copy_to(model, device, dtype)
            loaded = LoadedModel(f"random:{shape}", shape, "random-init-seed-0", kind, copy.eval(), tok,
                                 str(dtype).replace("torch.", ""))
            scorer = Scorer(loaded)
            ids = np.linspace(0, scorer.vocab_size - 1, n_tokens).astype(np.int64)
            scores.append(scorer.token_scores(PROMPT, ids))
        cpu, gpu32, gpu16 = scores
        spread = float(np.std(gpu32))
        out[shape] = {"n_tokens": n_tokens, "max_abs_diff_gpu_fp32_vs_cpu_fp32": float(np.abs(gpu32 - cpu).max()),
                      "max_abs_diff_gpu_bf16_vs_fp32": float(np.abs(gpu16 - gpu32).max()),
                      "score_sd_fp32": spread,
                      "pearson_bf16_vs_fp32": float(np.corrcoef(gpu16, gpu32)[0, 1])}
    return out


def copy_to(model, device: str, dtype: torch.dtype):
    """A copy of ``model`` on ``device`` in ``dtype`` (the original stays where it is)."""
    import copy

    return copy.deepcopy(model).to(device=device, dtype=dtype)


def kernel_only(scorer, ids: np.ndarray, batch: int, shared_attention: bool | None = None) -> tuple[float, torch.Tensor]:
    """Seconds for the candidates (token + suffix) of ``ids`` through the prefix kernel alone, built on
    the GPU (the GPU's share of a scoring run), and the scores; ``shared_attention``: the kernel's
    attention path (None: its default)."""
    from ..engine.kernel import PrefixKernel

    frame = scorer.frame(PROMPT)
    kernel = PrefixKernel(scorer.loaded, frame.prefix_ids, shared_attention=shared_attention)
    vocab = torch.as_tensor(ids, device=DEVICE)
    suffix = torch.tensor(list(frame.suffix_ids), device=DEVICE, dtype=torch.long)

    def run():
        parts = []
        with torch.no_grad():
            for start in range(0, len(vocab), batch):
                tok = vocab[start:start + batch, None]
                cand = torch.cat([tok, suffix.expand(tok.shape[0], -1)], dim=1)
                last = torch.full((tok.shape[0],), cand.shape[1] - 1, device=DEVICE)
                parts.append(kernel.classifier(cand, last))
        return torch.cat(parts)

    run()  # warm-up
    scores, seconds = _timed(run)
    return seconds, scores


def attention_paths(shape: str, n: int = 32_768, batches=(1024, 4096)) -> dict:
    """The prefix kernel's two attention paths on one shape, kernel only: the prefix attended at batch 1
    (:mod:`rmlib.engine.shared_attention`, the GPU default) against transformers' cache expanded per
    candidate; seconds per path and batch, and their largest score difference (bf16)."""
    from ..engine.models import load_model
    from ..engine.scorers import Scorer

    scorer = Scorer(load_model(f"random:{shape}", dtype="bfloat16", device=DEVICE))
    ids = np.linspace(0, scorer.vocab_size - 1, n).astype(np.int64)
    out = {"shape": shape, "n_tokens": n}
    for b in batches:
        shared_s, shared = kernel_only(scorer, ids, b, shared_attention=True)
        cache_s, cache = kernel_only(scorer, ids, b, shared_attention=False)
        out[f"batch_{b}"] = {"shared_prefix_s": round(shared_s, 3), "expanded_cache_s": round(cache_s, 3),
                             "speedup": round(cache_s / shared_s, 2),
                             "max_abs_diff": float((shared - cache).abs().max()),
                             "score_sd": float(cache.float().std())}
    return out


def full_vocab(shape: str, peaks: dict, batches=(1024, 4096, 8192), n_tokens: int | None = None,
               probe: int = 32_768) -> dict:
    """One shape: load, probe batch sizes on a sample, then ``score_tokens`` over ``n_tokens`` (default
    the whole vocabulary) at the default batch and at the fastest probed one."""
    from ..engine.models import load_model
    from ..engine.scorers import Scorer

    loaded, load_s = _timed(lambda: load_model(f"random:{shape}", dtype="bfloat16", device=DEVICE))
    scorer = Scorer(loaded)
    model = loaded.model
    frame = scorer.frame(PROMPT)
    positions = 1 + len(frame.suffix_ids)
    vocab = scorer.vocab_size
    n = n_tokens or vocab
    ids = np.arange(n, dtype=np.int64)
    sample = np.linspace(0, vocab - 1, min(probe, n)).astype(np.int64)
    scorer.token_scores(PROMPT, sample[:256])  # warm-up: the prefix, the kernels' first launches
    probes = {}
    for b in batches:
        try:
            probes[b] = round(_timed(lambda: Scorer(loaded, batch_size=b).token_scores(PROMPT, sample))[1], 3)
        except Exception as err:  # noqa: BLE001 (an OOM at a batch is a finding, not a failure)
            probes[b] = f"{type(err).__name__}: {str(err)[:120]}"
    timed = {b: t for b, t in probes.items() if isinstance(t, float)}
    best = min(timed, key=timed.get)
    result = {"shape": shape, "base_config_of": shape, "gpu": device_name(), "dtype": "bfloat16",
              "vocab": vocab, "n_tokens": n, "prefix_len": len(frame.prefix_ids), "suffix_len": len(frame.suffix_ids),
              "non_embedding_params": non_embedding_params(model), "load_s": round(load_s, 2),
              "gpu_memory_gib_after_load": gpu_memory_gib(),
              "probe_tokens": len(sample), "probe_s_by_batch": probes, "fastest_probe_batch": best,
              "kernel_only_probe_s_at_best": round(kernel_only(scorer, sample, best)[0], 3)}
    for label, b in (("default_batch", scorer.batch_size), ("best_batch", best)):
        if label == "best_batch" and b == scorer.batch_size:
            result[label] = dict(result["default_batch"])
            continue
        s = Scorer(loaded, batch_size=b)
        scores, t_scores = _timed(lambda: s.token_scores(PROMPT, ids))
        table, t_table = _timed(lambda: s.token_table(ids, scores, s.provenance(PROMPT, "token")))
        wall = t_scores + t_table
        row = {"batch_size": b, "scores_s": round(t_scores, 2), "token_table_s": round(t_table, 2),
               "wall_s": round(wall, 2), "tokens_per_s": round(n / wall)}
        for name, peak in peaks.items():
            f = floor_s(model, positions, n, peak)
            if f:
                row[f"floor_s_{name}"] = round(f, 2)
                row[f"fraction_of_floor_{name}"] = round(f / t_scores, 3)
        if n < vocab:
            row["full_vocab_wall_s_extrapolated"] = round(wall * vocab / n, 1)
        result[label] = row
    del scorer, loaded, model
    torch.cuda.empty_cache()
    return result


def gemma2_2b_extras(peaks: dict, n_paper: int = 2048, n_bf16: int = 2048) -> dict:
    """On the Gemma-2-2B shape: bf16 vs float32, mode "paper" (both forwards) vs token mode, GCG at
    search width 512, and an exact sweep."""
    from ..engine import gcg
    from ..engine.models import load_model
    from ..engine.scorers import Scorer
    from ..engine.search import run
    from ..engine.search_config import SearchConfig

    out = {}
    from ..engine.shapes import PAPER_SHAPES

    ids = np.linspace(0, PAPER_SHAPES["gemma2-2b-rm"].vocab_size - 1, n_bf16).astype(np.int64)
    fp32 = Scorer(load_model("random:gemma2-2b-rm", dtype="float32", device=DEVICE))
    ref = fp32.token_scores(PROMPT, ids)
    loaded = load_model("random:gemma2-2b-rm", dtype="bfloat16", device=DEVICE)
    # the same weights in bf16 (seed-0 weights drawn in bf16 are other numbers than those drawn in float32)
    loaded.model.load_state_dict(fp32.loaded.model.state_dict())
    del fp32
    torch.cuda.empty_cache()
    scorer = Scorer(loaded)
    got = scorer.token_scores(PROMPT, ids)
    out["bf16_vs_fp32"] = {"n_tokens": n_bf16, "max_abs_diff": float(np.abs(got - ref).max()),
                           "score_sd_fp32": float(np.std(ref)), "pearson": float(np.corrcoef(got, ref)[0, 1])}

    sample = ids[:n_paper]
    token, t_token = _timed(lambda: scorer.token_scores(PROMPT, sample))
    shared, t_shared = _timed(lambda: scorer.token_scores(PROMPT, sample, mode="paper"))
    full_scorer = Scorer(loaded, batch_size=256, paper_forward="full")
    full, t_full = _timed(lambda: full_scorer.token_scores(PROMPT, sample, mode="paper"))
    paper_len = len(scorer.paper_input_ids(PROMPT, scorer.tokenizer.decode([int(sample[1])])))
    frame = scorer.frame(PROMPT)
    out["paper_mode"] = {"n_tokens": n_paper, "token_s": round(t_token, 3), "paper_shared_prefix_s": round(t_shared, 3),
                         "paper_full_s": round(t_full, 3), "paper_full_batch_size": 256,
                         "ratio_full_over_token": round(t_full / t_token, 1),
                         "ratio_ceiling": round(paper_len / (1 + len(frame.suffix_ids)), 1),
                         "ratio_full_over_shared_prefix": round(t_full / t_shared, 1),
                         "max_abs_diff_shared_prefix_vs_full": float(np.abs(shared - full).max()),
                         "paper_input_len": paper_len}

    start = [int(i) for i in scorer.tokenizer(" w1000 w2000 w3000 w4000", add_special_tokens=False).input_ids][:4]
    gcg.descend(scorer, PROMPT, start, SearchConfig(allowed="all", num_steps=1, search_width=512, topk=256))  # warm-up
    res = gcg.descend(scorer, PROMPT, start, SearchConfig(allowed="all", num_steps=8, search_width=512, topk=256))
    stamps = res.history["seconds"].tolist()
    per_step = (stamps[-1] - stamps[1]) / (len(stamps) - 2)  # steps 2..8: the first step's set-up left out
    positions = len(start) + len(frame.suffix_ids)
    row = {"length": len(start), "search_width": 512, "steps_timed": len(stamps) - 2, "stop_reason": res.stop_reason,
           "s_per_step": round(per_step, 3), "steps_per_s": round(1 / per_step, 2),
           "candidates_per_s": round(512 / per_step)}
    for name, peak in peaks.items():
        f = floor_s(loaded.model, positions, 512, peak)
        if f:
            row[f"fraction_of_floor_{name}"] = round(f / per_step, 3)
    out["gcg"] = row

    cfg = SearchConfig(method="sweep", length=2, restarts=1, max_passes=1, init="random", check="never",
                       allowed="all")
    res, t = _timed(lambda: run(scorer, PROMPT, cfg))
    row = {"length": 2, "candidates_scored": res.candidates_scored, "seconds": round(res.seconds, 2),
           "candidates_per_s": round(res.candidates_scored / res.seconds)}
    for name, peak in peaks.items():
        f = floor_s(loaded.model, 2 + len(frame.suffix_ids), res.candidates_scored, peak)
        if f:
            row[f"fraction_of_floor_{name}"] = round(f / res.seconds, 3)
    out["sweep"] = row
    del scorer, loaded, full_scorer
    torch.cuda.empty_cache()
    return out


def train_encode(shape: str = "gemma2-2b-rm", n_items: int = 2000, batches=(64, 512), epochs: int = 2) -> dict:
    """Reward-model training on a base of ``shape`` (a causal LM with random weights, saved as a folder
    the way a user's base is): items/s through the frozen base at each encode batch size, then
    ``train_reward_model`` (head only, ``epochs``) on ``n_items`` EloEverything items."""
    import tempfile

    from transformers import AutoModelForCausalLM

    from ..engine.shapes import PAPER_SHAPES, shape_config, synthetic_tokenizer
    from ..training import classifier, configuration, train

    s = PAPER_SHAPES[shape]
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp) / "base"
        cfg = shape_config(shape)
        cfg.architectures = None
        with torch.device(DEVICE):
            causal = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        (_, save_s) = _timed(lambda: causal.save_pretrained(base))
        del causal
        synthetic_tokenizer(s.vocab_size, s.specials, bos=s.bos, eos=s.eos, pad=s.pad,
                            chat_template=s.chat_template).save_pretrained(base)
        config = configuration.TrainConfig(base=str(base), max_items=n_items, epochs=epochs, dtype="bfloat16")
        data, _, _ = train.prepare(config)
        (model, tok, template, loaded), build_s = _timed(
            lambda: classifier.build_classifier(str(base), dtype="bfloat16", device=DEVICE))
        encode = {}
        for b in batches:
            _, t = _timed(lambda: classifier.encode_items(model, tok, template, data.items, 0, batch_size=b,
                                                     progress=False, model_id=shape))
            encode[b] = {"seconds": round(t, 2), "items_per_s": round(len(data.items) / t, 1)}
        del model, loaded
        torch.cuda.empty_cache() if DEVICE == "cuda" else None
        run, wall = _timed(lambda: train.train_reward_model(config, out=pathlib.Path(tmp) / "rm", device=DEVICE,
                                                            progress=False, force=True))
    return {"base_shape": shape, "dtype": "bfloat16", "n_items": len(data.items), "save_base_s": round(save_s, 1),
            "build_classifier_s": round(build_s, 1), "encode_by_batch": encode, "epochs": epochs,
            "train_reward_model_wall_s": round(wall, 1), "train_s": run.info.get("train_s"),
            "n_pairs": run.info.get("n_pairs")}


def record_section(report: dict, name: str, run) -> None:
    """Run one section into ``report[name]`` and its seconds into ``report["sections_s"]``; a section that
    fails records its error there instead, so that the next one runs."""
    t = time.perf_counter()
    try:
        report[name] = run()
    except Exception as err:  # noqa: BLE001 (record it, run the next section)
        import traceback

        report[name] = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()[-2000:]}
    report["sections_s"][name] = round(time.perf_counter() - t, 1)


def bench_gpu(partial: str | None = None, deadline_s: float = 480.0, only: tuple | None = None) -> dict:
    """Every GPU section in order (see the module docstring); ``partial``: a JSON file rewritten after
    each section."""
    if not torch.cuda.is_available():
        from ..errors import InputError

        raise InputError("the gpu benchmark needs a CUDA GPU (torch.cuda.is_available() is False)")
    t0 = time.perf_counter()
    report: dict = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "sections_s": {}}
    import transformers

    report["transformers"] = transformers.__version__
    peaks = {"datasheet": datasheet_peak()}
    sections = [("measured_peak", lambda: measured_peak()),
                ("exactness", exactness),
                ("gemma2-2b-rm", lambda: full_vocab("gemma2-2b-rm", peaks)),
                ("gemma2-2b-rm_extras", lambda: gemma2_2b_extras(peaks)),
                ("llama3.1-8b-rm", lambda: full_vocab("llama3.1-8b-rm", peaks, batches=(1024, 4096))),
                ("gemma2-27b-rm", lambda: full_vocab("gemma2-27b-rm", peaks, batches=(1024, 4096),
                                                     n_tokens=SAMPLE_27B, probe=8192)),
                ("train_encode", train_encode),
                ("attention_paths", lambda: {s: attention_paths(s) for s in ("gemma2-2b-rm", "llama3.1-8b-rm")})]
    if only:
        sections = [(name, run) for name, run in sections if name in only]
    for name, run in sections:
        if time.perf_counter() - t0 > deadline_s:
            report[name] = "skipped: past the deadline"
            continue
        record_section(report, name, run)
        import gc

        gc.collect()  # the section's models go before the next one's load
        torch.cuda.empty_cache()
        if name == "measured_peak" and isinstance(report[name], float):
            peaks["measured"] = report[name]
            report[name] = {"bf16_tflops": round(report[name] / 1e12, 1), "datasheet_tflops":
                            round(peaks["datasheet"] / 1e12) if peaks["datasheet"] else None}
        print(f"bench gpu: {name} took {report['sections_s'][name]} s", flush=True)
        if partial:
            pathlib.Path(partial).write_text(json.dumps(report, indent=2, default=str) + "\n")
    report["summary"] = summary(report)
    return report


def summary(report: dict) -> list[dict]:
    """One row per shape scored over its vocabulary (its fastest batch): the page's first table."""
    rows = []
    for shape in (*FULL_SHAPES, "gemma2-27b-rm"):
        r = report.get(shape)
        if not isinstance(r, dict) or "best_batch" not in r:
            continue
        b = r["best_batch"]
        rows.append({"shape": shape, "gpu": r["gpu"], "dtype": r["dtype"], "vocab": r["vocab"],
                     "tokens_timed": r["n_tokens"], "batch": b["batch_size"],
                     "wall_s": b.get("full_vocab_wall_s_extrapolated", b["wall_s"]),
                     "wall_is": "extrapolated" if "full_vocab_wall_s_extrapolated" in b else "measured",
                     "tokens_per_s": b["tokens_per_s"],
                     "fraction_of_floor_datasheet": b.get("fraction_of_floor_datasheet"),
                     "fraction_of_floor_measured_peak": b.get("fraction_of_floor_measured")})
    return rows
