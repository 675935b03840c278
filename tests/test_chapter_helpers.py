"""What the chapters call instead of their own cells: parameter checks, labels, the paper-score
loader, multi-model text scoring, GCG runs, report blocks and the hostile-string demo."""

import html

import numpy as np
import pandas as pd
import pytest

from rmlib.book import checks
from rmlib import registry
from rmlib.engine import gcg
from rmlib.tables import paper_scores, results
from rmlib.tables.store import PAPER_PROMPTS
from rmlib.viz import demo, reports
from rmlib.viz import html as rhtml

from .models_fixture import tiny

GREATEST, BEST, WORST = PAPER_PROMPTS["greatest"], PAPER_PROMPTS["best"], PAPER_PROMPTS["worst"]


@pytest.fixture
def shown(monkeypatch):
    """Everything the report blocks display, as HTML strings."""
    out = []

    def show(*objs):
        for o in objs:
            out.append(o.data if hasattr(o, "data") else o)

    monkeypatch.setattr(reports, "show", show)
    return out


# --------------------------------------------------------------------------- checks
def test_checks_raise_clear_errors():
    assert checks.trusted_model_kwargs(["a"], ["a", "b"]) == {"a": {"trust_remote_code": True}}
    with pytest.raises(ValueError, match=r"trust_remote_code names \['c'\]"):
        checks.trusted_model_kwargs(["c"], ["a"])
    assert checks.prompt_roles(["x", "y", "z"]) == {"x": "greatest", "y": "best", "z": "worst"}
    with pytest.raises(ValueError, match="exactly 3 prompts"):
        checks.prompt_roles(["x", "y"])
    with pytest.raises(ValueError, match="lengths must be a list"):
        checks.lists(lengths=3)
    with pytest.raises(ValueError, match="patience must be an integer >= 0"):
        checks.at_least(0, patience=-1)
    with pytest.raises(ValueError, match="lengths must be integers >= 1"):
        checks.at_least(1, lengths=[2, 0])
    with pytest.raises(ValueError, match="start_word must be a non-empty word"):
        checks.words(start_word="  ")
    with pytest.raises(ValueError, match="dtype must be one of"):
        checks.one_of("dtype", "int8", ("float32",))
    with pytest.raises(ValueError, match="base_models names"):
        checks.subset("base_models", ["q"], "models", ["a"])
    with pytest.raises(ValueError, match="both a policy and a reference"):
        checks.model_pair("tiny:llama-lm", "")
    assert checks.model_pair("", "") is False and checks.model_pair("tiny:llama-lm", "tiny:llama-lm") is True
    with pytest.raises(ValueError, match="families must be a mapping"):
        checks.mapping(families=["a"])
    assert checks.repository_path("data/x.dic").is_absolute()
    checks.nonempty(bases=["a"])
    checks.shares(fractions=[0.1, 1])
    with pytest.raises(ValueError, match="bases is empty"):
        checks.nonempty(bases=[])
    with pytest.raises(ValueError, match="must be a list"):
        checks.nonempty(bases="default")
    for bad in ([0.0, 1.0], [1.5], [True], ["0.5"], []):
        with pytest.raises(ValueError, match="fractions"):
            checks.shares(fractions=bad)


def test_labels():
    assert registry.short_label(BEST) == "best" and registry.short_label("Why?") == "Why?"
    paper = registry.paper_models()
    hub, nick = paper["hub_id"].iloc[0], paper["nickname"].iloc[0]
    assert registry.model_label(hub) == nick
    assert registry.model_label("google/gemma-3-270m") == "gemma-3-270m"
    assert registry.model_labels(["a/x", "b/x"]) == {"a/x": "a/x", "b/x": "b/x"}  # short names collide
    assert registry.model_labels(["a/x", hub]) == {"a/x": "x", hub: nick}


# --------------------------------------------------------------------------- paper scores
def _paper_csv(folder, hub_id, seed=0):
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({"token_id": [2, 0, 1], "token_name": ["<b>", "ĠNULL", "x"],
                        "token_decoded": ["<b>", " NULL", "x"], "greatest": rng.normal(size=3),
                        "best": rng.normal(size=3), "worst": rng.normal(size=3)})
    raw.to_csv(folder / f"{hub_id.replace('/', '--')}.csv", index=False)
    return raw


