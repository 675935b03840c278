"""rmlib.tables.lexicons: VADER's lexicon read from the installed package file; the identity terms."""

import hashlib
import importlib.util

import pytest

from rmlib.errors import DataFileError
from rmlib.stats import lexical
from rmlib.tables import lexicons


def test_vader_is_read_from_the_installed_package():
    path = lexicons.vader_path()
    spec = importlib.util.find_spec("vaderSentiment")
    assert path.parent.samefile(next(iter(spec.submodule_search_locations)))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == lexicons.VADER_SHA256
    v = lexicons.vader_lexicon()
    assert v.attrs["source"] == str(path) and v.attrs["n_lines"] == 7520
    assert v.name == "vader" and v.index.is_unique and len(v) == 7520 - 14
    # known words, as printed in the file (mean of ten ratings, -4..+4)
    assert (v["good"], v["bad"], v["love"], v["hate"], v["great"]) == (1.9, -2.5, 3.2, -2.7, 3.1)
    assert v["lol"] == 1.8 and v["ok"] == 1.2  # listed twice: the later line, as VADER's analyser keeps
    assert v.between(-4, 4).all() and v.attrs["sd"]["love"] == 0.4


def test_vader_scores_tokens_with_the_lexical_functions():
    import pandas as pd

    table = pd.DataFrame({"token_id": range(5), "decoded": [" good", "Bad", "love", "table", " hate"],
                          "score": [2.0, -1.0, 3.0, 0.0, -2.0]})
    m = lexical.match_lexicon(table, lexicons.vader_lexicon())
    assert dict(zip(m["decoded"], m["vader"])) == {" good": 1.9, "Bad": -2.5, "love": 3.2, " hate": -2.7}
    slopes = lexical.valence_slopes(table, lexicons.vader_lexicon())
    assert slopes.loc["positive", "n"] == 2 and slopes.loc["negative", "n"] == 2


def test_vader_errors_name_the_fix(tmp_path, monkeypatch):
    bad = tmp_path / "vader_lexicon.txt"
    bad.write_text("good\t1.9\t0.9\t[1]\nbroken line\n")
    with pytest.raises(DataFileError, match=":2: expected"):
        lexicons.vader_lexicon(bad)
    ok = tmp_path / "small.txt"
    ok.write_text("good\t1.9\t0.9\t[1]\r\nbad\t-2.5\t0.7\t[-2]\r\n")
    assert lexicons.vader_lexicon(ok).to_dict() == {"good": 1.9, "bad": -2.5}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DataFileError, match="pip install vaderSentiment==3.3.2"):
        lexicons.vader_lexicon()


def test_identity_terms_come_with_their_source():
    from rmlib import resources

    folder = resources.path("identity_terms")
    readme = (folder / "README.md").read_text()
    assert "Dixon" in readme and "Apache License" in readme and "f16bec729237b8089db7b7bdc57a44c6caff5532" in readme
    terms = lexicons.identity_terms()
    assert len(terms) == len(set(terms)) == 50 and all(t == t.lower() for t in terms)
    assert {"gay", "black", "muslim", "jewish", "deaf"} <= set(terms)
