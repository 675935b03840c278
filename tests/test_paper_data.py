"""The paper's released data: synthetic per-token files in the upstream format, end to end.

The real per-token files are not in the shared folder (too large), so the tests
write files the way the authors' scripts did (pandas ``to_csv(index=False)``,
columns ``token_id, token_name, token_decoded, greatest, best, worst``),
including a token that decodes to a bare carriage return, pin them by their git
blob id computed by ``git hash-object`` (an independent implementation), and
read them through the registry. Published tables and figures are read from the
real shared folder.
"""

import dataclasses
import os
import pathlib
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_softmax

from rmlib import prompts
from rmlib.errors import DataFileError
from rmlib.tables import data_files, downloads, paper_release
from rmlib.tables.results import LONG_COLUMNS
from tests.released_files import git_blob

DATA = pathlib.Path(os.environ["RMLIB_DATA_DIR"])
GEM = "Ray2333/GRM-gemma2-2B-rewardmodel-ft"  # R-Gem-2B
LLA = "Ray2333/GRM-Llama3.2-3B-rewardmodel-ft"  # R-Lla-3B

# vocabulary strings and their decoded forms: the traps of the real files
TOKENS = [
    ("<pad>", "<pad>"),
    ("▁LOVE", " LOVE"),
    ("\r", "\r"),  # a bare carriage return (SmolLM2 id 201 is one): written unquoted
    ("nan", "nan"),  # must stay a string
    ("", ""),  # empty
    ("Ċ", "\n"),  # a newline: quoted by to_csv
    ("▁a,b", " a,b"),  # a comma: quoted
    ('"', '"'),  # a quote: doubled
    ("null", "null"),
    ("▁felicity", " felicity"),
]


def _upstream_csv(path: pathlib.Path, seed: int, columns=("greatest", "best", "worst")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "token_id": np.arange(len(TOKENS)),
        "token_name": [t for t, _ in TOKENS],
        "token_decoded": [d for _, d in TOKENS],
    })
    for c in columns:
        df[c] = rng.normal(size=len(TOKENS)).round(5)
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)  # exactly the authors' call
    return df


@pytest.fixture
def released(tmp_path, monkeypatch):
    """A data folder holding two synthetic RM files and one base-model file, pinned in the registry."""
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path))
    frames = {}
    for seed, (hub, key) in enumerate([(GEM, data_files.rm_scores_key(GEM)), (LLA, data_files.rm_scores_key(LLA)),
                                       ("google/gemma-2b", data_files.base_logits_key("google/gemma-2b"))]):
        entry = data_files.REGISTRY[key]
        path = tmp_path / entry.path
        frames[hub] = _upstream_csv(path, seed)
        monkeypatch.setitem(data_files.REGISTRY, key, dataclasses.replace(entry, git_blob=git_blob(path)))
    return tmp_path, frames


def test_blob_id_matches_git(tmp_path):
    p = tmp_path / "x.csv"
    p.write_bytes(b"token_id,token_name\n1,\r\n")
    assert downloads.git_blob_id(p) == git_blob(p)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert downloads.git_blob_id(b"") == git_blob(empty)


def test_the_synthetic_file_has_the_carriage_return_trap(released):
    root, frames = released
    path = root / data_files.REGISTRY[data_files.rm_scores_key(GEM)].path
    assert b",\r,\r," in path.read_bytes()  # written unquoted, as the README says
    naive = pd.read_csv(path, keep_default_na=False)
    assert len(naive) != len(frames[GEM])  # a reader that ends lines at \r splits the row


def test_token_scores_read_whole_into_the_long_format(released):
    _, frames = released
    long = paper_release.paper_token_scores(["R-Gem-2B", LLA], progress=False)
    assert tuple(long.columns) == LONG_COLUMNS
    assert len(long) == 2 * 3 * len(TOKENS)
    assert list(dict.fromkeys(long["model"])) == [GEM, LLA]
    assert list(dict.fromkeys(long["prompt"])) == list(prompts.PAPER_PROMPTS.values())
    for hub, src in frames.items():
        if hub not in (GEM, LLA):
            continue
        for key, prompt in prompts.PAPER_PROMPTS.items():
            part = long[(long["model"] == hub) & (long["prompt"] == prompt)]
            assert part["token"].tolist() == src["token_name"].tolist()
            assert part["decoded"].tolist() == src["token_decoded"].tolist()  # "\r", "nan", "" intact
            np.testing.assert_array_equal(part["score"].to_numpy(), src[key].to_numpy())
            np.testing.assert_array_equal(part["token_id"].to_numpy(), src["token_id"].to_numpy())
    prov = long.attrs["provenance"]
    assert [p["model_id"] for p in prov] == [GEM, LLA]
    assert prov[0]["git_blob"] == data_files.REGISTRY[data_files.rm_scores_key(GEM)].git_blob
    assert "/42dc162d0f88825d67f22f64ecc45648a9a09a48/data/reward_model_scores/" in prov[0]["source"]


