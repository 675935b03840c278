"""The follow-up's released log-probabilities (an optional Hugging Face dataset), read through a local hub.

``tests/hub_server.py`` serves a dataset repository of the same name and layout as
``Oxford-HIPlab/iclr2026-lm-logprobs``: small CSVs in the authors' format (``token_id, token_name,
token_decoded`` and one column per prompt key), with decoded strings pandas would read as missing.
huggingface_hub's own client downloads them (its endpoint and cache pointed at the test's); each value is
checked against the table the file was written from.
"""

import hashlib
import io
import json
import os
import pathlib

import numpy as np
import pandas as pd
import pytest
from huggingface_hub import constants

from rmlib.errors import DataFileError, InputError
from rmlib.viz.sentences import significant
from rmlib.tables import downloads, followup, logprobs
from tests.hub_server import Hub
from tests.local_http import live_server_threads

HERE = ["google/gemma-2-2b", "meta-llama/Llama-3.2-3B"]  # released on the test hub; the other ten are not
DECODED = ["null", "NaN", "", " agency", "a,b", "\u00e9t\u00e9", "NA", "love", " Love", " freedom", "Freedom"]


def released_table(seed: int) -> pd.DataFrame:
    """A log-probability file's table as the authors' script writes it: a row per token id, a column per prompt."""
    rng = np.random.default_rng(seed)
    keys = followup.prompts()["prompt"].tolist()
    table = pd.DataFrame({"token_id": range(len(DECODED)), "token_name": [f"tok{i}" for i in range(len(DECODED))],
                          "token_decoded": DECODED})
    logits = rng.normal(size=(len(DECODED), len(keys)))
    lp = logits - np.log(np.exp(logits).sum(axis=0))  # a log-softmax over the vocabulary, per prompt
    return pd.concat([table, pd.DataFrame(lp, columns=keys)], axis=1)


def csv_bytes(table: pd.DataFrame) -> bytes:
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    return buf.getvalue().encode()


