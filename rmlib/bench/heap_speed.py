"""Freed activations kept in the heap against glibc's defaults, for ``make bench`` (section ``heap``).

:func:`rmlib.engine.heap.keep_freed_memory` (called by ``load_model`` for a CPU model) raises glibc's
mmap and trim thresholds so that a forward's activations reuse the heap instead of fresh pages. This
scores the same consecutive tokens of ``trained:default`` (rmlib's lite forward, one thread, as a
chapter of ``make book`` runs) in whole processes with and without it, rounds alternating, and reports
the seconds, page faults and kernel time of each beside their ratio, and the largest score difference
(0: the same bits).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from ..prompts import PAPER_PROMPTS

_CHILD = r"""
import json, resource, sys, time, numpy as np, torch
keep, n = sys.argv[1] == "keep", int(sys.argv[2])
torch.set_num_threads(1)
from rmlib.engine import models
if not keep:
    models.keep_freed_memory = lambda: False  # glibc's own thresholds
from rmlib.engine.scorers import load_scorer
scorer = load_scorer("trained:default", lite=True)
ids = np.arange(20000, 20000 + n, dtype=np.int64)
scorer.token_scores(sys.argv[3], ids[:8])
before, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
scores = scorer.token_scores(sys.argv[3], ids)
seconds, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "minor_faults": after.ru_minflt - before.ru_minflt,
                  "system_s": after.ru_stime - before.ru_stime, "scores": scores.tolist()}))
"""


def heap_reuse(n_tokens: int = 1536, rounds: int = 2) -> dict:
    runs = {"kept": [], "glibc_default": []}
    for _ in range(rounds):
        for name, arg in (("glibc_default", "default"), ("kept", "keep")):
            out = subprocess.run([sys.executable, "-c", _CHILD, arg, str(n_tokens), PAPER_PROMPTS["greatest"]],
                                 capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "minor_faults", "system_s")}
           for name, rs in runs.items()}
    diff = max(abs(a - b) for r1 in runs["kept"] for r2 in runs["glibc_default"]
               for a, b in zip(r1["scores"], r2["scores"]))
    return {"model": "trained:default (lite forward, 1 thread)", "n_tokens": n_tokens, "rounds": rounds,
            **{f"{k}.{name}": round(v, 3) for name, m in med.items() for k, v in m.items()},
            "speedup": round(med["glibc_default"]["seconds"] / med["kept"]["seconds"], 3),
            "max_abs_score_diff": diff}
