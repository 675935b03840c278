"""The pieces of the GPU benchmarks (rmlib.bench.gpu_process, rmlib.bench.authors) that run without a GPU:
an RM folder written and scored as a whole process, and the authors' code refused unless it is the pinned file."""

import hashlib

import numpy as np
import pytest
import torch

from rmlib.bench import authors, gpu_process
from rmlib.engine.models import load_model
from rmlib.engine.scorers import Scorer
from rmlib.errors import InputError

SMALL = dict(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2,
             num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32)


def test_rm_folder_scores_as_a_whole_process_like_in_process(tmp_path):
    folder = tmp_path / "rm"
    info = gpu_process.rm_folder("gemma2-2b-rm", folder, None, **SMALL)
    assert info["vocab"] == 256000 and (folder / "model.safetensors").is_file()
    out = tmp_path / "s.parquet"
    proc = gpu_process.timed_process(gpu_process.score_argv(str(folder), out, "0:48", device="cpu", dtype="float32")
                                     + ["--cache-dir", str(tmp_path / "cache"), "--threads", "1"])
    assert proc["rc"] == 0, proc["tail"]
    whole = gpu_process.read_scores(out)
    torch.set_num_threads(1)
    here = Scorer(load_model(str(folder), dtype="float32", device="cpu")).token_scores(gpu_process.PROMPT, np.arange(48))
    assert len(whole) == 48 and np.abs(whole - here).max() < 1e-5


def test_authors_code_must_be_named_and_pinned(tmp_path, monkeypatch):
    monkeypatch.delenv("RMLIB_AUTHORS_CODE", raising=False)
    with pytest.raises(InputError, match="RMLIB_AUTHORS_CODE"):
        authors.code_folder()
    with pytest.raises(InputError, match="does not exist"):
        authors.code_folder(str(tmp_path))
    (tmp_path / authors.PINNED["file"]).write_text("class RewardModel: pass\n")
    with pytest.raises(InputError, match="not the pinned"):
        authors.code_folder(str(tmp_path))
    assert hashlib.sha256(b"class RewardModel: pass\n").hexdigest() != authors.PINNED["sha256"]


def test_timed_process_keeps_the_last_stdout_line_apart_from_warnings():
    import sys

    proc = gpu_process.timed_process([sys.executable, "-c",
                                      "import sys; print('{\"a\": 1}'); print('a warning', file=sys.stderr)"])
    assert proc["rc"] == 0 and proc["last_stdout_line"] == '{"a": 1}' and proc["tail"][-1] == "a warning"
