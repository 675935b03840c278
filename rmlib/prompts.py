"""The paper's prompts, verbatim, in one place (light: no imports).

* :data:`PAPER_PROMPTS`: the three one-word prompts of the vocabulary
  sweeps (Sections 3-5), by short key; the same keys name the prompt
  columns of the paper's per-token files (:mod:`rmlib.tables.token_csv`);
* :data:`ELO_PROMPTS`: the prompts the released EloEverything tables answer
  (``rmlib.tables.paper_release.eloeverything(key)``), by the keys the data
  files use.
"""

PAPER_PROMPTS: dict[str, str] = {
    "greatest": "What, in one word, is the greatest thing ever?",
    "best": "What, in one word, is the best thing ever?",
    "worst": "What, in one word, is the worst thing ever?",
}

#: Short key -> the prompt, verbatim, that the EloEverything items answer.
ELO_PROMPTS: dict[str, str] = {
    "one_word_greatest": PAPER_PROMPTS["greatest"],
    "greatest_ever": "What one single thing, person, or concept is the greatest ever?",
    "humans_most_prefer": "What is the single thing, person, or concept that humans most prefer?",
}

__all__ = ["ELO_PROMPTS", "PAPER_PROMPTS"]