def test_paper_scores_reads_csvs_as_one_long_table(tmp_path):
    hub = registry.paper_models()["hub_id"].tolist()[:2]
    raws = [_paper_csv(tmp_path, h, seed=i) for i, h in enumerate(hub)]
    long = paper_scores.paper_scores(tmp_path)
    assert list(long.columns) == list(results.LONG_COLUMNS) and len(long) == 2 * 3 * 3
    got = long[(long["model"] == hub[1]) & (long["prompt"] == WORST)].sort_values("token_id")
    np.testing.assert_allclose(got["score"], raws[1].sort_values("token_id")["worst"], rtol=1e-3)  # float16
    assert got["decoded"].tolist() == [" NULL", "x", "<b>"]
    assert len(long.attrs["provenance"]) == 6 and {p["model_id"] for p in long.attrs["provenance"]} == set(hub)
    with pytest.raises(ValueError, match="leave `prompts` at its default"):
        paper_scores.paper_scores(tmp_path, [BEST])
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        paper_scores.paper_scores(tmp_path / "nope")
    (tmp_path / "someone--else.csv").write_text("token_id\n")
    with pytest.raises(ValueError, match="name it after one of the paper's RMs"):
        paper_scores.paper_scores(tmp_path)


def test_combine_refuses_a_table_given_twice(tmp_path):
    _paper_csv(tmp_path, registry.paper_models()["hub_id"].iloc[0])
    part = paper_scores.paper_scores(tmp_path)
    both = paper_scores.combine([part])
    assert both.attrs["provenance"] == part.attrs["provenance"] and len(both) == len(part)
    with pytest.raises(ValueError, match="give it once"):
        paper_scores.combine([part, part])
    with pytest.raises(ValueError, match="nothing to combine"):
        paper_scores.combine([])


# --------------------------------------------------------------------------- results additions
def test_common_token_sample_and_require_scorer():
    long = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 3, "prompt": "p", "token_id": [0, 1, 2, 3, 1, 2, 3],
                         "token": "t", "decoded": "t", "score": 0.0})
    s = results.common_token_sample(long, 2, seed=0)
    assert len(s) == 2 and set(s) <= {1, 2, 3} and list(s) == sorted(s)
    assert list(results.common_token_sample(long, 10)) == [1, 2, 3]
    long.attrs["provenance"] = [{"model_id": "a", "scorer": "logprob"}, {"model_id": "b", "scorer": "classifier"}]
    with pytest.raises(ValueError, match=r"\['b'\] are not scored by 'logprob'.*chapter 1"):
        results.require_scorer(long, "logprob", "score reward models in chapter 1")


