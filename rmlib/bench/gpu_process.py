"""GPU figures as a user meets them: whole processes, the authors' code beside rmlib, a kernel profile.

``python -m rmlib.bench.gpu_process --out DIR`` on a CUDA machine (the sections :func:`sections` returns, in
this order, each written to ``DIR/gpu_process.json`` as soon as it ends; ``--only`` picks some, ``--deadline``
skips what would start after it):

* ``folder``: a sequence-classification RM of a paper RM's shape (random bf16 weights) saved as an
  ordinary Hugging Face folder beside a real tokenizer (``--tokenizer``: a folder holding
  ``tokenizer.json``, e.g. Gemma 3's 262,144 ids) and the family's chat template: what a user's
  downloaded RM looks like on disk;
* ``startup_parts``: where that folder's ``rmlib score`` spends its time on the GPU, in bf16: a warm whole
  process (median of 3) beside its parts timed one by one in a fresh process (imports, weights read to the
  device, tokenizer, scoring, token table, writing; :func:`rmlib.bench.startup.model_parts`), for 64 tokens
  and for the whole vocabulary (one warm process);
* ``profile``: ``torch.profiler`` over the prefix kernel at the default batch: the operations that take
  the GPU's time, and the share of matrix products;
* ``whole_sample``: ``python -m rmlib score`` on that folder over a sample (``--sample`` tokens), start to
  exit, writing Parquet: token mode, ``--mode paper`` and ``--mode paper --paper-forward full``;
* ``authors``: the paper authors' scoring code (:mod:`rmlib.bench.authors`) on the same folder and
  sample, as a whole process, and its scores against rmlib's paper mode;
* ``whole_vocab``: ``python -m rmlib score`` over the whole vocabulary, start to exit: the folder,
  ``random:gemma2-2b-rm`` and ``random:llama3.1-8b-rm``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

from ..prompts import PAPER_PROMPTS

PROMPT = PAPER_PROMPTS["greatest"]


def rm_folder(shape: str, folder: pathlib.Path, tokenizer: str | None = None, **overrides) -> dict:
    """Save a ``shape`` classifier with seeded random bf16 weights, its tokenizer (``tokenizer``: a folder
    with a real one; else the shape's synthetic tokenizer) and the family's chat template to ``folder``.
    The config's vocabulary is the tokenizer's size; ``overrides``: smaller sizes (tests)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..engine.shapes import PAPER_SHAPES, shape_config, synthetic_tokenizer

    s = PAPER_SHAPES[shape]
    if tokenizer:
        tok = AutoTokenizer.from_pretrained(tokenizer)
        tok.chat_template = s.chat_template
    else:
        tok = synthetic_tokenizer(s.vocab_size, s.specials, bos=s.bos, eos=s.eos, pad=s.pad,
                                  chat_template=s.chat_template)
    cfg = shape_config(shape, **dict(overrides, vocab_size=len(tok)))
    t = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.random.fork_rng(devices=[0] if device == "cuda" else []), torch.device(device):
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_config(cfg, dtype=torch.bfloat16)
    model.config.pad_token_id = tok.pad_token_id
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    save_s = time.perf_counter() - t
    size = sum(f.stat().st_size for f in pathlib.Path(folder).iterdir())
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"shape": shape, "folder": str(folder), "vocab": len(tok), "tokenizer": tokenizer or "synthetic",
            "build_s": round(build_s, 1), "save_s": round(save_s, 1), "bytes": size}


def timed_process(argv: list[str], env: dict | None = None, timeout: float = 600, cwd: str | None = None) -> dict:
    """Run ``argv`` to its exit; the wall seconds, the exit status, the output's last lines and the last line
    it printed on standard output (a JSON report, for :mod:`rmlib.bench.authors`). ``cwd``: where it runs
    (``python -m`` imports from there first: another checkout's code runs from its own folder)."""
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, **(env or {})))
    wall = time.perf_counter() - t
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    printed = proc.stdout.strip().splitlines()
    return {"argv": " ".join(argv[2:]), "wall_s": round(wall, 2), "rc": proc.returncode, "tail": tail,
            "last_stdout_line": printed[-1] if printed else ""}


def score_argv(model: str, out: pathlib.Path, tokens: str | None = None, mode: str = "token",
               extra: tuple = (), device: str = "cuda", dtype: str = "bfloat16") -> list[str]:
    """``python -m rmlib score`` of ``model`` under the paper's *greatest* prompt into ``out`` (Parquet)."""
    argv = [sys.executable, "-m", "rmlib", "score", "--model", model, "--prompt", PROMPT, "--dtype", dtype,
            "--device", device, "--no-progress", "--mode", mode, "--out", str(out), *extra]
    return argv + (["--tokens", tokens] if tokens else [])


def read_scores(path: pathlib.Path):
    """The scores of a table ``rmlib score --out`` wrote, in token-id order."""
    import pandas as pd

    table = pd.read_parquet(path)
    return table.sort_values("token_id")["score"].to_numpy()


