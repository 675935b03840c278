"""Chapter 5's comparison: the per-prompt shortlist, the four-method rows and their report.

The shortlist must hold the tokens whose single scores are planted best and worst (a reward
linear in the tokens, ``LinearRM``), and be the same for the same seed; each comparison row
must agree with its SearchResults and with fresh re-scores; the single-swap statements must
match the results' checks.
"""

import numpy as np
import pandas as pd
import pytest

from rmlib.engine import gcg
from rmlib.engine import search as S
from rmlib.viz import reports, search_report
from tests.test_gcg import PROMPT, linear_scorer
from tests.test_search import rugged, small_vocab


@pytest.fixture
def shown(monkeypatch):
    out = []
    monkeypatch.setattr(reports, "show", lambda *objs: out.extend(getattr(o, "data", o) for o in objs))
    return out


def test_shortlist_holds_the_planted_best_and_worst_tokens_and_is_seeded():
    scorer, model = linear_scorer()
    allowed = S.allowed_ids(scorer)
    pool = allowed[::7]
    u = model.u()
    top = int(pool[np.argmax(u[pool])])
    planted_low = int(pool[len(pool) // 3])
    model.set_value(planted_low, u.min() - 10.0)  # the single worst token, by construction
    sl = S.build_shortlist(scorer, PROMPT, k=3, n_random=5, pool=pool, seed=4)
    assert top in sl.ids and planted_low in sl.ids and len(sl.ids) == 3 + 3 + 5
    order = pool[np.argsort(-model.u()[pool], kind="stable")]
    assert set(order[:3]) | set(order[-3:]) <= set(sl.ids.tolist())
    assert set(sl.ids.tolist()) <= set(pool.tolist()) and sl.pool_size == len(pool)
    assert sl.singles["token_id"].iloc[0] == top and sl.singles["token_id"].iloc[-1] == planted_low
    assert sl.singles["score"].is_monotonic_decreasing and len(sl.singles) == len(sl.ids)
    assert sl.singles["text"].iloc[0] == scorer.tokenizer.decode([top])
    again = S.build_shortlist(scorer, PROMPT, k=3, n_random=5, pool=pool, seed=4)
    other = S.build_shortlist(scorer, PROMPT, k=3, n_random=5, pool=pool, seed=5)
    assert again.ids.tolist() == sl.ids.tolist()
    assert other.ids.tolist() != sl.ids.tolist()  # only the random part differs
    assert set(order[:3]) | set(order[-3:]) <= set(other.ids.tolist())
    # A seeded sample of the allowed vocabulary as the pool: the same sample for the same seed.
    a = S.build_shortlist(scorer, PROMPT, k=2, n_random=2, sample=200, seed=1)
    b = S.build_shortlist(scorer, PROMPT, k=2, n_random=2, sample=200, seed=1)
    assert a.ids.tolist() == b.ids.tolist() and a.pool_size == 200 and a.n_allowed == len(allowed)
    assert "sample of 200" in a.description and "seed 1" in a.description and "2 best and 2 worst" in a.description
    with pytest.raises(ValueError, match="k must be an int"):
        S.build_shortlist(scorer, PROMPT, k=0, pool=pool)


def test_comparison_rows_agree_with_their_search_results_and_rescores(shown):
    scorer = rugged()
    results, shortlists = [], []
    table = S.comparison_table(scorer, [PROMPT], lengths=(2,), restarts=2, results=results, shortlists=shortlists,
                               shortlist=dict(k=10, n_random=10, pool=small_vocab(scorer, 200)),
                               gcg=gcg.GCGConfig(num_steps=2, search_width=8, topk=8))
    assert len(table) == len(results) == 2 and len(shortlists) == 1
    sl = shortlists[0]
    for row, res in zip(table.to_dict(orient="records"), results):
        sign = 1 if row["direction"] == "max" else -1
        assert row["n_tokens"] == len(sl.ids)
        assert row["single_score"] == pytest.approx(sl.singles["score"].iloc[0 if sign > 0 else -1])
        best = sign * max(sign * row[f"{m}_score"] for m in ("gcg", "sweep", "both"))
        for m in ("gcg", "sweep", "both"):
            r = res[m]
            assert row[f"{m}_ids"] == r.best_ids and row[f"{m}_score"] == r.best_score
            assert set(r.best_ids) <= set(sl.ids.tolist())
            assert row[f"{m}_score"] == scorer.sequence_scores(PROMPT, [r.best_ids])[0]  # re-score equality
            assert row[f"{m}_gap"] == pytest.approx(sign * (best - r.best_score)) and row[f"{m}_gap"] >= 0
            assert row[f"{m}_single_swap_optimal"] == r.local_optimum
            stmt = row[f"{m}_statement"]
            if r.local_optimum:
                assert stmt == f"single-swap optimal over the {len(sl.ids)}-token shortlist"
            else:
                swap = r.better_swap
                assert stmt.startswith(f"not optimal: a swap at position {swap['position'] + 1} to ")
                assert sign * (scorer.sequence_scores(PROMPT, [swap["ids"]])[0] - r.best_score) > 0
        assert res["both"].start_ids == res["gcg"].best_ids  # the polish starts at GCG's best
        assert sign * (row["both_score"] - row["gcg_score"]) >= -1e-6
        assert row["both_candidates"] == (res["gcg"].candidates_scored + res["both"].candidates_scored
                                          + res["both"].check_candidates)
        assert row["sweep_single_swap_optimal"] is True
    long = search_report.comparison_view(table)
    assert len(long) == 4 * len(table) and set(long["method"]) == set(search_report.METHOD_NAMES.values())
    assert long.loc[long["method"] == "GCG", "score"].tolist() == table["gcg_score"].tolist()
    out = search_report.comparison_findings(table)
    reached = sum(sign * (g - s) >= -1e-4 * max(1, abs(s)) for sign, g, s in
                  zip(np.where(table["direction"] == "max", 1, -1), table["gcg_score"], table["sweep_score"]))
    assert out[0].startswith(f"GCG alone reached the coordinate sweeps' score in {reached} of 2 searches")
    assert len(search_report.gcg_runs(results)) == 2
    shown_sl = search_report.shortlist_table(shortlists)
    assert shown_sl["tokens"].tolist() == [len(sl.ids)] and shown_sl["scored as singles"].tolist() == [200]


def test_swap_statement_for_a_result_that_is_not_optimal():
    scorer = rugged()
    vocab = small_vocab(scorer, 200)
    cfg = S.SearchConfig(method="gcg", length=3, init="random", seed=2, gcg=gcg.GCGConfig(num_steps=1, search_width=2, topk=2))
    r = S.search(scorer, PROMPT, cfg, vocabulary=vocab)
    assert r.local_optimum is False
    d = r.better_swap["score"] - r.best_score
    assert S.swap_statement(r, len(vocab), scorer.tokenizer) == (
        f"not optimal: a swap at position {r.better_swap['position'] + 1} to {r.better_swap['token']!r} "
        f"improves by {d:.3g}")


def test_comparison_table_rejects_both_a_shortlist_and_a_vocabulary():
    scorer = rugged()
    with pytest.raises(ValueError, match="either shortlist"):
        S.comparison_table(scorer, [PROMPT], shortlist={"k": 2}, vocabulary=[1, 2, 3])


def test_comparison_view_escapes_vocabulary_strings(shown):
    row = {"prompt": "<i>p</i>", "length": 2, "direction": "max", "single_text": "<script>", "single_score": 1.0}
    for m in ("gcg", "sweep", "both"):
        row.update({f"{m}_text": " <b>x</b>", f"{m}_score": 2.0, f"{m}_gap_pct": 0.0, f"{m}_candidates": 10,
                    f"{m}_seconds": 0.5, f"{m}_statement": "not optimal: a swap at position 1 to '<img>' improves by 1"})
    search_report.comparison_view(pd.DataFrame([row]))
    page = "".join(str(s) for s in shown)
    assert "<script>" not in page and "<b>" not in page and "<img>" not in page and "<i>" not in page
    assert "&lt;script&gt;" in page and "␣&lt;b&gt;x&lt;/b&gt;" in page