def test_models_present_reads_only_what_is_here(released):
    long = paper_release.paper_token_scores("present", "greatest", progress=False)
    assert list(dict.fromkeys(long["model"])) == [LLA, GEM]  # registry order
    logits = paper_release.paper_base_logits("present", progress=False)
    assert set(logits["model"]) == {"google/gemma-2b"}


def test_one_prompt_by_its_text(released):
    long = paper_release.paper_token_scores([GEM], "What, in one word, is the worst thing ever?", progress=False)
    assert long["prompt"].unique().tolist() == ["What, in one word, is the worst thing ever?"]
    with pytest.raises(ValueError, match="greatest"):
        paper_release.paper_token_scores([GEM], "nicest", progress=False)
    with pytest.raises(KeyError, match="released"):
        paper_release.paper_token_scores(["no/such-model"], progress=False)


def test_tampered_file_fails_its_blob_check(released):
    root, _ = released
    path = root / data_files.REGISTRY[data_files.rm_scores_key(GEM)].path
    data = bytearray(path.read_bytes())
    i = data.index(b"LOVE")
    data[i:i + 4] = b"HATE"
    path.write_bytes(bytes(data))
    with pytest.raises(DataFileError, match="git blob id mismatch"):
        paper_release.paper_token_scores([GEM], progress=False)
    status = downloads.paper_data_status("token_scores")
    row = status.set_index("name").loc[data_files.rm_scores_key(GEM)]
    assert not row["present"] and "mismatch" in row["reason"]


def test_absent_file_is_one_line_with_both_remedies(released):
    with pytest.raises(DataFileError) as e:
        paper_release.paper_token_scores(["N-Gem-27B"], progress=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert "reward_model_scores/nicolinho--QRM-Gemma-2-27B.csv" in msg
    assert "RMLIB_DATA_DIR" in msg and "network" in msg


def test_status_and_note(released):
    status = downloads.paper_data_status(["token_scores", "base_logits"])
    present = set(status.loc[status["present"], "name"])
    assert present == {data_files.rm_scores_key(GEM), data_files.rm_scores_key(LLA),
                       data_files.base_logits_key("google/gemma-2b")}
    assert len(status) == 20
    note = downloads.paper_data_note(status, fallback="the default model")
    assert note.startswith("17 of 20") and "the default model" in note and "RMLIB_DATA_DIR" in note
    assert "\n" not in note
    full = downloads.paper_data_note(status[status["present"]])
    assert full.startswith("All 3")
    with pytest.raises(ValueError, match="token_scores"):
        downloads.paper_data_status("tokens")


def test_download_path_checks_the_blob(released, tmp_path_factory, monkeypatch):
    """Online: pooch fetches the pinned URL; the blob id is checked after the download."""
    import pooch

    root, _ = released
    key = data_files.rm_scores_key(GEM)
    src = root / data_files.REGISTRY[key].path
    cache = tmp_path_factory.mktemp("cache")
    calls = []

    def fake_retrieve(url, known_hash, fname, path, progressbar):
        calls.append((url, known_hash))
        dest = pathlib.Path(path) / fname
        if not dest.exists():  # pooch without a known hash keeps what it has
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        return str(dest)

    monkeypatch.delenv("RMLIB_DATA_DIR")
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(cache))
    assert not downloads.paper_data_status("token_scores")["present"].any()  # nothing cached yet
    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    long = paper_release.paper_token_scores([GEM], progress=False)
    assert calls == [(data_files.REGISTRY[key].url, None)] and len(long) == 3 * len(TOKENS)
    st = downloads.paper_data_status("token_scores").set_index("name")
    assert st.loc[key, "present"]  # found in the cache without a download
    cached = cache / data_files.REGISTRY[key].path
    cached.write_bytes(src.read_bytes() + b"0,x,x,1,1,1\n")  # the cached copy damaged
    monkeypatch.setenv("RMLIB_OFFLINE", "1")  # offline: named, with the hash problem, not used
    with pytest.raises(DataFileError, match="git blob id mismatch") as err:
        paper_release.paper_token_scores([GEM], progress=False)
    assert "RMLIB_OFFLINE" in str(err.value)
    monkeypatch.setenv("RMLIB_OFFLINE", "0")  # online: downloaded again, the damaged copy replaced
    again = paper_release.paper_token_scores([GEM], progress=False)
    assert len(calls) == 2 and cached.read_bytes() == src.read_bytes()
    pd.testing.assert_frame_equal(again, long)


