"""The model registry: one entry per model holds its quirks, and a new reward model is one entry.

The shipped entries are checked against what the rest of rmlib says of the same models; an entry added
through ``RMLIB_MODEL_REGISTRY`` is loaded and scored end to end (a tiny model served as a hub repository,
its template, head, pinned revision and custom-code need all from the entry, no code changed).
"""

import pathlib

import numpy as np
import pytest
import yaml

from rmlib import registry
from rmlib.engine.frames import TEMPLATES
from rmlib.engine.models import load_model, model_kind
from rmlib.engine.scorers import Scorer
from rmlib.errors import InputError
from rmlib.options import TEMPLATE_NAMES
from rmlib.tables.data_files import followup_manifest
from rmlib.tables.store import load_scores
from tests.hub_server import Hub
from tests.local_http import live_server_threads
from tests.models_fixture import hub_repo_files, write_files
from tests.test_hub_online import IDS, PROMPT, rmlib_commands, score, whole_sequence_scores


def added_registry(tmp_path, monkeypatch, entries) -> pathlib.Path:
    path = tmp_path / "more_models.yaml"
    path.write_text(yaml.safe_dump(entries))
    monkeypatch.setenv(registry.REGISTRY_ENV_VAR, str(path))
    return path


def test_roles_name_the_papers_ten_and_the_followups_released_rms():
    paper = registry.paper_models()
    assert len(paper) == 10 and paper["rewardbench_rank"].is_monotonic_increasing
    assert set(registry.models("paper")["hub_id"]) == set(paper["hub_id"])
    released = {f["model"] for f in followup_manifest()["files"] if f.get("model")}
    assert set(registry.models("followup")["hub_id"]) == released
    # every entry has every key; no model is named twice
    names = [e["hub_id"] or e["spec"] for e in registry.entries()]
    assert len(names) == len(set(names))
    assert all(set(e) == set(registry.DEFAULTS) for e in registry.entries())
    assert set(registry.models("tiny")["spec"]) == {"tiny:gemma2-classifier"}
    with pytest.raises(InputError, match="unknown role 'judges'"):
        registry.models("judges")


def test_each_models_template_is_named_once_in_its_entry():
    """The embedded base model, the tiny Gemma-2 model and the random shapes take their entries' templates:
    the loaded model and its tokenizer carry them, and the scorer's frame renders that text."""
    gemma = load_model("tiny:gemma2-classifier")
    assert gemma.chat_template == registry.lookup("tiny:gemma2-classifier")["template"] == "gemma"
    assert gemma.tokenizer.chat_template == TEMPLATES["gemma"]
    frame = Scorer(gemma).frame(PROMPT)
    assert frame.chat_template == TEMPLATES["gemma"] and frame.prefix_text.endswith("<start_of_turn>model\n")
    assert registry.lookup("gemma-3-270m")["template"] == "plain"
    assert load_model("tiny:llama-classifier").chat_template is None  # no entry: the tokenizer's own
    from rmlib.engine.shapes import PAPER_SHAPES

    for shape, s in PAPER_SHAPES.items():
        assert s.chat_template == TEMPLATES[registry.lookup("random:" + shape)["template"]]
    assert set(TEMPLATE_NAMES) == set(TEMPLATES)


def test_an_added_entry_replaces_a_shipped_ones_quirks(tmp_path, monkeypatch):
    """One entry in another file changes a model's template (and nothing else is needed)."""
    before = Scorer(load_model("tiny:gemma2-classifier")).frame(PROMPT)
    added_registry(tmp_path, monkeypatch, [{"spec": "tiny:gemma2-classifier", "kind": "classifier",
                                            "template": "plain", "roles": ["tiny"]}])
    assert [e["template"] for e in registry.entries() if e["spec"] == "tiny:gemma2-classifier"] == ["plain"]
    after = Scorer(load_model("tiny:gemma2-classifier")).frame(PROMPT)
    assert before.chat_template == TEMPLATES["gemma"] and after.chat_template == TEMPLATES["plain"]
    assert after.prefix_text.endswith(f"User: {PROMPT}\nAssistant:")
    monkeypatch.delenv(registry.REGISTRY_ENV_VAR)
    assert registry.lookup("tiny:gemma2-classifier")["template"] == "gemma"


