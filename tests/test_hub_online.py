"""Reward models loaded by hub id, as a user with a network would: through a local hub.

``tests/hub_server.py`` serves repositories of tiny models (``tests/models_fixture.py``) in the hub's
layout on 127.0.0.1; ``python -m rmlib`` runs in a subprocess with ``HF_ENDPOINT`` at it and its own
``HF_HOME``, so ``huggingface_hub`` and ``transformers`` make their real calls (revision, HEAD and GET of
each file, resumed downloads, the remote-code download). The scores are checked against a whole-sequence
forward of the same weights loaded here from the files the hub served.

One rmlib process runs several command lines (one Python start-up each test, not one per command).
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from rmlib import registry
from rmlib.tables.store import load_scores
from tests.hub_server import Hub, etag
from tests.local_http import live_server_threads
from tests.models_fixture import custom_model_class, hub_repo_files, write_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROMPT = "What is the best thing?"
TOKENS = "1000:1012"
IDS = list(range(1000, 1012))

#: Run each argv (a list of lists, JSON) through rmlib's command line in this one process; one JSON line each.
DRIVER = """
import contextlib, io, json, sys
from rmlib.cli import main
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    print(json.dumps({"rc": rc, "out": out.getvalue(), "err": err.getvalue()}), flush=True)
"""


#: ``python -m rmlib.book chapter NN -p NAME VALUE ...`` as the Makefile's ``make chapter`` runs it (the chapter's
#: tiny parameters, then the command line's, checked as the CLI checks them), its page written to a folder of the
#: test's instead of ``book/chapters``; no HTML build (the executed notebook is the page's content).
CHAPTER_DRIVER = """
import json, sys
from rmlib import book
source = book.chapter_notebook(sys.argv[1])
params = book.validate_parameters(source, {**book.tiny_parameters(source), **json.loads(sys.argv[2])})
print("page:", book.run_chapter(source, params, output_dir=sys.argv[3], cell_timeout=600), flush=True)
"""


def hub_environment(url: str, home: pathlib.Path, *, offline: bool = False) -> dict:
    """A process environment whose hub is the local one at ``url``, with caches of its own under ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_ENDPOINT=url, HF_HOME=str(home / "hf"), HF_HUB_OFFLINE="1" if offline else "0",
               HF_HUB_DISABLE_TELEMETRY="1", NO_PROXY="127.0.0.1", no_proxy="127.0.0.1",
               RMLIB_CACHE_DIR=str(home / "rmlib-cache"), RMLIB_SCORES_DIR=str(home / "scores"),
               PYTHONPATH=str(ROOT), TOKENIZERS_PARALLELISM="false")
    return env


def rmlib_commands(url: str, home: pathlib.Path, commands: list[list[str]], *, offline: bool = False) -> list[dict]:
    """``rmlib`` command lines run in one fresh process against the local hub at ``url``."""
    env = hub_environment(url, home, offline=offline)
    argv = [[*c, "--no-progress"] if c[0] == "score" else c for c in commands]
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argv)], env=env, cwd=home,
                          capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"rc"')]
    assert len(results) == len(commands), done.stdout[-2000:] + done.stderr[-3000:]
    return results


def paper_entries() -> list[dict]:
    """The registry's entries of the paper's ten RMs (a missing revision is None)."""
    return [registry.lookup(h) for h in registry.paper_models()["hub_id"]]


def score(model: str, out: pathlib.Path | None = None, *extra: str) -> list[str]:
    return ["score", "--model", model, "--prompt", PROMPT, "--tokens", TOKENS,
            *(["--out", str(out)] if out else []), *extra]


def whole_sequence_scores(folder: pathlib.Path, prov: dict, custom: str | None = None) -> np.ndarray:
    """Each token's score from one plain forward of prefix + token + suffix (no prefix cache), with the
    weights in ``folder`` loaded here: ``logits[:, 0]`` of a standard classifier, ``score`` of a custom head."""
    from transformers import AutoModelForSequenceClassification

    if custom:
        model = custom_model_class(custom).from_pretrained(folder, dtype=torch.float32)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32)
    model.eval()
    ids = torch.tensor([[*prov["prefix_ids"], t, *prov["suffix_ids"]] for t in IDS])
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
    got = out.score if custom else out.logits
    return got[:, 0].float().numpy()


