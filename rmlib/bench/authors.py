"""The paper authors' own scoring code, run on a local model beside rmlib (``python -m rmlib.bench.authors``).

The FAccT paper's scoring code (``reward_model_support.py`` of summerfieldlab/Christian_etal_2025_FAccT,
MIT, © 2025 the authors) is not shipped with rmlib: ``RMLIB_AUTHORS_CODE`` (or ``--code``) names a folder
holding that file, and its SHA-256 is checked against the one pinned here (:data:`PINNED`), so a timing
always says which code it ran. Their ``RewardModel`` runs as their ``generate_reward_model_scores.py``
runs it: load the tokenizer and model, decode the vocabulary, then score ``batch`` tokens at a time
(chat template rendered as text, padded batches, the score read from ``outputs.logits`` as their
Skywork and GRM classes do). The one change: the model's settings come from the command line instead
of their ``config/reward_models.yaml``, so that a local folder can be scored.

Prints one JSON line: the seconds to load, to decode, to score, and the file the scores went to.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
import time

#: The file, its upstream commit and its SHA-256.
PINNED = {"file": "reward_model_support.py", "repository": "summerfieldlab/Christian_etal_2025_FAccT",
          "commit": "42dc162d0f88825d67f22f64ecc45648a9a09a48",
          "sha256": "26b0d878c98212b4b7df0a181806a00c95aef701ae2c308648f94e8598964382"}


def code_folder(given: str | None = None) -> pathlib.Path:
    """The folder of the authors' code: ``given``, else ``RMLIB_AUTHORS_CODE``; its file must match the pin."""
    from ..errors import InputError

    where = given or os.environ.get("RMLIB_AUTHORS_CODE")
    if not where:
        raise InputError("no folder of the authors' code: set RMLIB_AUTHORS_CODE (or --code) to a folder holding "
                         f"{PINNED['file']} from {PINNED['repository']} at commit {PINNED['commit'][:7]}")
    path = pathlib.Path(where) / PINNED["file"]
    if not path.is_file():
        raise InputError(f"{path} does not exist: the folder must hold the authors' {PINNED['file']}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != PINNED["sha256"]:
        raise InputError(f"{path} has SHA-256 {digest[:12]}…, not the pinned {PINNED['sha256'][:12]}… "
                         f"(commit {PINNED['commit'][:7]}): fetch that commit's file")
    return path.parent


def run(model: str, prompt: str, n_tokens: int, batch: int, dtype: str, out: str, code: str | None = None) -> dict:
    """Score token ids ``0 .. n_tokens-1`` of ``model`` with the authors' code; write the scores (float32,
    ``.npy``) to ``out`` and return the phases' seconds."""
    folder = code_folder(code)
    t0 = time.perf_counter()
    sys.path.insert(0, str(folder))
    import numpy as np
    import torch
    from reward_model_support import RewardModel  # the authors' module, from their folder

    settings = {"multi_gpu": False, "batch_size": batch, "params": {"torch_dtype": dtype}}

    class Local(RewardModel):  # their class, with its settings given here and their logits read-out
        @staticmethod
        def _load_model_config(model_name):
            return settings

        def _extract_scores_from_outputs(self, outputs):
            return outputs.logits.squeeze(-1).cpu().tolist()

    imports_s = time.perf_counter() - t0
    rm = Local(model)
    if rm.tokenizer.pad_token is None:
        rm.tokenizer.pad_token = rm.tokenizer.eos_token
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    load_s = time.perf_counter() - t0 - imports_s
    t = time.perf_counter()
    ids = list(range(n_tokens))
    rm.tokenizer.batch_decode([[i] for i in ids], skip_special_tokens=False)  # their vocabulary table
    decode_s = time.perf_counter() - t
    t = time.perf_counter()
    scores = []
    for start in range(0, n_tokens, batch):
        scores.extend(rm.get_reward_scores_from_response_token_ids(prompt, ids[start:start + batch], batch))
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    score_s = time.perf_counter() - t
    np.save(out, np.asarray(scores, dtype=np.float32))
    return {"code": dict(PINNED, folder=str(folder)), "model": model, "n_tokens": n_tokens, "batch": batch,
            "dtype": dtype, "imports_s": round(imports_s, 2), "load_s": round(load_s, 2),
            "decode_s": round(decode_s, 2), "score_s": round(score_s, 2),
            "tokens_per_s": round(n_tokens / score_s, 1), "out": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rmlib.bench.authors", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a local folder (or hub id) of a sequence classifier")
    p.add_argument("--prompt", required=True)
    p.add_argument("--tokens", type=int, required=True, help="score ids 0 .. N-1")
    p.add_argument("--batch", type=int, default=256, help="their batch size (256 in their config)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--out", required=True, help="the scores, a .npy file")
    p.add_argument("--code", help="the folder of their code (default $RMLIB_AUTHORS_CODE)")
    a = p.parse_args(argv)
    print(json.dumps(run(a.model, a.prompt, a.tokens, a.batch, a.dtype, a.out, a.code)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