def test_base_logits_and_log_probs(released):
    _, frames = released
    long = paper_release.paper_base_logits(["google/gemma-2b"], progress=False)
    assert list(long.columns) == ["model", "prompt", "token_id", "token", "decoded", "logit", "log_prob"]
    src = frames["google/gemma-2b"]
    for key, prompt in prompts.PAPER_PROMPTS.items():
        part = long[long["prompt"] == prompt]
        np.testing.assert_allclose(part["log_prob"].to_numpy(), log_softmax(src[key].to_numpy()), rtol=1e-12)
    with pytest.raises(KeyError, match="google/gemma-2b"):
        paper_release.paper_base_logits(["google/gemma-3-1b"], progress=False)


# --------------------------------------------------------------------------
# published tables and figures (real files in the shared folder)
# --------------------------------------------------------------------------


def test_published_table_2a_keeps_exact_strings():
    t = paper_release.published_table("2a")
    assert list(t.columns) == ["part", "rank", "token_id", "decoded", "score"]
    raw = (DATA / "paper_published/tables/table_2a_top_bottom_tokens_R-Gem-2B.csv").read_text().splitlines()
    first = raw[1].split(",")
    assert t.iloc[0]["token_id"] == int(first[0]) and t.iloc[0]["decoded"] == first[1]
    assert t.iloc[0]["decoded"].startswith(" ")  # leading space kept
    assert (t["part"] == "top").sum() + (t["part"] == "bottom").sum() == len(raw) - 2  # header, "..."
    top = t[t["part"] == "top"]["score"].to_numpy()
    assert np.all(np.diff(top) <= 0)


def test_published_appendix_table_reads_tokens_with_line_breaks():
    t = paper_release.published_table("A.1")
    models = [c for c in t.columns if c not in ("part", "rank")]
    assert len(models) == 10 and models[0] == "google/gemma-2b"
    cells = [x for c in models for x in t[c]]
    assert " //\r" in cells and "\n" in cells  # read whole, not split
    assert not (t[models] == "...").any().any()
    assert paper_release.published_table("a9").attrs["table"] == "A.9"
    with pytest.raises(KeyError, match="A.9"):
        paper_release.published_table("A.10")


def test_published_moments_and_figures_and_fig2a():
    t3 = paper_release.published_table("3")
    assert list(t3.columns) == ["Model", "Mean", "Variance", "Skewness"] and len(t3) == 10
    for key in data_files.PUBLISHED_FIGURES:
        assert paper_release.published_figure(key).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tau = paper_release.fig2a_tau_transcribed()
    assert tau.shape == (10, 10) and list(tau.index) == list(t3["Model"])
    np.testing.assert_array_equal(tau.to_numpy(), tau.to_numpy().T)


def test_project_material_without_a_data_folder_names_both_remedies(tmp_path, monkeypatch):
    monkeypatch.setenv("RMLIB_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(DataFileError) as e:
        paper_release.fig2a_tau_transcribed()
    msg = str(e.value)
    assert paper_release.fig2a_tau_transcribed(missing_ok=True) is None
    assert "\n" not in msg and "figure_2a_kendall_tau_transcribed.csv" in msg
    assert "RMLIB_DATA_DIR" in msg and "path" in msg


def test_cli_paper_data_reports_and_exits_nonzero_when_absent(released, capsys):
    from rmlib.cli import main

    rc = main(["paper-data", "--group", "token_scores", "-v"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "present  token_scores       reward_model_scores/Ray2333--GRM-gemma2-2B-rewardmodel-ft.csv" in out
    assert "absent   token_scores       reward_model_scores/nicolinho--QRM-Gemma-2-27B.csv" in out
    assert "8 of 10 files" in out
    rc = main(["paper-data", "--group", "published_tables"])
    assert rc == 1  # the synthetic folder holds no published tables