@pytest.fixture(scope="module")
def hub():
    """The repositories: two classifiers with a chat template (the Gemma-2 one sharded), a .bin-only one, a
    non-registry one with remote code, one whose weights are corrupt, and stubs of the paper's ten RMs at their
    hub ids, pinned revisions and heads."""
    hub = Hub()
    gemma = hub_repo_files("gemma2-classifier", shard="2MB")
    llama = hub_repo_files("llama-classifier")
    hub.add("org/gemma-rm", gemma)
    hub.add("org/llama-rm", llama)
    hub.add("org/bin-only", hub_repo_files("llama-classifier", weights="bin"))
    hub.add("org/custom-rm", hub_repo_files("llama-classifier", custom=True))
    corrupt = dict(llama)
    corrupt["model.safetensors"] = b"\x00" * 8 + llama["model.safetensors"][8:]  # header length zeroed
    hub.add("org/corrupt-rm", corrupt)
    for e in paper_entries():
        arch = "gemma2-classifier" if e["family"] == "gemma2" else "llama-classifier"
        files = hub_repo_files(arch, custom=bool(e["trust_remote_code"]), shard="2MB" if e["params_b"] > 20 else None)
        hub.add(e["hub_id"], files, sha=e["revision"])
    with hub.serve() as url:
        hub.url = url
        yield hub
    assert live_server_threads() == []
    # every call the client made is one this server answers (only the client's own agent look-up is not)
    assert {p for _, p in hub.unknown} <= {"/api/agent-harnesses"}, hub.unknown


def test_score_by_commit_downloads_once_resumes_and_then_runs_offline(hub, tmp_path):
    """``rmlib score --model org/name --revision <commit>``: every file fetched once (the weights' download cut
    off midway and finished), the commit recorded; then with HF_HUB_OFFLINE=1 the same table, no request."""
    commit = hub.repos["org/gemma-rm"].refs["main"]
    files = hub.repos["org/gemma-rm"].commits[commit]
    shards = sorted(n for n in files if n.startswith("model-") and n.endswith(".safetensors"))
    assert len(shards) >= 2 and "model.safetensors.index.json" in files and "chat_template.jinja" in files
    hub.cut[("org/gemma-rm", shards[0])] = 100_000  # the server closes the connection after 100 kB
    before = len(hub.requested)
    first = rmlib_commands(hub.url, tmp_path, [score("org/gemma-rm", tmp_path / "a.parquet", "--revision", commit)])
    assert first[0]["rc"] == 0, first[0]["err"]
    assert ("org/gemma-rm", shards[0]) not in hub.cut  # the cut happened
    assert len(hub.downloads(shards[0])) == 2  # cut off, then fetched again
    for name in ("config.json", "tokenizer.json", "chat_template.jinja", *shards):
        assert len(hub.downloads(name)) == (2 if name == shards[0] else 1), name
    blob = tmp_path / "hf" / "hub" / "models--org--gemma-rm" / "blobs" / etag(shards[0], files[shards[0]])
    assert blob.read_bytes() == files[shards[0]]  # the resumed download is the whole file
    table = load_scores(tmp_path / "a.parquet")
    prov = table.attrs["provenance"]
    assert prov["model_id"] == "org/gemma-rm" and prov["revision"] == commit
    assert "<start_of_turn>" in prov["prefix_text"]  # the repository's chat template
    expected = whole_sequence_scores(write_files(files, tmp_path / "repo"), prov)
    np.testing.assert_allclose(table.set_index("token_id").loc[IDS, "score"], expected, atol=1e-4)
    assert all(p.startswith("/api/") or f"/{commit}/" in p for _, p in hub.requested[before:])  # one commit only

    seen = len(hub.requested)
    (tmp_path / "scores").rename(tmp_path / "scores-online")  # score again, not read back from the score cache
    again = rmlib_commands(hub.url, tmp_path, [score("org/gemma-rm", tmp_path / "b.parquet", "--revision", commit)],
                           offline=True)
    assert again[0]["rc"] == 0, again[0]["err"]
    assert len(hub.requested) == seen  # offline: nothing asked of the hub
    offline_table = load_scores(tmp_path / "b.parquet")
    assert offline_table.attrs["provenance"]["revision"] == commit
    pd.testing.assert_series_equal(offline_table["score"], table["score"])


def test_a_moved_branch_is_noticed(hub, tmp_path):
    """Scored by branch: the commit it named is recorded; once the branch moves, the next run resolves the new
    commit and scores its weights (another table), never the old commit's cached scores."""
    repo = hub.repos["org/llama-rm"]
    old = repo.refs["main"]
    new = hub.add("org/llama-rm", hub_repo_files("llama-classifier", scale=-2.0), branch="moved")
    runs = rmlib_commands(hub.url, tmp_path, [score("org/llama-rm", tmp_path / "old.parquet", "--revision", "moved")])
    assert runs[0]["rc"] == 0, runs[0]["err"]
    repo.refs["moved"] = old  # the branch moves back to the first commit
    try:
        later = rmlib_commands(hub.url, tmp_path, [score("org/llama-rm", tmp_path / "new.parquet", "--revision", "moved"),
                                                   score("org/llama-rm", tmp_path / "main.parquet")])
    finally:
        del repo.refs["moved"]
    assert [r["rc"] for r in later] == [0, 0], later
    a, b, main = (load_scores(tmp_path / f"{n}.parquet") for n in ("old", "new", "main"))
    assert a.attrs["provenance"]["revision"] == new and b.attrs["provenance"]["revision"] == old
    assert main.attrs["provenance"]["revision"] == old  # no --revision: the default branch's commit
    # the head scaled by -2 (the moved-from commit) against the original weights: both scored, not reused
    np.testing.assert_allclose(a["score"].to_numpy(), -2 * b["score"].to_numpy(), rtol=1e-4, atol=1e-5)
    pd.testing.assert_series_equal(b["score"], main["score"])
    assert len(list((tmp_path / "scores").rglob("*.parquet"))) >= 2


