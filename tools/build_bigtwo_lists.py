"""Rebuild rmlib/resources/bigtwo/agency.txt and communion.txt from Princeton WordNet 3.0.

Not run by the library or the tests: the two lists are committed. To
rebuild them (needs the WordNet 3.0 database files, e.g. Debian's
``apt-get install wordnet-base``, which puts them in /usr/share/wordnet):

    python tools/build_bigtwo_lists.py [/usr/share/wordnet]

Method (see README.md): each seed below names one WordNet sense, written
``lemma.pos.N`` (N-th sense of the lemma in WordNet's sense order, as in
NLTK). A seed contributes every single-word lemma of its synset and every
single-word lemma that WordNet links to one of those lemmas as a
derivationally related form (``+``) or pertainym (``\\``). Words reached
from both dimensions, and the polysemous words in ``EXCLUDE``, are dropped
from both. Everything is lower-cased.
"""

from __future__ import annotations

import pathlib
import sys

# Seeds: the defining terms of the two dimensions in Bakan (1966) and Abele &
# Wojciszke (2007, 2014): agency = goal pursuit, competence, assertiveness,
# independence; communion = warmth, care, cooperation, morality towards
# others, relatedness. The sense chosen is the one whose gloss names that
# meaning. This choice is the authors' of rmlib, not of any published
# dictionary.
AGENCY_SEEDS = [
    "ambition.n.01", "ambition.n.02", "ambitious.a.01", "achievement.n.01", "accomplishment.n.01",
    "achieve.v.01", "success.n.01", "success.n.02", "succeed.v.01", "competence.n.01",
    "competent.a.01", "capable.a.01", "ability.n.01", "skill.n.01", "skilled.a.01",
    "expertise.n.01", "mastery.n.01", "efficient.a.01", "effective.a.01", "intelligence.n.01",
    "intelligent.a.01", "clever.a.02", "assertiveness.n.01", "assertive.a.01",
    "confident.a.01", "self-confidence.n.01", "independence.n.01",
    "independent.a.01", "autonomy.n.02", "self-reliance.n.01", "determination.n.02",
    "determined.a.01", "decisive.a.01", "perseverance.n.01", "dominance.n.02",
    "dominant.a.01", "power.n.01", "leadership.n.01", "leader.n.01", "control.n.01",
    "courage.n.01", "brave.a.01", "strength.n.01", "strong.a.01", "energetic.a.01",
    "active.a.03", "goal.n.01", "effort.n.01", "industrious.a.01", "hardworking.s.01",
    "victory.n.01", "win.v.01", "winner.n.01", "compete.v.01", "competition.n.03",
    "competitive.a.01", "excellence.n.01", "excel.v.01", "productive.a.01", "initiative.n.01",
    "ambitiousness.n.01", "attain.v.01", "conquer.v.03", "triumph.n.01",
]
COMMUNION_SEEDS = [
    "warmth.n.02", "warm.a.02", "kindness.n.01", "kindness.n.03", "kind.a.01", "friendliness.n.01",
    "friendly.a.01", "friend.n.01", "friendship.n.01", "love.n.01", "love.v.01", "affection.n.01",
    "affectionate.s.01", "caring.n.01", "caring.s.01", "care.v.02", "compassion.n.01",
    "compassionate.s.01", "empathy.n.01", "sympathy.n.02", "sympathetic.a.02", "sympathetic.a.03",
    "helpfulness.n.01", "helpful.a.01", "help.v.01", "cooperation.n.01", "cooperative.a.02",
    "cooperate.v.01", "collaboration.n.01", "generosity.n.01", "generous.a.01", "altruism.n.01",
    "trust.n.03", "trustworthiness.n.01", "trustworthy.a.01", "loyalty.n.01", "loyal.a.01",
    "honesty.n.01", "honest.a.01", "fairness.n.01", "fair.a.01",
    "tolerance.n.03", "tolerant.a.01", "forgiveness.n.01", "forgive.v.01", "gratitude.n.01",
    "grateful.a.01", "community.n.01", "family.n.02", "togetherness.n.01",
    "belonging.n.01", "companionship.n.01", "companion.n.01", "share.v.02", "sharing.n.01", "sharing.n.03",
    "support.v.01", "harmony.n.01", "unity.n.03", "solidarity.n.01", "tenderness.n.01",
    "gentleness.n.02", "gentle.a.01", "considerate.a.01", "understanding.n.03", "nurture.v.01",
    "devotion.n.01", "benevolence.n.01", "charity.n.02", "sociable.a.01", "hospitality.n.01",
]

