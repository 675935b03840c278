"""The forward plan: decided once per loaded model, it alone says which forward runs and how calls are sized."""

import pathlib
import re

import numpy as np
import pytest

from rmlib.engine import plan
from rmlib.engine.kernel import ExpandedCache, LitePrefix, PackedSequence, SharedAttention, candidate_forwards
from rmlib.engine.scorers import Scorer
from tests.models_fixture import tiny

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("forward, device, kind, batch, budget, grow", [
    ("transformers", "cpu", "classifier", 64, 256, True),  # packed: grows for short candidates
    ("transformers", "cpu", "logprob", 64, None, False),
    ("lite", "cpu", "classifier", 512, 1536, False),
    ("lite", "cpu", "logprob", 512, 1536, False),
    ("transformers", "cuda", "classifier", 4096, 12288, False),
    ("lite", "cuda", "logprob", 4096, 12288, False),
    ("transformers", "mps", "classifier", 64, None, False),
    ("lite", "mps", "classifier", 512, None, False),
])
def test_plan_for_each_forward_device_and_kind(forward, device, kind, batch, budget, grow):
    p = plan.plan_for(forward, device, kind)
    assert (p.default_batch, p.budget, p.grow) == (batch, budget, grow)
    assert p.lite == (forward == "lite") and p.paper_mode == (forward != "lite") and p.halve_on_oom
    assert p.provenance == ("rmlib lite_llama" if forward == "lite" else "transformers")
    assert p.shared_attention(None) == (device == "cuda") and p.shared_attention(True) and not p.shared_attention(False)
    assert p.search_batch == (None if device == "cuda" else 512)  # a search's default batch (a scan on a CPU)


def test_a_search_scores_with_the_plans_batch_unless_its_config_names_one():
    from rmlib.engine.scorer_batches import search_batch_size

    scorer = tiny("llama-classifier")
    assert search_batch_size(scorer, None) == scorer.loaded.plan.search_batch == 512
    assert search_batch_size(scorer, 7) == 7


def test_chunk_size_counts_positions_of_the_default_batch():
    """Counted by hand: k candidates fit when k x (the k-th shortest length) <= the budget."""
    grow = plan.plan_for("transformers", "cpu", "classifier")  # 64, growing to 256 positions
    assert grow.chunk_size(np.full(1000, 3), 64) == 85  # 85 x 3 = 255
    assert grow.chunk_size(np.full(1000, 40), 64) == 64  # long: never below the batch
    assert grow.chunk_size(np.full(1000, 3), 64, sized=False) == 64  # a batch the caller gave
    shrink = plan.plan_for("lite", "cpu", "classifier")  # 512, keeping to 1,536 positions
    assert shrink.chunk_size(np.full(1000, 3), 512) == 512
    assert shrink.chunk_size(np.full(1000, 10), 512) == 153
    assert shrink.chunk_size(np.array([2] * 100 + [100] * 900), 512) == 100  # 101 x 100 > 1,536
    assert shrink.chunk_size(np.full(5, 1000), 512) == 1  # at least one
    assert shrink.lookahead(100) == 1536 and shrink.lookahead(4000) == 4000
    assert plan.plan_for("transformers", "cpu", "logprob").chunk_size(np.full(100, 1), 64) == 64


def test_a_loaded_models_plan_picks_its_kernels_forwards_and_the_scorers_batches():
    loaded = tiny("llama-classifier").loaded
    assert loaded.plan == plan.plan_for("transformers", "cpu", "classifier")
    assert loaded.plan is loaded.plan  # decided once
    assert [type(f) for f in candidate_forwards(loaded, True)] == [PackedSequence, ExpandedCache]
    assert [type(f) for f in candidate_forwards(loaded, True, shared_attention=True)] == [
        SharedAttention, PackedSequence, ExpandedCache]
    scorer = Scorer(loaded)
    length = 1 + len(scorer.frame("What is best?").suffix_ids)  # a single token and the suffix
    assert scorer.batch_size == 64 and scorer.token_slots("What is best?") == max(64, 256 // length)
    assert Scorer(loaded, batch_size=10).token_slots("What is best?") == 10
    lite = type("Lite", (), {"plan": plan.plan_for("lite", "cpu", "classifier")})()
    assert [type(f) for f in candidate_forwards(lite, True)] == [LitePrefix]


def test_lite_forward_is_read_in_one_place():
    """``LoadedModel.forward`` is read by the plan only: every other module asks the plan."""
    hits = []
    for path in sorted((ROOT / "rmlib").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\.forward\s*==|forward\s*==\s*\"lite\"", line):
                hits.append(f"{path.relative_to(ROOT)}:{n}")
    assert hits and {h.split(":")[0] for h in hits} == {"rmlib/engine/plan.py"}, hits
