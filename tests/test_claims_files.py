"""The claims files rmlib ships (rmlib/resources/claims): they load, they hold every claim id the
chapters and rmlib.stats use, and their numbers are the ones of the project's reference notes
(compared only where that folder is present)."""

import os
import pathlib
import re

import pytest
import yaml

from rmlib import resources
from rmlib.tables import findings

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = pathlib.Path(os.environ["RMLIB_DATA_DIR"]).parent / "reference"

# A number as the files write it: 1,805,124; 0.29; .001; 3.6e-20 (not the digits of a word such as
# 'L165', '3-way', '2B' or the commit '913a08d').
NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?:e-\d+)?(?!\w|-[a-z])")
# A reference to lines of a script (L25-75), which the notes give and rmlib's files need not.
LINE_REF = re.compile(r"\bL\d+(?:-\d+)?")
# A claim id named in code: claim="x", "claim": "x", finding("x") (escaped quotes inside notebooks too).
CLAIM_ID = re.compile(r"""(?:claim=|["']claim["']:\s*|finding\(|said\[|pub\[|why_not\[|(?:printed|claim)\(\\?["'][a-z0-9]+\\?["'],\s*)\\?["']([a-z][a-z0-9_]*)\\?["']""")


@pytest.fixture(autouse=True)
def shipped_claims(monkeypatch):
    monkeypatch.delenv("RMLIB_REFERENCE_DIR", raising=False)


def shipped(name):
    return yaml.safe_load((resources.path("claims") / name).read_text(encoding="utf-8"))


def numbers(value) -> list[str]:
    """Every number in a YAML value (mappings and lists flattened), as written."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return NUMBER.findall(LINE_REF.sub("", "" if value is None else str(value)))


def same_number(here: str, there: str) -> bool:
    """``here`` equals ``there`` at ``there``'s precision (0.00216544 is 0.00217; 3.6e-20 is 4e-20)."""
    a, b = float(here.replace(",", "")), float(there.replace(",", ""))
    if "e" in there:
        mantissa = there.split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return float(f"{a:.{digits}e}") == b
    digits = len(there.split(".")[1]) if "." in there else 0
    return round(a, digits) == b


def assert_numbers_in(mine: list[str], theirs: list[str], what: str):
    """Each number of ``mine`` is one of ``theirs`` at the precision ``theirs`` gives."""
    missing = [n for n in mine if not any(same_number(n, t) for t in theirs)]
    assert not missing, f"{what}: {missing} not in {sorted(set(theirs))}"


def assert_numbers_kept(theirs: list[str], mine: list[str], what: str):
    """Each number of ``theirs`` is given by one of ``mine``, at its precision or finer."""
    missing = [t for t in theirs if not any(same_number(n, t) for n in mine)]
    assert not missing, f"{what}: {missing} not in {sorted(set(mine))}"


def test_both_files_load_with_every_field_a_reader_needs():
    facct, followup = findings.load_findings(), findings.load_followup_findings()
    assert facct.attrs["source"] == str(resources.path("claims") / findings.FACCT_FILE)
    assert followup.attrs["source"] == str(resources.path("claims") / findings.FOLLOWUP_FILE)
    assert (facct["section"] != "").all() and (facct["claim"] != "").all() and (facct["data"] != "").all()
    assert (followup[["section", "claim", "reported", "method", "released_data_enough"]] != "").all().all()
    assert not set(facct.index) & set(followup.index)  # one id, one claim, whichever paper
    sources = {k for c in shipped(findings.FOLLOWUP_FILE)["claims"] for k in c["reported"]}
    assert sources <= {"paper", "secondary", "unreliable", "code", "data"}  # the sources the header lists
    table = findings.printed_table3()
    assert len(table) == 10 and table["Model"].is_unique


def test_every_claim_id_used_by_the_chapters_and_rmlib_is_shipped():
    known = set(findings.load_findings().index) | set(findings.load_followup_findings().index)
    files = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "rmlib").rglob("*.py"))
    used = {}
    quoted = set()  # known ids a page names in a tuple of ids (read with verdicts.claim in a loop)
    for f in files:
        text = f.read_text(encoding="utf-8")
        for cid in CLAIM_ID.findall(text):
            used.setdefault(cid, f.relative_to(ROOT).as_posix())
        quoted |= {cid for cid in known if f'\\"{cid}\\"' in text or f'"{cid}"' in text}
    assert {"rsa_stepwise", "elo_dataset", "table3_skew", "gcg", "corpus_sizes"} <= set(used) | quoted
    assert {cid: where for cid, where in used.items() if cid not in known} == {}