def test_score_texts_models_scores_through_the_cache(tmp_path):
    texts = pd.Index(["pizza", "<b>x</b>", " the"], name="item")
    prompts = {"g": GREATEST, "b": BEST}
    scores, prov = results.score_texts_models(["tiny:llama-lm", "tiny:llama-classifier"], prompts, texts,
                                              cache_dir=tmp_path, progress=False,
                                              column=lambda model_id, kind: f"live {kind}")
    assert list(scores) == ["g", "b"] and scores["g"].index.equals(texts)
    assert list(scores["g"].columns) == ["live logprob", "live classifier"]
    direct = tiny("llama-lm").score_texts(BEST, list(texts))["score"].to_numpy()
    np.testing.assert_allclose(scores["b"]["live logprob"].to_numpy(), direct, rtol=1e-5, atol=1e-6)
    assert len(prov) == 4 and set(prov["scorer"]) == {"logprob", "classifier"} and (prov["items"] == 3).all()
    import rmlib

    assert (prov["rmlib"] == rmlib.__version__).all() and prov["dtype"].notna().all()  # provenance of each column
    assert len(list(tmp_path.glob("*__texts.parquet"))) == 4
    again, _ = results.score_texts_models(["tiny:llama-lm"], {"b": BEST}, texts, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(again["b"].iloc[:, 0].to_numpy(), scores["b"]["live logprob"].to_numpy())


# --------------------------------------------------------------------------- GCG runs
def test_search_both_runs_max_then_min_from_the_repeated_word():
    scorer = tiny("llama-classifier")
    ids = gcg.repeated_word_ids(scorer.tokenizer, "x", 2)
    assert len(ids) == 2 and scorer.tokenizer.decode(ids).replace(" ", "") == "xx"
    config = gcg.GCGConfig(num_steps=2, search_width=8, topk=8, ascii_only=True)
    res = gcg.search_both(scorer, [BEST], [2], config, "x")
    assert [r.maximize for r in res] == [True, False] and all(r.start_ids == ids for r in res)
    assert res[0].best_score >= res[0].start_score and res[1].best_score <= res[1].start_score
    assert gcg.retokenizes(res, scorer.tokenizer) == [
        scorer.tokenizer(r.best_text, add_special_tokens=False).input_ids == r.best_ids for r in res]


def test_gcg_report_blocks(shown):
    scorer = tiny("llama-classifier")
    res = gcg.search_both(scorer, [BEST], [2], gcg.GCGConfig(num_steps=1, search_width=4, topk=4), "x")
    table = reports.gcg_results(res, scorer.tokenizer, registry.short_label, "cap")
    assert table["prompt"].tolist() == ["best", "best"] and "re-tokenizes" in table.columns
    check = reports.rescored(scorer, res, 1.23)
    assert check.iloc[0]["searches"] == 2 and check.iloc[0]["max |reported - rescored|"] < 1e-4
    assert check.iloc[0]["total seconds"] == 1.2
    facts = reports.scorer_facts(scorer, BEST)
    assert facts.iloc[0]["scorer"] == "classifier"
    assert any("random weights" in s for s in shown)


# --------------------------------------------------------------------------- report blocks
def _long():
    long = demo.hostile_scores(["tiny:m", "other"], [GREATEST, BEST], seed=1)
    long.attrs["provenance"] = [{"model_id": m, "revision": "r", "scorer": s, "dtype": "float32", "mode": "token",
                                 "prompt": p} for m, s in (("tiny:m", "logprob"), ("other", "classifier"))
                                for p in (GREATEST, BEST)]
    return long


def test_scored_models_and_notes_escape(shown):
    facts = reports.scored_models(_long(), [GREATEST, BEST], registry.short_label)
    assert facts["model_id"].tolist() == ["tiny:m", "other"] and facts["prompts"].tolist() == [2, 2]
    assert facts["tokens"].tolist() == [len(demo.VOCAB)] * 2
    text = "\n".join(shown)
    assert "is a language model" in text and "random weights" in text and "<td>best</td>" in text
    shown.clear()
    reports.scorer_notes(pd.DataFrame([{"model_id": "<script>x</script>", "scorer": "logprob"}]))
    assert "<script>" not in shown[0] and "&lt;script&gt;" in shown[0]


def test_shared_views_and_moments(shown):
    long = _long()
    shared = reports.shared_views(long, [GREATEST, BEST], registry.short_label)
    assert list(shared) == [GREATEST, BEST] and list(shared[BEST].columns) == ["tiny:m", "other"]
    moments = reports.shared_moments(shared, 3, registry.short_label)
    assert set(moments["view"]) == {"greatest", "best"} and (moments["n"] == len(shared[BEST])).all()
    assert all("<script>" not in s.replace("&lt;script&gt;", "") for s in shown)


def test_mode_comparison_by_hand(shown):
    modes = pd.DataFrame({"model": "m", "token_id": [0, 1, 2], "token": "t", "decoded": ["a", "b", "c"],
                          "roundtrips": [True, False, True], "token_mode": [1.0, 2.0, 3.0],
                          "paper_mode": [1.0, 2.5, 3.0]}).assign(delta=lambda d: d["paper_mode"] - d["token_mode"])
    compare = reports.mode_comparison(modes, {"m": "logprob"}, "cap").iloc[0]
    assert compare["re-tokenizes differently"] == 1 and compare["max |Δ|"] == 0.5 and compare["|Δ| > 1e-4"] == 1
    assert compare["Kendall τ"] == pytest.approx(1.0)
    assert any("1 of the 3 sampled tokens (33.3%)" in s for s in shown)


def test_mode_comparison_note_follows_the_measured_bos_counts(shown):
    """Gemma: BOS once in mode token, twice (template + tokenizer) in mode paper; the note says so."""
    modes = pd.DataFrame({"model": ["gem"] * 3 + ["smol"] * 3, "token_id": [0, 1, 2] * 2, "token": "t",
                          "decoded": ["a", "b", "c"] * 2, "roundtrips": True, "token_mode": [1.0, 2.0, 3.0] * 2,
                          "paper_mode": [1.5, 2.7, 3.6, 1.0, 2.0, 3.0], "bos_token_mode": [1] * 3 + [3] * 3,
                          "bos_paper_mode": [2] * 3 + [3] * 3}).assign(delta=lambda d: d["paper_mode"] - d["token_mode"])
    reports.mode_comparison(modes, {"gem": "logprob", "smol": "classifier"}, "cap")
    text = html.unescape("\n".join(shown))
    assert "gem: mode 'token' gives the model 1 BOS token(s) before the prompt, the paper's re-tokenized text 2" in text
    assert "3 of 3 sampled scores move (median |Δ| 0.6)" in text
    assert "gem is scored by log-probability and both modes give it the same prefix" not in text
    assert "smol is a reward model and both modes start its input the same way: the 0 of 3" in text


def test_commands_and_paper_command_escape():
    cmd = reports.paper_command("03", "-p paper_method true")
    paper = registry.paper_models()
    assert cmd.startswith("python -m rmlib.book chapter 03 -p models '[") and all(h in cmd for h in paper["hub_id"])
    assert cmd.endswith("-p vocab_slice '' -p paper_method true")
    assert "vocab_slice" not in reports.paper_command("05")
    html = reports.commands(["echo '<b>'", "ls"]).data
    assert html == "<pre>" + rhtml.escape("echo '<b>'\nls") + "</pre>"


def test_implicit_reward_without_a_pair_shows_the_commands(shown):
    assert reports.implicit_reward("", "", [BEST]) is None
    assert any("SmolLM2-135M-Instruct -p reference" in s for s in shown)


def test_implicit_reward_goes_through_the_cache(shown, tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path))
    families = {"tiny:llama-lm": "llama-arch"}
    implicit = reports.implicit_reward("tiny:llama-lm", "tiny:llama-lm", [BEST], slice(0, 50), families)
    name = "tiny:llama-lm − tiny:llama-lm"
    assert set(implicit["model"]) == {name} and families[name] == "llama-arch (implicit reward)"
    np.testing.assert_allclose(implicit["score"], 0.0, atol=1e-5)  # a model against itself: no reward
    assert any("Implicit-reward provenance" in s for s in shown)