def profile_kernel(shape: str = "gemma2-2b-rm", n: int = 16_384, top: int = 25) -> dict:
    """The prefix kernel of ``random:<shape>`` over ``n`` tokens at the scorer's default batch, under
    ``torch.profiler``: the ``top`` operations by GPU time, and the matrix products' share."""
    import numpy as np
    import torch
    from torch.profiler import ProfilerActivity, profile

    from ..engine.models import load_model
    from ..engine.scorers import Scorer
    from .gpu import kernel_only

    scorer = Scorer(load_model(f"random:{shape}", dtype="bfloat16", device="cuda"))
    ids = np.linspace(0, scorer.vocab_size - 1, n).astype(np.int64)
    plain_s, _ = kernel_only(scorer, ids, scorer.batch_size)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        kernel_only(scorer, ids[: 2 * scorer.batch_size], scorer.batch_size)
    rows = []
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in events)
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:top]:
        rows.append({"op": e.key[:90], "calls": e.count, "gpu_ms": round(e.self_device_time_total / 1e3, 2),
                     "share": round(e.self_device_time_total / total, 3) if total else None,
                     "cpu_ms": round(e.self_cpu_time_total / 1e3, 2)})
    gemm = sum(e.self_device_time_total for e in events
               if any(k in e.key.lower() for k in ("gemm", "matmul", "mm", "sm90_xmma", "cutlass", "nvjet")))
    out = {"shape": shape, "batch": scorer.batch_size, "n_tokens": n, "kernel_s_unprofiled": round(plain_s, 3),
           "profiled_gpu_ms": round(total / 1e3, 1), "gemm_like_share": round(gemm / total, 3) if total else None,
           "top": rows}
    del scorer
    torch.cuda.empty_cache()
    return out


def sections(work: pathlib.Path, tokenizer: str | None, code: str | None, sample: int) -> list:
    """The sections in order: (name, function returning a dict)."""
    folder = work / "gemma2-2b-rm-folder"
    runs = work / "runs"

    def make_folder():
        return rm_folder("gemma2-2b-rm", folder, tokenizer)

    def parts():
        from .startup import model_parts

        described = "Gemma-2-2B-shaped classifier (random bf16 weights) in a local folder, " + (
            "the tokenizer of " + tokenizer if tokenizer else "the shape's synthetic tokenizer")
        vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
        return {"sample": model_parts(str(folder), described, "100:164", 3, "cuda", "bfloat16"),
                "whole_vocab": model_parts(str(folder), described, f"0:{vocab}", 1, "cuda", "bfloat16")}

    def whole(runs_named):
        def go():
            out = {}
            for name, argv in runs_named:
                out[name] = timed_process(argv + ["--cache-dir", str(runs / f"cache-{name}")])
                print(f"  {name}: {out[name]['wall_s']} s rc {out[name]['rc']}", flush=True)
            return out
        return go

    sample_runs = [
        ("folder_sample", score_argv(str(folder), runs / "folder_sample.parquet", f"0:{sample}")),
        ("folder_paper", score_argv(str(folder), runs / "folder_paper.parquet", f"0:{sample}", "paper")),
        ("folder_paper_full", score_argv(str(folder), runs / "folder_paper_full.parquet", f"0:{sample}", "paper",
                                         ("--paper-forward", "full", "--batch-size", "256")))]
    vocab_runs = [
        ("folder_whole_vocab", score_argv(str(folder), runs / "folder_all.parquet")),
        ("random_gemma2_2b_whole_vocab", score_argv("random:gemma2-2b-rm", runs / "random2b.parquet")),
        ("random_llama3_8b_whole_vocab", score_argv("random:llama3.1-8b-rm", runs / "random8b.parquet"))]

    def authors():
        import numpy as np

        npy = runs / "authors.npy"
        proc = timed_process([sys.executable, "-m", "rmlib.bench.authors", "--model", str(folder), "--prompt",
                              PROMPT, "--tokens", str(sample), "--batch", "256", "--out", str(npy)]
                             + (["--code", code] if code else []))
        out = {"whole_process": proc}
        if proc["rc"] == 0:
            out["phases"] = json.loads(proc["last_stdout_line"])
            theirs = np.load(npy)
            for name, _ in sample_runs:
                path = runs / f"{name}.parquet"
                if path.exists():
                    ours = read_scores(path)[: len(theirs)]
                    out[f"vs_{name}"] = {"pearson": round(float(np.corrcoef(ours, theirs)[0, 1]), 5),
                                         "max_abs_diff": round(float(np.abs(ours - theirs).max()), 4),
                                         "score_sd": round(float(np.std(theirs)), 4)}
        return out

    return [("folder", make_folder), ("startup_parts", parts), ("profile", profile_kernel),
            ("whole_sample", whole(sample_runs)), ("authors", authors), ("whole_vocab", whole(vocab_runs))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rmlib.bench.gpu_process", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="a folder for gpu_process.json")
    p.add_argument("--work", default="/tmp/rmlib-gpu", help="a folder for the model and the score tables")
    p.add_argument("--tokenizer", help="a folder with a real tokenizer.json (default: the synthetic one)")
    p.add_argument("--code", help="the authors' code folder (default $RMLIB_AUTHORS_CODE)")
    p.add_argument("--sample", type=int, default=32_768, help="tokens of the sample runs")
    p.add_argument("--only", nargs="*", help="sections to run (default all)")
    p.add_argument("--deadline", type=float, default=400.0, help="seconds after which no section starts")
    a = p.parse_args(argv)
    from .gpu import record_section

    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(a.work)
    (work / "runs").mkdir(parents=True, exist_ok=True)
    report: dict = {"sections_s": {}}
    t0 = time.perf_counter()
    for name, fn in sections(work, a.tokenizer, a.code, a.sample):
        if a.only and name not in a.only:
            continue
        if time.perf_counter() - t0 > a.deadline:
            report[name] = "skipped: past the deadline"
            continue
        record_section(report, name, fn)
        print(f"gpu_process: {name} took {report['sections_s'][name]} s", flush=True)
        (out / "gpu_process.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
