"""General functions the token chapters (optimal tokens, heterogeneity) call on the page.

Each is checked against a computation written out here: overlap of top lists,
agreement within and between groups, the outer join of vocabularies, MDS
stress-1, the provenance table, HTML cells and small-multiple heatmaps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rmlib import stats
from rmlib.stats import summaries
from rmlib.tables.vocabulary import shared_vocabulary
from rmlib.tables import provenance
from rmlib.viz import charts, html as rhtml


def _long(scores: dict) -> pd.DataFrame:
    """{(model, prompt): [scores of tokens 0..n-1]} -> a long score table."""
    rows = [{"model": m, "prompt": p, "token_id": i, "decoded": f"w{i}", "score": s}
            for (m, p), values in scores.items() for i, s in enumerate(values)]
    return pd.DataFrame(rows)


def test_prompt_overlap_counts_shared_top_and_bottom_items():
    long = _long({("a", "best"): [5, 4, 3, 2, 1], ("a", "worst"): [1, 4, 5, 2, 3],
                  ("b", "best"): [1, 2, 3, 4, 5], ("b", "worst"): [1, 2, 3, 4, 5]})
    top = stats.prompt_overlap(long, "best", "worst", 2)
    # a: best's top 2 = w0, w1; worst's top 2 = w2, w1 -> shared w1
    assert top.set_index("model").loc["a", ["n", "shared", "items"]].tolist() == [2, 1, ["w1"]]
    assert top.set_index("model").loc["b", ["shared", "items"]].tolist() == [2, ["w4", "w3"]]
    bottom = stats.prompt_overlap(long, "best", "worst", 2, end="bottom")
    # a: best's bottom 2 = w4, w3; worst's bottom 2 = w0, w3 -> shared w3
    assert bottom.set_index("model").loc["a", "items"] == ["w3"]
    with pytest.raises(ValueError, match="end"):
        stats.prompt_overlap(long, "best", "worst", 2, end="middle")
    with pytest.raises(ValueError, match="no column"):
        stats.prompt_overlap(long.drop(columns="decoded"), "best", "worst")
    # a prompt the table does not hold is a typo: named, with the prompts it holds, not an empty answer
    for f in (lambda: stats.prompt_overlap(long, "best", "wrost", 2), lambda: stats.prompt_taus(long, "best", "wrost")):
        with pytest.raises(ValueError, match=r"no rows for prompt 'wrost'; the table's prompts: \['best', 'worst'\]"):
            f()


def test_pair_groups_means_match_the_pairs_by_hand():
    names = ["a1", "a2", "b1", "b2", "b3"]
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (5, 5))
    x = (x + x.T) / 2
    np.fill_diagonal(x, 1.0)
    m = pd.DataFrame(x, index=names, columns=names)
    out = summaries.pair_groups(m, {n: n[0].upper() for n in names}).set_index("groups")
    assert list(out.index) == ["A", "A / B", "B"]
    assert out.loc["A", "pairs"] == 1 and out.loc["A", "mean"] == pytest.approx(m.loc["a1", "a2"])
    between = [m.loc[a, b] for a in ("a1", "a2") for b in ("b1", "b2", "b3")]
    assert out.loc["A / B", "pairs"] == 6
    assert out.loc["A / B", "mean"] == pytest.approx(np.mean(between))
    assert out.loc["A / B", "lowest"] == pytest.approx(min(between))
    within_b = [m.loc["b1", "b2"], m.loc["b1", "b3"], m.loc["b2", "b3"]]
    assert out.loc["B", "highest"] == pytest.approx(max(within_b))


def test_shared_vocabulary_outer_keeps_each_pairs_strings():
    t1 = pd.DataFrame({"decoded": ["x", "y", "z"], "score": [1.0, 2.0, 3.0]})
    t2 = pd.DataFrame({"decoded": ["y", "z", "q", "q"], "score": [5.0, 6.0, 7.0, 8.0]})
    inner = shared_vocabulary({"a": t1, "b": t2})
    assert list(inner.index) == ["y", "z"]
    outer = shared_vocabulary({"a": t1, "b": t2}, how="outer")
    assert set(outer.index) == {"x", "y", "z", "q"}
    assert np.isnan(outer.loc["x", "b"]) and outer.loc["x", "a"] == 1.0
    assert np.isnan(outer.loc["q", "b"])  # duplicated in b: dropped from b only
    with pytest.raises(ValueError, match="how"):
        shared_vocabulary({"a": t1}, how="left")


def test_mds_stress_one_matches_kruskal_formula():
    names = list("abcd")
    tau = pd.DataFrame([[1, .8, .2, .1], [.8, 1, .3, .2], [.2, .3, 1, .7], [.1, .2, .7, 1]],
                       index=names, columns=names, dtype=float)
    facts = pd.DataFrame({"nickname": names, "family": ["x", "x", "y", "y"]})
    coords, stress = summaries.mds_maps({"p": tau}, facts, seed=0)
    c = coords["p"][["dim1", "dim2"]].to_numpy()
    iu = np.triu_indices(4, 1)
    dist = np.linalg.norm(c[:, None] - c[None], axis=-1)[iu]
    d = 1 - tau.to_numpy()[iu]
    raw = float(stress.loc[0, "stress"])
    assert raw == pytest.approx(((dist - d) ** 2).sum(), rel=1e-3, abs=1e-6)
    assert stress.loc[0, "stress-1"] == pytest.approx(np.sqrt(raw / (d ** 2).sum()))
    assert stress.loc[0, "rms misfit"] == pytest.approx(np.sqrt(raw / 6))
    assert stress.loc[0, "mean distance"] == pytest.approx(d.mean())




def test_provenance_table_one_row_per_model():
    long = _long({("m/a", "p1"): [1, 2, 3], ("m/a", "p2"): [1, 2], ("m/b", "p1"): [3, 4]})
    base = {"revision": "abc", "scorer": "classifier", "mode": "token", "dtype": "float32", "rmlib_version": "0.1",
            "prefix_text": "<user>Q</user>\n<assistant>", "suffix_text": "</assistant>"}
    long.attrs["provenance"] = [{"model_id": "m/a", **base}, {"model_id": "m/a", **base},
                                {"model_id": "m/b", **base, "revision": "def"}]
    table = provenance.provenance_table({"tokens": long})
    assert list(table["model"]) == ["m/a", "m/b"] and list(table["data"]) == ["tokens", "tokens"]
    row = table.iloc[0]
    assert (row["prompts"], row["items"]) == (2, 3)  # p1 holds 3 tokens, p2 2: the most per prompt
    assert row["scorer"] == "classifier, token, float32"
    assert row["answer in template"] == "<assistant>" + provenance.ANSWER + "</assistant>"
    assert table.iloc[1]["revision"] == "def"
    with pytest.raises(ValueError, match="attrs"):
        provenance.provenance_table({"x": long.copy().pipe(lambda d: setattr(d, "attrs", {}) or d)})
    assert provenance.score_kind(long) == "reward model score"


def test_html_table_leaves_missing_cells_empty_and_wraps_named_columns():
    df = pd.DataFrame({"a": ["x", None], "b": [1.5, np.nan], "c": ["long text", "more"]})
    out = rhtml.escape_table(df, wrap=["c"])
    assert "None" not in out and "nan" not in out.lower().replace("rmlib", "")
    assert out.count('<td class="rmlib-wrap">') == 2
    with pytest.raises(ValueError, match="wrap"):
        rhtml.escape_table(df, wrap=["zz"])


def test_heatmap_small_multiples_are_a_facet_of_the_named_matrices():
    m = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["a", "b"], columns=["a", "b"])
    chart = charts.heatmap({"one": m, "two": m * 0}, columns=2, text=False, value_name="sim")
    spec = chart.to_dict()
    assert spec["columns"] == 2 and spec["facet"]["sort"] == ["one", "two"]
    with pytest.raises(ValueError, match="dict"):
        charts.heatmap(m, columns=2)


# --- finding templates ---------------------------------------------------------------------------------