# --------------------------------------------------------------------------- demo
def test_demo_vocabulary_and_random_scorer():
    long = demo.hostile_scores(["a", "b"], ["p"], seed=0)
    assert len(long) == 2 * len(demo.VOCAB) and long["decoded"].tolist()[:len(demo.HOSTILE)] == demo.HOSTILE
    again = demo.hostile_scores(["a", "b"], ["p"], seed=0)
    pd.testing.assert_frame_equal(long, again)
    s = demo.RandomScorer("a")
    t1, t2 = s.score_tokens("p"), s.score_tokens("p")
    pd.testing.assert_frame_equal(t1, t2)
    assert list(t1.columns) == ["token_id", "token", "decoded", "score"] and len(t1) == len(demo.VOCAB)


def test_lm_panel_correlates_each_model_with_the_lm(shown):
    from scipy.stats import kendalltau

    long = _long()
    mine = long[(long["model"] == "tiny:m") & (long["prompt"] == GREATEST)]
    lm = mine.assign(model="LM", score=-mine["score"])  # the reversed ranking: tau -1 with tiny:m
    out = reports.lm_panel(long, lm, 3).set_index("model")
    assert list(out.index) == ["tiny:m", "other"] and out.loc["tiny:m", "kendall_tau"] == pytest.approx(-1.0)
    w = results.wide(pd.concat([long[(long["model"] == "other") & (long["prompt"] == GREATEST)], lm]),
                     by="decoded", prompt=GREATEST)
    assert out.loc["other", "shared"] == len(w)
    assert out.loc["other", "kendall_tau"] == pytest.approx(kendalltau(w["other"], w["LM"])[0])
    assert any("the language model LM" in s for s in shown)


def test_scorer_source_says_what_made_the_scores():
    assert reports.scorer_source("default", "logprob").startswith("language model log-probability")
    assert reports.scorer_source("org/rm", None) == "the paper's released scores"
    assert reports.scorer_source("org/rm", "classifier") == "reward model score (classifier)"
