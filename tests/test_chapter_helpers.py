"""What the chapters call instead of their own cells: parameter checks, labels, the paper-score
loader, multi-model text scoring, GCG runs, report blocks and the hostile-string demo."""


import dataclasses

import numpy as np
import pandas as pd
import pytest

from rmlib.book import checks
from rmlib import registry
from rmlib.engine import gcg
from rmlib.engine.search_config import SearchConfig
from rmlib.runs import scoring
from rmlib.tables import paper_scores, results
from rmlib.prompts import PAPER_PROMPTS
from rmlib.viz import demo

from .models_fixture import tiny

GREATEST, BEST, WORST = PAPER_PROMPTS["greatest"], PAPER_PROMPTS["best"], PAPER_PROMPTS["worst"]


# --------------------------------------------------------------------------- checks
def test_checks_raise_clear_errors():
    assert checks.trusted_model_kwargs(["a"], ["a", "b"]) == {"a": {"trust_remote_code": True}}
    with pytest.raises(ValueError, match=r"trust_remote_code names \['c'\]"):
        checks.trusted_model_kwargs(["c"], ["a"])
    assert checks.prompt_roles(["x", "y", "z"]) == {"x": "greatest", "y": "best", "z": "worst"}
    with pytest.raises(ValueError, match="exactly 3 non-empty prompts"):
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


def test_declared_rules_check_numbers_choices_and_kinds():
    values = {"lo": 0.5, "hi": 2.0, "n": 3, "ns": [1, 2], "dtype": "", "m": ["kendall"], "rms": ["tiny:llama-classifier"],
              "trusted": [], "some": ["tiny:llama-classifier"], "prompts": ["Great?", "Best?", "Worst?"],
              "lms": ["tiny:llama-lm"], "some_rms": ["tiny:llama-classifier"], "any": ["tiny:llama-lm"]}
    rules = {"lo": "number > 0", "hi": "number > lo", "n": "int >= 1 <= 3", "ns": "ints >= 1",
             "dtype": 'one of "" float32', "m": "each of kendall rbo", "rms": "reward models",
             "trusted": "in rms", "some": "in rms", "prompts": "role prompts",
             "lms": "some language models", "some_rms": "some reward models", "any": "some models"}
    checks.declared(rules, values)  # all kept
    bad = [("hi", 0.5, r"parameter 'hi' must be a finite number > lo \(0.5\), got 0.5"),
           ("hi", float("inf"), r"'hi' must be a finite number > lo"),
           ("lo", float("nan"), r"'lo' must be a finite number > 0, got nan"),
           ("n", 4, r"parameter 'n' must be an integer >= 1 and <= 3, got 4"),
           ("n", 2.0, r"'n' must be an integer"), ("n", True, r"'n' must be an integer"),
           ("ns", [], r"'ns' must be a list of integers >= 1 \(at least one\)"),
           ("ns", [1, 0], r"'ns' must be a list of integers >= 1, got \[1, 0\]"),
           ("dtype", "float64", r"'dtype' must be one of \['', 'float32'\]"),
           ("m", ["kendall", "pearson"], r"'m' must be a list of \['kendall', 'rbo'\]"),
           ("rms", ["tiny:llama-lm"], r"'rms': 'tiny:llama-lm' is a language model"),
           ("trusted", ["org/other"], r"trusted names \['org/other'\], which are not in rms"),
           ("some", "org/other", r"some names \['org/other'\], which are not in rms"),
           ("prompts", ["Great?", "Best?"], r"'prompts' must be a list of exactly 3 non-empty prompts, in the roles"),
           ("prompts", ["Great?", " ", "Worst?"], r"'prompts' must be a list of exactly 3 non-empty prompts"),
           ("prompts", "Great?", r"'prompts' must be a list of exactly 3"),
           ("lms", [], r"'lms' must be at least one language model, got \[\]"),
           ("lms", ["tiny:llama-classifier"], r"'lms': 'tiny:llama-classifier' is a reward model"),
           ("some_rms", [], r"'some_rms' must be at least one reward model, got \[\]"),
           ("some_rms", ["tiny:llama-lm"], r"'some_rms': 'tiny:llama-lm' is a language model"),
           ("any", [], r"'any' must be at least one model spec \(non-empty strings\), got \[\]"),
           ("any", ["tiny:llama-lm", " "], r"'any' must be at least one model spec")]
    for name, value, message in bad:
        with pytest.raises(ValueError, match=message):
            checks.declared(rules, {**values, name: value})
    names = set(values)
    assert checks.rule_problem("int >= 1 <= 3", names) is None
    assert "not a rule" in checks.rule_problem("integer >= 1", names)
    assert "neither a number nor a parameter" in checks.rule_problem("number > nowhere", names)
    assert "pairs OP BOUND" in checks.rule_problem("int = 1", names)
    assert checks.rule_problem("in rms", names) is None
    assert "names one other parameter" in checks.rule_problem("in nowhere", names)
    assert "names one other parameter" in checks.rule_problem("in rms m", names)