@pytest.fixture()
def hub(request, monkeypatch, tmp_path):
    """The dataset on a local hub, huggingface_hub pointed at it, an empty user cache and hub cache; the files of
    :data:`HERE`, or of the models an indirect parameter names."""
    hub = Hub()
    tables = {m: released_table(i) for i, m in enumerate(getattr(request, "param", HERE))}
    files = {logprobs.file_name(m): csv_bytes(t) for m, t in tables.items()}
    files["README.md"] = b"# log-probabilities\n"
    hub.commit = hub.add(logprobs.REPOSITORY, files, repo_type="dataset")
    hub.files, hub.tables = files, tables
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path / "rmlib-cache"))
    monkeypatch.setenv("RMLIB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub.serve() as url:
        monkeypatch.setattr(constants, "ENDPOINT", url)  # what HF_ENDPOINT sets when the client is imported
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")
        yield hub
    assert live_server_threads() == []


def expected_long(hub, models, keys) -> pd.DataFrame:
    """The long table, built from the tables the files were written from (not from the files)."""
    parts = [hub.tables[m].melt(id_vars=["token_id", "token_name", "token_decoded"], value_vars=keys,
                                var_name="prompt", value_name="score").assign(model=m) for m in models]
    out = pd.concat(parts, ignore_index=True).rename(columns={"token_name": "token", "token_decoded": "decoded"})
    return out[["model", "prompt", "token_id", "token", "decoded", "score"]]


def test_read_downloads_once_records_the_commit_and_hashes_and_stays_on_that_commit(hub):
    keys = ["greatest_ever_one", "worst_ever_one"]
    assert logprobs.status()["present"].sum() == 0  # nothing downloaded, nothing asked for a file
    got = logprobs.read(HERE, keys)
    pd.testing.assert_frame_equal(got, expected_long(hub, HERE, keys), check_exact=False, rtol=1e-12)
    assert set(got["decoded"]) == set(DECODED)  # "null", "NaN", "NA" and "" stay text
    prov = got.attrs["provenance"]
    assert [p["model_id"] for p in prov] == HERE and {p["commit"] for p in prov} == {hub.commit}
    assert [p["sha256"] for p in prov] == [hashlib.sha256(hub.files[logprobs.file_name(m)]).hexdigest() for m in HERE]
    rec = json.loads(logprobs.record_path().read_text())
    assert rec["commit"] == hub.commit and rec["files"] == {p["file"]: p["sha256"] for p in prov}
    assert downloads.stale_download_reason(logprobs.record_path()) is None  # rmlib's own: `cache --prune` keeps it
    for m in HERE:
        assert len(hub.downloads(logprobs.file_name(m))) == 1

    # the branch moves on: the recorded commit is still what is read, from the cache, without a download
    moved = {**hub.files, logprobs.file_name(HERE[0]): csv_bytes(released_table(99))}
    hub.add(logprobs.REPOSITORY, moved, repo_type="dataset")
    again = logprobs.read(HERE[0], "greatest_ever_one")
    pd.testing.assert_frame_equal(again, expected_long(hub, HERE[:1], ["greatest_ever_one"]), check_exact=False,
                                  rtol=1e-12)
    assert len(hub.downloads(logprobs.file_name(HERE[0]))) == 1
    status = logprobs.status()
    assert status.set_index("model")["present"].to_dict() == {m: m in HERE for m in logprobs.MODELS}
    assert "10 of the 12 models" in logprobs.status_note(status)
    assert "paper-data --download --group followup_logprobs" in logprobs.status_note(status)


def test_a_file_changed_since_its_first_download_is_refused_with_the_fix(hub):
    name = logprobs.file_name(HERE[0])
    first = logprobs.read(HERE[0], "best_ever_one")
    blob = os.path.realpath(logprobs.status([HERE[0]])["local"].iloc[0])
    data = bytearray(open(blob, "rb").read())
    data[-3] = ord("7") if data[-3] != ord("7") else ord("8")  # one digit of the last log-probability
    os.chmod(blob, 0o644)
    with open(blob, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(DataFileError, match=rf"{name} at .* has SHA-256 \w+, not \w+ as recorded at its first "
                                            rf"download .* Fix: delete {blob} and run again"):
        logprobs.read(HERE[0], "best_ever_one")
    assert not logprobs.status([HERE[0]])["present"].iloc[0]
    os.remove(blob)  # the fix the message names: the hub's client downloads it afresh
    pd.testing.assert_frame_equal(logprobs.read(HERE[0], "best_ever_one"), first)
    assert len(hub.downloads(name)) == 2


def test_a_download_damaged_on_the_way_is_refused_and_not_kept(hub):
    """The body differs from the file the hub's metadata names (same size, one byte changed): refused by the hub's
    SHA-256, which names the blob, nothing recorded or kept; the next run downloads it whole."""
    name = logprobs.file_name(HERE[1])
    hub.corrupt.add(("datasets/" + logprobs.REPOSITORY, name))
    sha = hashlib.sha256(hub.files[name]).hexdigest()
    with pytest.raises(DataFileError, match=rf"{name} downloaded from .* does not match the hub's hash {sha} .*"
                                            r"was not kept. Fix: run again"):
        logprobs.read(HERE[1], "good_time_please")
    assert name not in json.loads(logprobs.record_path().read_text())["files"]
    assert not list((pathlib.Path(constants.HF_HUB_CACHE)).rglob(sha))  # the damaged blob is gone
    got = logprobs.read(HERE[1], "good_time_please")
    pd.testing.assert_frame_equal(got, expected_long(hub, HERE[1:], ["good_time_please"]), check_exact=False,
                                  rtol=1e-12)
    assert got.attrs["provenance"][0]["sha256"] == sha and len(hub.downloads(name)) == 2


def test_a_missing_file_an_unknown_model_and_offline_are_clear_errors(hub, monkeypatch):
    before = len(hub.requested)
    with pytest.raises(InputError, match=r"released no log-probabilities of 'org/other'.*google/gemma-2-2b"):
        logprobs.read(["google/gemma-2-2b", "org/other"])
    with pytest.raises(InputError, match=r"unknown prompt keys \['best_thing'\]"):
        logprobs.read(HERE, "best_thing")
    assert len(hub.requested) == before and not logprobs.record_path().exists()  # refused before any request

    monkeypatch.setenv("RMLIB_OFFLINE", "1")
    with pytest.raises(DataFileError, match=r"not downloaded .*RMLIB_OFFLINE=1 forbids.*"
                                            r"paper-data --download --group followup_logprobs"):
        logprobs.read(HERE[0], "best_ever_one")
    assert len(hub.requested) == before
    monkeypatch.setenv("RMLIB_OFFLINE", "0")

    missing = "google/gemma-2-9b-it"
    with pytest.raises(DataFileError, match=rf"{logprobs.REPOSITORY} at commit {hub.commit[:10]} has no "
                                            rf"google--gemma-2-9b-it.csv .*leave {missing} out"):
        logprobs.read([HERE[0], missing], "best_ever_one")
    rec = json.loads(logprobs.record_path().read_text())
    assert rec["commit"] == hub.commit and list(rec["files"]) == [logprobs.file_name(HERE[0])]  # kept

    monkeypatch.setenv("RMLIB_OFFLINE", "1")  # offline now: what was downloaded is read, the rest is absent
    got = logprobs.read(HERE[0], "best_ever_one")
    assert got.attrs["provenance"][0]["commit"] == hub.commit
    with pytest.raises(DataFileError, match=r"meta-llama--Llama-3.2-3B.csv of .* is not here .*unset RMLIB_OFFLINE"):
        logprobs.read(HERE[1], "best_ever_one")


def test_paper_data_names_and_downloads_the_group(hub, capsys):
    from rmlib.cli import main

    assert main(["paper-data", "--group", "followup_logprobs"]) == 1
    out = capsys.readouterr().out
    assert out.count("absent ") == 12 and "are not downloaded here" in out
    assert main(["paper-data", "--group", "followup_logprobs", "--download"]) == 1  # 10 are not on this hub
    out = capsys.readouterr().out
    assert [line.split()[-1] for line in out.splitlines() if line.startswith("present")] == [
        logprobs.file_name(m) for m in HERE]


def test_the_study_pairs_are_its_21_llama_gemma_instruction_tuned_pairs():
    pairs = logprobs.study_pairs()
    assert len(pairs) == len(set(pairs)) == 21
    assert {a for a, _ in pairs} == {m for m in logprobs.MODELS if m.startswith("meta-llama/")} - {
        "meta-llama/Llama-3.2-3B"}
    assert {b for _, b in pairs} == {"google/gemma-2-2b-it", "google/gemma-2-9b-it", "google/gemma-2-27b-it"}


@pytest.mark.parametrize("hub", [list(logprobs.MODELS)], indirect=True, ids=["all-12"])
def test_chapter_10_recomputes_fig3_from_the_released_log_probabilities_when_here(hub, monkeypatch, tmp_path):
    """With the 12 files downloaded (here: small ones of the same format), chapter 10's Fig. 3 cell reads them:
    each of the 21 pairs' MWLR of freedom and love, computed here from the tables the files were written from
    (the mean over a word's case and space variants of 0.5 (p_A + p_B)(log p_A - log p_B)), is on the page."""
    import nbformat

    from rmlib import book

    assert logprobs.status(download=True)["present"].all()
    monkeypatch.setenv("HF_HUB_CACHE", constants.HF_HUB_CACHE)  # the kernel reads the same hub cache, offline
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path / "scores"))
    source = book.chapter_notebook("10")
    out = book.run_chapter(source, book.tiny_parameters(source), output_dir=tmp_path / "page", cell_timeout=600)
    page = nbformat.read(str(out), as_version=4)
    cell = next(c for c in page.cells if c.cell_type == "code" and "logprobs.study_pairs()" in c.source)
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
    assert "Fig. 3 from the study" in html and "not downloaded" not in html
    for a, b in logprobs.study_pairs():
        ta, tb = hub.tables[a].set_index("token_decoded"), hub.tables[b].set_index("token_decoded")
        la, lb = ta["greatest_ever_one"], tb["greatest_ever_one"]
        mwlr = 0.5 * (np.exp(la) + np.exp(lb)) * (la - lb)
        for word in ("freedom", "love"):
            variants = [d for d in DECODED if d.strip().lower() == word]
            assert len(variants) == 2
            shown = significant(mwlr[variants].mean(), 3)  # the table's ".3g": no exponent notation
            assert f"{a} vs {b}" in html and f">{shown}<" in html, (a, b, word)