# Lemmas that synsets or derivational links bring in but whose everyday sense
# is something else ("end" of goal.n.01, "just" of fair.a.01, "company" of
# companionship.n.01 ...): left out of both lists.
EXCLUDE = {
    "end", "reach", "try", "acquisition", "acquirement", "just", "equity", "heart", "company",
    "society", "familiar", "associate", "fellow", "soft", "softness", "dream", "effect", "energy",
    "industry", "master", "purpose", "sure", "winnings", "lead", "leading", "activity", "ascend",
    "effectivity", "one", "true", "backup", "understand", "together", "mild", "mildness", "hearty",
    "assistant", "commune", "harmonical",
}

_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}


class WordNet:
    """Minimal reader of the WordNet 3.0 database files (index.*, data.*)."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.index: dict[tuple[str, str], list[int]] = {}
        self.synsets: dict[tuple[str, int], tuple[list[str], list[tuple]]] = {}
        for pos in ("noun", "verb", "adj", "adv"):
            self._read_index(pos)
            self._read_data(pos)

    def _read_index(self, pos: str) -> None:
        with open(self.root / f"index.{pos}", encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                parts = line.split()
                lemma, n_syn, n_ptr = parts[0], int(parts[2]), int(parts[3])
                offsets = parts[4 + n_ptr + 2:]
                self.index[(lemma, pos)] = [int(o) for o in offsets[:n_syn]]

    def _read_data(self, pos: str) -> None:
        with open(self.root / f"data.{pos}", encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                parts = line.split(" | ")[0].split()
                offset, n_words = int(parts[0]), int(parts[3], 16)
                words = [parts[4 + 2 * i].split("(")[0].lower() for i in range(n_words)]
                i = 4 + 2 * n_words
                n_ptr = int(parts[i])
                ptrs = []
                for k in range(n_ptr):
                    sym, off, ppos, st = parts[i + 1 + 4 * k: i + 5 + 4 * k]
                    ptrs.append((sym, int(off), _POS_FILES[ppos], int(st[:2], 16), int(st[2:], 16)))
                self.synsets[(pos, offset)] = (words, ptrs)

    def sense(self, name: str) -> tuple[str, int]:
        lemma, p, n = name.rsplit(".", 2)
        pos = _POS_FILES[p]
        offsets = self.index.get((lemma, pos))
        if not offsets or int(n) > len(offsets):
            raise KeyError(f"no WordNet sense {name}")
        return pos, offsets[int(n) - 1]

    def expand(self, name: str) -> set[str]:
        pos, off = self.sense(name)
        words, ptrs = self.synsets[(pos, off)]
        out = set(words)
        for sym, toff, tpos, src, tgt in ptrs:
            if sym in ("+", "\\") and src:  # lexical links from one of this synset's words
                out.add(self.synsets[(tpos, toff)][0][tgt - 1])
        return {w for w in out if "_" not in w and w.isascii()}


def build(root: pathlib.Path) -> tuple[list[str], list[str]]:
    wn = WordNet(root)
    agency = set().union(*(wn.expand(s) for s in AGENCY_SEEDS))
    communion = set().union(*(wn.expand(s) for s in COMMUNION_SEEDS))
    both = agency & communion
    return sorted(agency - both - EXCLUDE), sorted(communion - both - EXCLUDE)


def main(argv: list[str]) -> None:
    root = pathlib.Path(argv[1] if len(argv) > 1 else "/usr/share/wordnet")
    here = pathlib.Path(__file__).resolve().parents[1] / "rmlib" / "resources" / "bigtwo"  # the package data
    agency, communion = build(root)
    header = "# {}: derived from Princeton WordNet 3.0 by build_lists.py; see README.md and LICENSE.\n"
    for name, words in (("agency", agency), ("communion", communion)):
        (here / f"{name}.txt").write_text(header.format(name) + "\n".join(words) + "\n", encoding="utf-8")
        print(f"{name}: {len(words)} words")


if __name__ == "__main__":
    main(sys.argv)
