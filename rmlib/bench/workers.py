"""Chapters side by side, for ``make bench`` (section ``book_workers``).

``make book`` runs ``jobs`` chapters at once, each with ``cpus // jobs`` torch
threads (:mod:`rmlib.book.parallel`). This measures the premise on the
engine's vocabulary scoring: the tokens per second of one process with every
core against ``jobs`` processes started together with their share each
(the same model, as many consecutive tokens per process, from seeded starts), and, as the warning case, the
same processes each with every core (oversubscribed). Rounds alternate so that
drift hits the layouts alike; the medians are reported with their ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ..prompts import PAPER_PROMPTS

_CHILD = r"""
import json, os, sys, time, numpy as np, torch
from rmlib.engine.scorers import load_scorer
spec, n, seed, go, lite, prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1", sys.argv[6]
scorer = load_scorer(spec, lite=lite)
# consecutive ids from a seeded start, as a chapter's whole-vocabulary tables meet them (spread random ids
# would leave most of each fixed-size forward's places to copies)
start = int(np.random.default_rng(seed).integers(0, max(1, scorer.vocab_size - n)))
ids = np.arange(start, min(start + n, scorer.vocab_size), dtype=np.int64)
scorer.token_scores(prompt, ids[:8])
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
t = time.perf_counter()
scorer.token_scores(prompt, ids)
print(json.dumps({"seconds": time.perf_counter() - t, "threads": torch.get_num_threads()}), flush=True)
"""


def _round(model: str, processes: int, threads: int, n_tokens: int, lite: bool, seed: int) -> dict:
    """``processes`` scoring processes with ``threads`` each, released together once all are loaded."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "RMLIB_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    with tempfile.TemporaryDirectory() as tmp:
        go = os.path.join(tmp, "go")
        procs = [subprocess.Popen([sys.executable, "-c", _CHILD, model, str(n_tokens), str(seed + i), go, str(int(lite)),
                                   PAPER_PROMPTS["greatest"]],
                                  stdout=subprocess.PIPE, text=True, env=env) for i in range(processes)]
        try:
            for p in procs:
                line = p.stdout.readline().strip()
                if line != "ready":
                    raise RuntimeError(f"a benchmark process failed to load {model}: {line!r}")
            start = time.perf_counter()
            open(go, "w").close()
            results = [json.loads(p.stdout.readline()) for p in procs]
            wall = time.perf_counter() - start
        finally:
            for p in procs:
                p.wait()
    return {"tokens_per_s": processes * n_tokens / wall, "threads_seen": sorted({r["threads"] for r in results})}


def worker_scaling(model: str = "trained:default", *, jobs: int = 2, n_tokens: int = 1024, rounds: int = 3,
                   lite: bool = True) -> dict:
    """Tokens/s: one process with every core vs ``jobs`` processes with ``cpus // jobs`` threads each
    vs ``jobs`` processes with every core each; medians of ``rounds`` alternating rounds."""
    from ..engine.threads import available_cpus

    cpus = available_cpus()
    share = max(1, cpus // jobs)
    layouts = {"one_process_all_cores": (1, cpus), f"{jobs}_processes_{share}_threads": (jobs, share),
               f"{jobs}_processes_{cpus}_threads_oversubscribed": (jobs, cpus)}
    rates: dict[str, list[float]] = {name: [] for name in layouts}
    for r in range(rounds):
        for name, (processes, threads) in layouts.items():
            rates[name].append(_round(model, processes, threads, n_tokens, lite, seed=100 * r)["tokens_per_s"])
    med = {name: statistics.median(v) for name, v in rates.items()}
    one = med["one_process_all_cores"]
    return {"model": model, "cpus": cpus, "jobs": jobs, "n_tokens_per_process": n_tokens, "rounds": rounds,
            "forward": "rmlib lite_llama where the checkpoint allows" if lite else "transformers",
            "tokens_per_s": {k: round(v, 1) for k, v in med.items()},
            "ratio_to_one_process": {k: round(v / one, 2) for k, v in med.items()},
            "all_rounds": {k: [round(x, 1) for x in v] for k, v in rates.items()}}
