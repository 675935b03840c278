"""The paper's precision rules (rmlib.stats.verdict.compare_printed, through rmlib.viz.verdicts.judge)
and rmlib.tables.findings (claims by id)."""

import pytest

from rmlib.errors import InputError
from rmlib.stats.verdict import compare_printed
from rmlib.tables import findings, paper_release
from rmlib.viz.verdicts import judge


def verdict_of(published, recomputed, **kw):
    return judge("c", published, recomputed, unit="RM", **kw)["verdict"]


def test_precision_is_the_papers():
    assert verdict_of("0.29", 0.2936) == "reproduces"
    assert compare_printed("0.29", 0.2849) == (False, "0.29", "0.28")
    assert verdict_of("0.29", 0.2849) == "differs"
    assert verdict_of("0.3", 0.2849) == "reproduces"  # one decimal printed
    assert verdict_of("0.13", 0.125) == "reproduces"  # half away from zero, not to even
    assert verdict_of("-0.13", -0.125) == "reproduces"
    assert verdict_of(0.55, 0.5537, decimals=2) == "reproduces"
    with pytest.raises(ValueError, match="decimals"):
        compare_printed(0.55, 0.5537)


def test_counts_ranges_and_bounds():
    assert compare_printed("1,805,124", 1804776) == (False, "1,805,124", "1,804,776")
    assert verdict_of("0.22-0.39", (0.2189, 0.3898)) == "reproduces"
    assert verdict_of("0.22–0.39", (0.2006, 0.3844)) == "differs"
    with pytest.raises(ValueError, match="pair"):
        compare_printed("0.22-0.39", 0.3)
    assert verdict_of("< .001", 3e-8) == "reproduces"
    assert verdict_of("< .001", 0.59) == "differs"
    assert verdict_of("> .10", 0.70) == "reproduces"
    assert verdict_of(".80", 0.806) == "differs"
    assert verdict_of("0.29", None, why="needs the per-token files") == "not testable here"
    with pytest.raises(ValueError, match="number"):
        compare_printed("about a third", 0.3)


FACCT_IDS = {"table3_skew", "table2_tokens", "rsa_single", "rsa_multiple", "rsa_stepwise", "sentiment_asymmetry",
             "framing_best", "framing_worst", "frequency", "elo_human_model", "elo_model_model", "elo_top_bottom",
             "elo_dataset", "elo_top_items", "gcg", "followup_bigtwo", "identity_erasure"}


def test_claims_shipped_with_rmlib_need_no_reference_folder(tmp_path, monkeypatch):
    from rmlib import resources

    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path / "data"))  # no ../reference beside it
    monkeypatch.delenv("RMLIB_REFERENCE_DIR", raising=False)
    df = findings.load_findings()
    assert df.attrs["source"] == str(resources.path("claims") / "facct2025.yaml")
    assert set(df.index) == FACCT_IDS and list(df.columns) == list(findings.FIELDS[1:])
    f = findings.finding("elo_human_model")
    assert f["section"].startswith("4.1") and "0.29" in f["claim"] and f["data"] == "elo"
    assert not findings.finding("gcg")["claim"].endswith(".")  # chapters put it inside their own sentence
    with pytest.raises(KeyError, match="rsa_stepwise"):
        findings.finding("no_such_claim")
    assert findings.printed_table3().attrs["source"] == df.attrs["source"]


def test_findings_path_argument_and_bad_files(tmp_path):
    p = tmp_path / "facct2025.yaml"
    p.write_text("- id: a\n  section: '1'\n  claim: something\n  data: elo\n")
    assert findings.finding("a", tmp_path) == {"id": "a", "section": "1", "claim": "something", "data": "elo",
                                                "published": "", "checked": "", "note": ""}
    with pytest.raises(InputError, match="printed_table"):
        findings.printed_table3(p)
    p.write_text("- id: a\n  claim: x\n- id: a\n  claim: y\n")
    with pytest.raises(InputError, match="more than once"):
        findings.load_findings(p)
    p.write_text("- id: a\n  section: '1'\n")
    with pytest.raises(InputError, match="lack an 'id' or a 'claim'"):
        findings.load_findings(p)
    with pytest.raises(InputError, match="RMLIB_REFERENCE_DIR"):
        findings.load_findings(tmp_path / "nope.yaml")


def test_findings_reference_dir_replaces_the_shipped_claims(tmp_path, monkeypatch):
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "facct2025.yaml").write_text("- id: only\n  claim: one\n")
    monkeypatch.setenv("RMLIB_REFERENCE_DIR", str(ref))
    assert list(findings.load_findings().index) == ["only"]
    assert findings.claims_path(findings.FACCT_FILE) == ref / "facct2025.yaml"
    monkeypatch.setenv("RMLIB_REFERENCE_DIR", str(tmp_path / "missing"))
    with pytest.raises(InputError) as e:
        findings.load_findings()
    assert "\n" not in str(e.value) and "RMLIB_REFERENCE_DIR" in str(e.value) and "unset" in str(e.value)


def test_printed_table3_vs_the_released_csv():
    printed = findings.printed_table3()
    released = paper_release.published_table("3")
    assert list(printed["Model"]) == list(released["Model"])
    diffs = []
    for (_, p), (_, r) in zip(printed.iterrows(), released.iterrows()):
        for col in ("Mean", "Variance", "Skewness"):
            if p[col] != f"{r[col]:.3f}":
                diffs.append((p["Model"], col, p[col]))
    # the printed table and the released CSV disagree in a few third decimals
    assert ("S-Gem-27B-v0.2", "Skewness", "0.071") in diffs
    assert ("F-Lla-8B-v0.1", "Variance", "<0.001") in diffs
    assert len(diffs) == 6 and len({m for m, _, _ in diffs}) == 5  # five cells of four models, and the bound
    from rmlib.viz.verdicts import judge

    v = {(p["Model"], col): judge(f"{p['Model']} {col}", p[col], r[col], unit="RM")["verdict"]
         for (_, p), (_, r) in zip(printed.iterrows(), released.iterrows()) for col in ("Mean", "Variance", "Skewness")}
    assert sum(x == "differs" for x in v.values()) == len(diffs) - 1  # "<0.001" is a bound that 0.0 satisfies
    assert v[("F-Lla-8B-v0.1", "Variance")] == "reproduces"
