"""Tiny models built from configs, shared by the engine tests (loaded once per session)."""

import copy
import json
import functools

import torch

from rmlib.engine.scorers import ImplicitRewardScorer, Scorer, load_scorer


@functools.lru_cache(maxsize=None)
def tiny(arch: str, batch_size: int = 64):
    return load_scorer(f"tiny:{arch}", batch_size=batch_size)


def scaled_reference(policy: Scorer, scale: float = 0.5) -> Scorer:
    """A second LM on the policy's tokenizer: a copy with every weight multiplied by ``scale``."""
    loaded = copy.copy(policy.loaded)
    loaded.model = copy.deepcopy(policy.loaded.model)
    with torch.no_grad():
        for p in loaded.model.parameters():
            p.mul_(scale)
    return Scorer(loaded)


def tiny_implicit(scale: float = 0.5) -> ImplicitRewardScorer:
    policy = tiny("llama-lm")
    return ImplicitRewardScorer(policy, scaled_reference(policy, scale))


def poisoned_classifier(prompt: str, token_id: int, value: float) -> Scorer:
    """A fresh tiny-classifier scorer whose score for ``token_id`` comes out as ``value`` (NaN, inf)."""
    scorer = Scorer(tiny("llama-classifier").loaded)
    kernel = scorer.kernel(prompt)[1]
    real = kernel.classifier

    def poisoned(ids, last, embeds=None):
        out = real(ids, last, embeds)
        out[ids[:, 0] == token_id] = value
        return out

    kernel.classifier = poisoned
    return scorer


# -- hub repositories of tiny models (served by tests/hub_server.py) ----------------------------------

#: The remote code of a custom-head reward model (the layout of ArmoRM's and QRM's repositories: a
#: ``modeling_custom.py`` named by the config's ``auto_map``; the reward is ``outputs.score``).
CUSTOM_MODELING = '''
import dataclasses

import torch
from transformers import {base}Model, {base}PreTrainedModel
from transformers.utils import ModelOutput


@dataclasses.dataclass
class CustomOutput(ModelOutput):
    rewards: torch.FloatTensor = None
    score: torch.FloatTensor = None


class {arch}({base}PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.model = {base}Model(config)
        self.regression_layer = torch.nn.Linear(config.hidden_size, 3, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, **kwargs):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                            inputs_embeds=inputs_embeds).last_hidden_state
        last = (attention_mask.sum(-1) - 1) if attention_mask is not None else \\
            torch.full(hidden.shape[:1], hidden.shape[1] - 1, device=hidden.device)
        rewards = self.regression_layer(hidden[torch.arange(hidden.shape[0], device=hidden.device), last])
        return CustomOutput(rewards=rewards, score=rewards.mean(-1, keepdim=True))
'''


def custom_model_class(base: str):
    """The class :data:`CUSTOM_MODELING` defines for ``base`` (``Llama`` or ``Gemma2``), built here from the same
    text the repositories serve (to compute their scores independently of rmlib's scoring path)."""
    name = f"{base}ForRewardModelWithGating"
    namespace: dict = {}
    exec(compile(CUSTOM_MODELING.format(base=base, arch=name), "modeling_custom.py", "exec"), namespace)
    return namespace[name]


def write_files(files: dict, folder) -> "pathlib.Path":
    """A repository's files (name -> bytes) written into ``folder``, e.g. to load it as a local folder."""
    import pathlib

    folder = pathlib.Path(folder)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


@functools.lru_cache(maxsize=None)
def hub_repo_files(arch: str, *, scale: float = 1.0, weights: str = "safetensors", custom: bool = False,
                   shard: str | None = None) -> dict:
    """The files (name -> bytes) of a hub repository of the tiny classifier ``arch`` (``llama-classifier`` or
    ``gemma2-classifier``), as ``save_pretrained`` writes them: config, weights (``"safetensors"``;
    ``"bin"``: a ``pytorch_model.bin`` only, the pickle format rmlib refuses), tokenizer files with the chat
    template. ``scale`` multiplies the score head (another revision of the same model); ``custom`` gives it a
    remote-code head (:data:`CUSTOM_MODELING`: ``outputs.score``, no logits); ``shard`` a maximum shard size
    (sharded safetensors and their index, as the large RMs' repositories hold)."""
    import pathlib
    import tempfile

    import torch

    from rmlib.engine.models import load_model

    loaded = load_model(f"tiny:{arch}", device="cpu")
    model, tok = loaded.model, loaded.tokenizer
    with torch.no_grad():
        model.score.weight.mul_(scale)
    if custom:
        base = "Gemma2" if arch.startswith("gemma2") else "Llama"
        cls = custom_model_class(base)
        cfg = copy.deepcopy(model.config)
        cfg.architectures = [cls.__name__]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1)
            custom_model = cls(cfg)
        custom_model.model.load_state_dict(model.model.state_dict())
        with torch.no_grad():
            custom_model.regression_layer.weight.mul_(scale)
        model = custom_model
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        model.save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
        if weights == "bin":  # transformers writes safetensors only: the pickle checkpoint of an older repository
            torch.save(model.state_dict(), folder / "pytorch_model.bin")
            (folder / "model.safetensors").unlink()
        if custom:
            (folder / "modeling_custom.py").write_text(CUSTOM_MODELING.format(base=base, arch=cls.__name__))
            cfg_path = folder / "config.json"
            config = json.loads(cfg_path.read_text())
            config["auto_map"] = {"AutoModelForSequenceClassification": f"modeling_custom.{cls.__name__}"}
            cfg_path.write_text(json.dumps(config, indent=2))
        tok.save_pretrained(folder)
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert ("pytorch_model.bin" in files) == (weights == "bin") and ("model.safetensors" in files) == (
        weights != "bin" and not shard), sorted(files)
    return files
