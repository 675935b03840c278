"""rmlib.prompts: the paper's prompts live in one place; the bench's prompt is one of them."""

import urllib.parse

from rmlib import prompts
from rmlib.tables import data_files, paper_release


def test_the_bench_prompt_is_the_papers():
    from rmlib import bench
    from rmlib.bench import gcg_speed

    assert bench.BENCH_PROMPT == gcg_speed.BENCH_PROMPT == prompts.PAPER_PROMPTS["greatest"]


def test_paper_prompts_verbatim():
    for key, text in prompts.PAPER_PROMPTS.items():
        assert text == f"What, in one word, is the {key} thing ever?"
    # the EloEverything one-word prompt is the sweep's "greatest" prompt
    assert prompts.ELO_PROMPTS["one_word_greatest"] == prompts.PAPER_PROMPTS["greatest"]


def test_every_elo_prompt_names_a_registered_file_and_resolves_both_ways():
    for key, text in prompts.ELO_PROMPTS.items():
        entry = data_files.REGISTRY[f"elo_{key}"]
        assert entry.description == text
        assert entry.url.endswith(urllib.parse.quote(text.rstrip("?") + ".csv"))
        elo_key = paper_release.elo_key
        assert elo_key(key) == elo_key(text) == elo_key(text.rstrip("?")) == key