def test_broken_hub_paths_are_refused_with_the_fix(hub, tmp_path):
    """A wrong revision, an unknown repository, a .bin-only repository (never downloaded), remote code without
    the opt-in (refused before any request for a registry model), corrupt weights, a custom head outside the
    registry whose reward rmlib cannot find: each a one-line error (exit 2), never a traceback or scores."""
    armo = "RLHFlow/ArmoRM-Llama3-8B-v0.1"
    before = len(hub.requested)
    runs = rmlib_commands(hub.url, tmp_path, [
        score(armo),
        score("org/llama-rm", None, "--revision", "no-such-branch"),
        score("org/llama-rm", None, "--revision", "0" * 40),
        score("nobody/no-such-rm"),
        score("org/bin-only"),
        score("org/custom-rm"),
        score("org/corrupt-rm"),
        score("org/custom-rm", None, "--trust-remote-code"),
    ])
    armo_err, bad_rev, bad_commit, no_repo, bin_only, custom, corrupt, custom_trusted = runs
    assert all(r["rc"] == 2 for r in runs), runs
    assert all(r["err"].count("\n") == 1 and "Traceback" not in r["err"] for r in runs), runs
    assert "trust_remote_code" in armo_err["err"] and "--trust-remote-code" in armo_err["err"]
    assert all(armo not in p for _, p in hub.requested[before:])  # refused before asking the hub anything
    assert "has no revision 'no-such-branch'" in bad_rev["err"]
    assert "has no revision '" + "0" * 40 + "'" in bad_commit["err"]
    assert "no model repository 'nobody/no-such-rm'" in no_repo["err"]
    assert "safetensors only" in bin_only["err"] and not hub.downloads("pytorch_model.bin")
    assert "custom code" in custom["err"] and "--trust-remote-code" in custom["err"]
    # its code runs only when trusted; its output holds no logits and rmlib knows no other field of it
    assert [p for m, p in hub.requested[before:] if m == "GET" and p.endswith("modeling_custom.py")] == [
        "/org/custom-rm/resolve/" + hub.repos["org/custom-rm"].refs["main"] + "/modeling_custom.py"]
    assert "output has no 'logits'" in custom_trusted["err"] and "'score'" in custom_trusted["err"]
    assert "cannot read its weights" in corrupt["err"] and "--force-download" in corrupt["err"]


def test_custom_code_runs_with_the_opt_in(hub, tmp_path):
    """A registry RM with a custom head (ArmoRM's layout: modeling_custom.py, ``outputs.score``) at its pinned
    commit: with ``--trust-remote-code`` its code is fetched and run, the score read from ``score``."""
    armo = registry.lookup("RLHFlow/ArmoRM-Llama3-8B-v0.1")
    runs = rmlib_commands(hub.url, tmp_path, [score(armo["hub_id"], tmp_path / "armo.parquet", "--trust-remote-code")])
    assert runs[0]["rc"] == 0, runs[0]["err"]
    assert any(p.endswith(f"/{armo['revision']}/modeling_custom.py") for _, p in hub.requested)
    table = load_scores(tmp_path / "armo.parquet")
    prov = table.attrs["provenance"]
    assert prov["revision"] == armo["revision"] and prov["score_from"] == "score"
    files = hub.repos[armo["hub_id"]].commits[armo["revision"]]
    expected = whole_sequence_scores(write_files(files, tmp_path / "repo"), prov, custom="Llama")
    np.testing.assert_allclose(table.set_index("token_id").loc[IDS, "score"], expected, atol=1e-4)


