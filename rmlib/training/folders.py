"""A training run's folder: its lock (one run at a time), the checkpoint after each epoch (safetensors and
JSON, nothing pickled; only the latest kept), the finished Hugging Face folder, and the pointer file that
names a folder as ``trained:<base>``."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import sys
import tempfile

import torch

from ..errors import InputError
from ..files import atomic_path, atomic_write, file_lock, lock_holder, nearest_existing
from .configuration import LOCK_NAME

def check_output_folder(out) -> pathlib.Path:
    """``out`` (``--out``): a folder, new, empty or holding a model trained here, in a writable place."""
    folder = pathlib.Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out {folder} is a file: give a folder for the trained model (it is created if missing)")
    probe = nearest_existing(folder)
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"--out {folder}: cannot write in {probe} (not a writable folder); choose another folder")
    if (folder.is_dir() and any(p.name != LOCK_NAME for p in folder.iterdir())
            and not (folder / ".checkpoints").exists() and not (folder / "training.json").exists()):
        raise InputError(f"--out {folder} exists and is not a trained-model folder: pass an empty or new folder")
    return folder


@contextlib.contextmanager
def folder_lock(folder: pathlib.Path, wait: bool, progress: bool):
    """Hold the training lock of ``folder`` for the block. Another run holding it: ``wait`` (a cache
    folder: this run then reuses what that one trains) or an :class:`InputError` naming it (``--out``)."""
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the model folder {folder} ({err.strerror or err}): choose a writable "
                         "place (--out, or RMLIB_CACHE_DIR for the cache)") from None
    lock = folder / LOCK_NAME
    with file_lock(lock, blocking=False) as held:
        if held:
            try:
                yield
            finally:
                if created and [p.name for p in folder.iterdir()] == [LOCK_NAME]:  # refused before any work:
                    lock.unlink()  # leave no folder behind (this run made it and wrote only its lock)
                    folder.rmdir()
            return
    holder = lock_holder(lock)
    if not wait:
        raise InputError(f"--out {folder}: {holder} is training into this folder now; wait for it to finish "
                         "(the same command then reuses its model) or pass another --out")
    if progress:
        print(f"waiting for {holder}, which is training {folder}", file=sys.stderr)
    with file_lock(lock, blocking=True):
        yield


def save_checkpoint(folder: pathlib.Path, epoch: int, params, optimizer, state: dict) -> None:
    """Write epoch ``epoch``'s checkpoint (weights and optimizer as safetensors, the rest as JSON), then
    remove every earlier one: only the latest is kept (each holds the whole loss curve so far)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"param.{n}": p.detach().cpu().contiguous() for n, p in params}
    opt = optimizer.state_dict()
    steps = {}
    for i, s in opt["state"].items():
        for key, value in s.items():
            if torch.is_tensor(value) and value.dim() > 0:
                tensors[f"opt.{i}.{key}"] = value.detach().cpu().contiguous()
            else:
                steps[f"{i}.{key}"] = float(value)
    with atomic_path(folder / f"epoch-{epoch}.safetensors") as tmp:
        save_file(tensors, str(tmp))
    atomic_write(folder / f"epoch-{epoch}.json", json.dumps({**state, "epoch": epoch, "opt_scalars": steps,
                                                              "param_groups": opt["param_groups"]}))
    keep = {f"epoch-{epoch}.safetensors", f"epoch-{epoch}.json"}
    for old in sorted(folder.glob("epoch-*.json")) + sorted(folder.glob("epoch-*.safetensors")):
        if old.name not in keep:  # the record first: a checkpoint without its record is never read
            old.unlink(missing_ok=True)


def latest_checkpoint(folder: pathlib.Path, key: str) -> tuple[int, dict] | None:
    if not folder.is_dir():
        return None
    found = []
    for p in folder.glob("epoch-*.json"):
        try:
            state = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        e = state.get("epoch")
        if state.get("key") == key and (folder / f"epoch-{e}.safetensors").exists():
            found.append((e, state))
    return max(found, key=lambda x: x[0]) if found else None


def load_checkpoint(folder: pathlib.Path, epoch: int, state: dict, params, optimizer) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / f"epoch-{epoch}.safetensors"))
    with torch.no_grad():
        for n, p in params:
            p.copy_(tensors[f"param.{n}"])
    opt_state: dict = {}
    for name, value in tensors.items():
        if name.startswith("opt."):
            _, i, key = name.split(".", 2)
            opt_state.setdefault(int(i), {})[key] = value
    for name, value in state["opt_scalars"].items():
        i, key = name.split(".", 1)
        opt_state.setdefault(int(i), {})[key] = torch.tensor(value)
    optimizer.load_state_dict({"state": opt_state, "param_groups": state["param_groups"]})


def save_folder(folder: pathlib.Path, model, tok, template: str, info: dict) -> None:
    """Write the Hugging Face folder, each file whole or not at all (:func:`rmlib.files.atomic_path`), and
    ``training.json`` last: a folder that has it is complete. The checkpoints are dropped once it is."""
    import copy

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".save-", dir=folder) as staging:  # transformers writes a folder
        staging = pathlib.Path(staging)
        model.save_pretrained(staging, safe_serialization=True)
        tok = copy.deepcopy(tok)
        tok.chat_template = template
        tok.pad_token = tok.convert_ids_to_tokens(model.config.pad_token_id)  # the classifier's pad
        tok.save_pretrained(staging)
        for f in sorted(staging.iterdir()):
            with atomic_path(folder / f.name) as tmp:
                os.replace(f, tmp)  # the same file system: moved, not copied
    atomic_write(folder / "training.json", json.dumps(info, indent=1, default=float))
    shutil.rmtree(folder / ".checkpoints", ignore_errors=True)


def point_to(folder: pathlib.Path, base: str) -> None:
    """Name ``folder`` as ``trained:<base>`` (its pointer file, replaced atomically)."""
    from ..engine.trained_pointers import trained_pointer

    pointer = trained_pointer(base)
    if pointer.is_file() and pointer.read_text().strip() == folder.name:
        return
    atomic_write(pointer, folder.name + "\n")