@pytest.mark.parametrize("entry, message", [
    ({"hub_id": "acme/rm", "template": "alpaca"}, r"template must be one of \['chatml', 'llama3', 'plain', 'gemma'\]"),
    ({"hub_id": "acme/rm", "score_head": "logits0"}, r"unknown key\(s\) \['score_head'\]"),
    ({"hub_id": "acme/rm", "roles": ["paper", "judge"]}, "roles must be a non-empty list"),
    ({"hub_id": "acme/rm", "kind": "regressor"}, "kind must be one of"),
    ({"hub_id": "acme/rm", "trust_remote_code": "yes"}, "trust_remote_code must be true or false"),
    ({"nickname": "RM"}, "an entry needs hub_id"),
])
def test_a_bad_added_entry_is_an_input_error_naming_the_file_and_the_key(tmp_path, monkeypatch, entry, message):
    path = added_registry(tmp_path, monkeypatch, [entry])
    with pytest.raises(InputError, match=message) as err:
        registry.lookup("acme/rm")
    assert str(path) in str(err.value)


def test_an_unreadable_added_registry_says_which_file(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.REGISTRY_ENV_VAR, str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match="missing.yaml.*RMLIB_MODEL_REGISTRY"):
        registry.entries()
    (tmp_path / "bad.yaml").write_text("hub_id: [unclosed")
    monkeypatch.setenv(registry.REGISTRY_ENV_VAR, str(tmp_path / "bad.yaml"))
    with pytest.raises(InputError, match="not valid YAML"):
        registry.entries()


def test_a_new_reward_model_is_one_registry_entry(tmp_path):
    """A custom-head RM (remote code, ``outputs.score``) on a hub: with its entry in a registry file it loads
    at the entry's pinned revision (not the branch, moved on since) with the entry's template, is refused
    without the opt-in its entry asks for, and scores as a plain forward of the pinned weights' ``score``;
    without the entry rmlib does not know where its reward lives."""
    hub = Hub()
    pinned_files = hub_repo_files("llama-classifier", custom=True)
    pinned = hub.add("acme/new-rm", pinned_files)
    hub.add("acme/new-rm", hub_repo_files("llama-classifier", custom=True, scale=3.0))  # main moves on
    entry = {"hub_id": "acme/new-rm", "kind": "classifier", "template": "plain", "score_from": "score",
             "trust_remote_code": True, "revision": pinned, "dtype": "float32", "roles": ["user"]}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump([entry]))
    with hub.serve() as url:
        out_with, out_without = tmp_path / "with.parquet", tmp_path / "without.parquet"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(registry.REGISTRY_ENV_VAR, str(tmp_path / "models.yaml"))
            refused, scored = rmlib_commands(url, tmp_path, [score("acme/new-rm"),
                                                             score("acme/new-rm", out_with, "--trust-remote-code")])
        (tmp_path / "plain").mkdir()
        without, = rmlib_commands(url, tmp_path / "plain", [score("acme/new-rm", out_without, "--trust-remote-code")])
    assert live_server_threads() == []
    assert refused["rc"] == 2 and "trust_remote_code" in refused["err"]
    assert scored["rc"] == 0, scored["err"]
    table = load_scores(out_with)
    prov = table.attrs["provenance"]
    assert prov["revision"] == pinned and prov["score_from"] == "score"
    assert prov["chat_template"] == TEMPLATES["plain"] and prov["prefix_text"].startswith(f"User: {PROMPT}\n")
    folder = write_files(pinned_files, tmp_path / "pinned")
    expected = whole_sequence_scores(folder, prov, custom="Llama")
    np.testing.assert_allclose(table.set_index("token_id").loc[IDS, "score"], expected, rtol=0, atol=1e-5)
    # without the entry rmlib knows neither its head nor its pin: logits[:, 0] of main's commit, which it lacks
    assert without["rc"] == 2 and "has no 'logits'" in without["err"] and not out_without.exists()


def test_model_kind_is_the_entrys(tmp_path, monkeypatch):
    assert model_kind("tiny:gemma2-classifier") == "classifier" and model_kind("gemma-3-270m") == "logprob"
    assert model_kind("acme/judge-lm") is None
    added_registry(tmp_path, monkeypatch, [{"hub_id": "acme/judge-lm", "kind": "logprob"}])
    assert model_kind("acme/judge-lm") == "logprob"
