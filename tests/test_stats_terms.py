"""rmlib.stats.terms: the stated rule that says which texts name a term, on hand-made items."""

import pytest

from rmlib.errors import InputError
from rmlib.stats import terms

ITEMS = ["Black people", "Black hole", "Gays Against Groomers", "Jewish-American cuisine", "Gay",
         "Transgender youth", "Homosexuals", "Middle Eastern food", "Young Sheldon", "Straightforward",
         "Lesbian (song)", "gay men", "Gayness", "American football", "Older"]
TERMS = ["black", "gay", "jewish", "american", "transgender", "homosexual", "middle eastern", "young", "straight",
         "lesbian", "old"]


def matched(rule, **kw):
    out = terms.term_matches(ITEMS, TERMS, rule=rule, **kw)
    return {(r.text, r.term, r.form) for r in out.itertuples()}


def test_word_rule_whole_words_any_case_and_plurals():
    got = matched("word")
    assert got == {
        ("Black people", "black", "black"), ("Black hole", "black", "black"),
        ("Gays Against Groomers", "gay", "gays"),  # plural with s
        ("Jewish-American cuisine", "jewish", "jewish"), ("Jewish-American cuisine", "american", "american"),
        ("Gay", "gay", "gay"), ("Transgender youth", "transgender", "transgender"),
        ("Homosexuals", "homosexual", "homosexuals"), ("Middle Eastern food", "middle eastern", "middle eastern"),
        ("Young Sheldon", "young", "young"), ("Lesbian (song)", "lesbian", "lesbian"), ("gay men", "gay", "gay"),
        ("American football", "american", "american"),
    }
    # not whole words: Straightforward, Gayness; "Older" is not "old" (a separate term in the list)
    assert not {t for t, *_ in got} & {"Straightforward", "Gayness", "Older"}


def test_name_rule_the_whole_name_is_the_group():
    got = matched("name")
    assert got == {("Black people", "black", "black"), ("Gay", "gay", "gay"),
                   ("Transgender youth", "transgender", "transgender"), ("Homosexuals", "homosexual", "homosexuals"),
                   ("Lesbian (song)", "lesbian", "lesbian"),  # a trailing parenthetical is dropped
                   ("gay men", "gay", "gay")}


def test_name_rule_head_nouns_and_plurals_are_options():
    assert ("Black people", "black", "black") not in matched("name", head_nouns=())
    assert ("Homosexuals", "homosexual", "homosexuals") not in matched("name", plurals=False)
    assert ("Gays Against Groomers", "gay", "gays") not in matched("word", plurals=False)


def test_forms_and_keys():
    assert terms.term_forms("African American") == ["african american", "african americans"]
    assert terms.term_forms("trans") == ["trans"]  # ends in s: no s-plural
    keys = terms.term_keys(["gay", "Gay", "lesbian"])
    assert list(keys["form"]) == ["gay", "gays", "lesbian", "lesbians"]
    assert terms.words_of("Women's rights (law)") == ["women's", "rights", "law"]


def test_attrs_and_bad_input():
    out = terms.term_matches(ITEMS, TERMS)
    assert out.attrs["rule"] == "word" and out.attrs["n_terms"] == len(TERMS) and out.attrs["n_texts"] == len(ITEMS)
    with pytest.raises(InputError, match="rule"):
        terms.term_matches(ITEMS, TERMS, rule="fuzzy")
    with pytest.raises(InputError, match="one string"):
        terms.term_matches(ITEMS, "gay")
    with pytest.raises(InputError, match="no word"):
        terms.term_matches(ITEMS, ["--"])


def test_the_shipped_identity_terms():
    from rmlib.tables import lexicons

    ids = lexicons.identity_terms()
    assert len(ids) == 50 and ids[0] == "lesbian" and ids[-1] == "paralyzed"
    assert "african american" in ids and "vegan" not in ids
    out = terms.term_matches(["Black people", "Lesbian", "Pizza"], ids, rule="name")
    assert list(out["text"]) == ["Black people", "Lesbian"]