def test_the_paper_rms_registry_entries_resolve_load_and_score(hub, tmp_path):
    """The ten paper RMs' registry entries against stubs of the same ids and layouts: each resolves (its pinned
    revision when it has one, else the default branch's commit), loads with its head (remote code only with
    the opt-in) and scores."""
    entries = paper_entries()
    commands = [score(e["hub_id"], tmp_path / f"{i}.parquet", *(["--trust-remote-code"] if e["trust_remote_code"]
                                                               else [])) for i, e in enumerate(entries)]
    runs = rmlib_commands(hub.url, tmp_path, commands)
    assert [r["rc"] for r in runs] == [0] * len(entries), [r["err"] for r in runs]
    assert len(entries) == 10 and sum(bool(e["trust_remote_code"]) for e in entries) == 3
    for i, e in enumerate(entries):
        prov = load_scores(tmp_path / f"{i}.parquet").attrs["provenance"]
        assert prov["model_id"] == e["hub_id"], e
        assert prov["revision"] == (e["revision"] or hub.repos[e["hub_id"]].refs["main"]), e
        assert prov["score_from"] == e["score_from"], e
        requested = [p for _, p in hub.requested if e["hub_id"] in p]
        assert any(p.endswith("modeling_custom.py") for p in requested) == bool(e["trust_remote_code"]), e
        if e["revision"]:  # pinned: every file of that commit
            assert all(f"/{e['revision']}" in p for p in requested if "/resolve/" in p), e


def test_chapter_parameters_resolve_hub_models_before_the_chapter_runs(hub, monkeypatch, tmp_path):
    """``python -m rmlib.book chapter 01 -p models [...]``: a hub id is resolved while the parameters are
    checked (one small request, no file downloaded), so an unknown repository stops the chapter before a kernel
    starts; a hub that cannot be reached is left to the load."""
    from huggingface_hub import constants

    from rmlib.book.chapters import ParameterError, chapter_notebook, validate_parameters

    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    notebook = chapter_notebook("01")
    before = len(hub.requested)
    assert validate_parameters(notebook, {"models": '["org/llama-rm", "tiny:llama-classifier"]'})["models"] == [
        "org/llama-rm", "tiny:llama-classifier"]
    with pytest.raises(ParameterError, match=r"parameter 'models': no model repository 'org/no-such-rm'"):
        validate_parameters(notebook, {"models": '["org/llama-rm", "org/no-such-rm"]'})
    asked = [r for r in hub.requested[before:] if "/agent-harnesses" not in r[1]]  # the client's own look-up
    assert asked == [("GET", "/api/models/org/llama-rm")] * 2 + [("GET", "/api/models/org/no-such-rm")]
    assert (tmp_path / "hf" / "models--org--llama-rm" / "refs" / "main").read_text() == hub.repos["org/llama-rm"].refs["main"]
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    assert validate_parameters(notebook, {"models": '["org/elsewhere-rm"]'})["models"] == ["org/elsewhere-rm"]


def test_a_chapter_builds_its_page_from_a_hub_model_then_offline(hub, tmp_path):
    """``make chapter CH=01 PARAMS='-p models ["org/gemma-rm"]'`` (with the chapter's tiny parameters) through the
    local hub: the page is executed and its provenance names the commit ``main`` resolved to; then with
    HF_HUB_OFFLINE=1 and a fresh score store the same page is built from the hub cache, asking the hub nothing."""
    import nbformat

    commit = hub.repos["org/gemma-rm"].refs["main"]
    # the hub RM in place of the tiny ones; the sections that load other models off (the LM comparison, the
    # follow-up's words scored here) or that score the vocabulary a second way (the mode comparison)
    params = json.dumps({"models": '["org/gemma-rm"]', "lm": "", "live_models": "[]", "compare_n": "0"})

    def build(offline: bool) -> str:
        out = tmp_path / ("offline" if offline else "online")
        done = subprocess.run([sys.executable, "-c", CHAPTER_DRIVER, "01", params, str(out)], cwd=tmp_path,
                              env=hub_environment(hub.url, tmp_path, offline=offline), capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        page = nbformat.read(str(out / "01_optimal_pessimal_tokens.ipynb"), as_version=4)
        assert not [o for c in page.cells if c.cell_type == "code" for o in c.get("outputs", [])
                    if o.get("output_type") == "error"]
        return json.dumps([c.get("outputs", []) for c in page.cells if c.cell_type == "code"])

    before = len(hub.requested)
    online = build(offline=False)
    assert "org/gemma-rm" in online and commit in online  # the provenance table: the model and its commit
    fetched = [p for m, p in hub.requested[before:] if m == "GET" and p.startswith("/org/gemma-rm/resolve/")]
    assert f"/org/gemma-rm/resolve/{commit}/config.json" in fetched  # the weights came through the local hub
    assert all(f"/{commit}/" in p for p in fetched)  # all of them at the commit main named
    seen = len(hub.requested)
    (tmp_path / "scores").rename(tmp_path / "scores-online")  # scored again offline, not read back
    offline = build(offline=True)
    assert len(hub.requested) == seen  # offline: nothing asked of the hub
    assert "org/gemma-rm" in offline and commit in offline