def _code(key):
    import json

    from rmlib import book

    nb = json.loads(book.find_chapters()[key].read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_every_claim_of_the_follow_up_has_a_row_in_chapter_6_or_10():
    """The follow-up's claims are split between chapter 6 (the ten RMs) and chapter 10 (LMs, RM training)."""
    code = {key: _code(key) for key in ("06", "10")}
    ids = list(findings.load_followup_findings().index)
    named = {cid: [k for k, c in code.items() if f'"{cid}"' in c] for cid in ids}
    assert {cid: where for cid, where in named.items() if len(where) != 1} == {}  # each claim on one page


def reference_or_skip(name):
    p = REFERENCE / name
    if not p.is_file():
        pytest.skip(f"no {p}: the project's reference notes are not beside the data folder")
    return yaml.safe_load(p.read_text(encoding="utf-8"))


def test_facct_numbers_are_the_reference_notes():
    ref = {e["id"]: e for e in reference_or_skip("findings.yaml")}
    mine = {e["id"]: e for e in shipped(findings.FACCT_FILE)}
    assert set(ref) <= set(mine)  # every claim of the notes is shipped; a shipped claim may add a figure reading
    for cid, e in ((cid, mine[cid]) for cid in ref):
        # the paper's printed numbers: the same in both claim sentences
        assert_numbers_in(numbers(e["claim"]), numbers([ref[cid]["claim"], ref[cid]["section"]]), f"{cid} claim")
        assert_numbers_kept(numbers(ref[cid]["claim"]), numbers(e["claim"]), f"{cid} claim (reference)")
        # what the recomputation found: every number of the notes is kept in the entry
        assert_numbers_kept(numbers(ref[cid].get("checked")), numbers(e), f"{cid} checked")


def test_printed_table3_is_the_table_of_the_paper_text():
    text = REFERENCE / "paper_2506.07326_text.txt"
    if not text.is_file():
        pytest.skip(f"no {text}")
    lines = text.read_text(encoding="utf-8").splitlines()
    (head,) = [i for i, line in enumerate(lines) if line.replace(" ", "") == "Model|Mean|Variance|Skewness|"]
    rows = []
    for line in lines[head + 1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4:
            break
        if set("".join(cells)) - set("-"):
            rows.append(cells)
    assert findings.printed_table3().values.tolist() == rows


def test_followup_numbers_are_the_reference_notes():
    doc = reference_or_skip("followup_findings.yaml")
    ref = {c["id"]: c for c in doc["claims"]}
    mine = shipped(findings.FOLLOWUP_FILE)["claims"]
    assert [c["id"] for c in mine] == list(ref)  # the same claims in the same order
    design = numbers(doc["design"])
    for c in mine:
        theirs = numbers(ref[c["id"]]) + design
        # the papers' and the release's numbers: each one is in the notes on that claim (or the study design)
        assert_numbers_in(numbers(c["claim"]) + numbers(c["reported"]), theirs, f"{c['id']} claim/reported")
        # and every reported number of the notes is kept
        assert_numbers_kept(numbers(ref[c["id"]]["reported"]), numbers(c), f"{c['id']} reported (reference)")


@pytest.fixture
def data_without_reference_notes(tmp_path, monkeypatch):
    """The data folder's files, linked one by one into a folder with no ``../reference`` beside it."""
    data = tmp_path / "clone" / "data"
    data.mkdir(parents=True)
    for entry in pathlib.Path(os.environ["RMLIB_DATA_DIR"]).iterdir():
        (data / entry.name).symlink_to(entry.resolve())
    monkeypatch.setenv("RMLIB_DATA_DIR", str(data))
    return data


@pytest.mark.parametrize("key", ["01", "06", "10"])
def test_chapters_quoting_claims_run_without_the_reference_notes(key, data_without_reference_notes, tmp_path):
    """Chapter 1 reads the printed Table 3 and chapters 6 and 10 every claim of the follow-up: from rmlib alone."""
    import nbformat

    from rmlib import book

    assert not (data_without_reference_notes.parent / "reference").exists()
    source = book.find_chapters()[key]
    out = book.run_chapter(source, book.tiny_parameters(source), output_dir=tmp_path / "out", cell_timeout=600)
    outputs = [o for c in nbformat.read(str(out), as_version=4).cells if c.cell_type == "code"
               for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if key in ("06", "10"):  # the chapter's table of the study's claims (shown short, whole under "show all")
        import re

        shown = " ".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
        bodies = [t.split("<tbody>", 1)[1] for t in re.findall(
            r"<caption>The follow-up study(?:&#x27;|')s claims.*?</tbody>", shown, re.S)]
        assert bodies
        rows = max(b.count("<tr>") for b in bodies)
        ids = [cid for cid in findings.load_followup_findings().index if f'"{cid}"' in _code(key)]
        assert rows >= len(ids) > 5  # at least a row for every claim the page names (some take two)