def test_every_chapter_declares_sound_rules_its_defaults_keep():
    from rmlib.book.chapters import find_chapters, notebook_parameters, parameter_rules, tiny_parameters, \
        validate_parameters

    for number, path in find_chapters().items():
        names = notebook_parameters(path)
        rules = parameter_rules(path)
        assert rules, number
        for name, rule in rules.items():
            assert name in names, (number, name)
            assert checks.rule_problem(rule, names) is None, (number, rule)
        validate_parameters(path, {})  # the defaults keep every rule
        validate_parameters(path, tiny_parameters(path))  # and so do the tiny test parameters


@pytest.mark.parametrize("key, name", [("01", "models"), ("02", "models"), ("09", "reward_models"),
                                       ("09", "reference_models")])
def test_a_chapter_that_needs_a_model_refuses_an_empty_list_before_it_starts(key, name):
    """Chapters 1, 2 and 9 score their models in their first cells: an empty list is refused by the
    parameter check, not after the chapter has loaded and trained its other models."""
    from rmlib.book.chapters import ParameterError, find_chapters, validate_parameters

    with pytest.raises((ParameterError, ValueError), match=f"'{name}' must be at least one"):
        validate_parameters(find_chapters()[key], {name: []})


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
    scores, prov = scoring.score_texts_models(["tiny:llama-lm", "tiny:llama-classifier"], prompts, texts,
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
    again, _ = scoring.score_texts_models(["tiny:llama-lm"], {"b": BEST}, texts, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(again["b"].iloc[:, 0].to_numpy(), scores["b"]["live logprob"].to_numpy())


# --------------------------------------------------------------------------- GCG runs
def test_gcg_runs_from_the_repeated_word_in_both_directions():
    scorer = tiny("llama-classifier")
    ids = gcg.repeated_word_ids(scorer.tokenizer, "x", 2)
    assert len(ids) == 2 and scorer.tokenizer.decode(ids).replace(" ", "") == "xx"
    config = SearchConfig(allowed="ascii", num_steps=2, search_width=8, topk=8)
    res = [gcg.descend(scorer, BEST, ids, dataclasses.replace(config, maximize=mx)) for mx in (True, False)]
    assert [r.maximize for r in res] == [True, False] and all(r.start_ids == ids for r in res)
    assert res[0].best_score >= res[0].start_score and res[1].best_score <= res[1].start_score
    assert gcg.retokenizes(res, scorer.tokenizer) == [
        scorer.tokenizer(r.best_text, add_special_tokens=False).input_ids == r.best_ids for r in res]


# --------------------------------------------------------------------------- report blocks
def _long():
    long = demo.hostile_scores(["tiny:m", "other"], [GREATEST, BEST], seed=1)
    long.attrs["provenance"] = [{"model_id": m, "revision": "r", "scorer": s, "dtype": "float32", "mode": "token",
                                 "prompt": p} for m, s in (("tiny:m", "logprob"), ("other", "classifier"))
                                for p in (GREATEST, BEST)]
    return long


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
    # the same in another process (Python salts hash() per process; the book's page must not change)
    import subprocess
    import sys
    code = "from rmlib.viz import demo; print(repr(float(demo.RandomScorer('a').score_tokens('p')['score'].iloc[0])))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert float(other) == float(t1["score"].iloc[0])
    assert not t1["score"].equals(demo.RandomScorer("b").score_tokens("p")["score"])

