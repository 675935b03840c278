"""The named choices and small parsers the command line shares with the library (light: stdlib only).

``python -m rmlib --help`` and an argument error answer without importing
torch, transformers or pandas, so every constant the CLI offers as a choice
is defined here, once, and the heavy modules import it from here.

| name | values | used by |
|---|---|---|
| :data:`MODES` | ``token`` (exact, from token ids), ``paper`` (the published method) | scorers, store, results, CLI ``--mode`` |
| :data:`PAPER_FORWARDS` | ``shared-prefix`` (the texts' common prefix run once), ``full`` (a padded forward per batch, as published) | ``Scorer(paper_forward=)``, CLI ``--paper-forward`` |
| :data:`MODEL_KINDS` | ``classifier``, ``logprob`` | ``models.load_model(kind=)``, CLI ``--kind`` |
| :data:`SCORER_KINDS` | the model kinds and ``implicit`` (policy over reference) | GCG, search |
| :data:`DTYPE_NAMES` | ``float32``, ``bfloat16``, ``float16`` | ``models.DTYPES``, CLI ``--dtype`` |
| :class:`OneLineParser` | argument errors as one line, ``PROG: error: MESSAGE (see PROG --help)`` | the parsers of ``rmlib.cli`` and ``rmlib.book`` |
| :data:`DEVICE_MAPS` | ``auto``, ``balanced``, ``balanced_low_0``, ``sequential`` | ``models.load_model(device_map=)``, CLI ``--device-map`` |
| :data:`TEMPLATE_NAMES` | the built-in chat templates of :data:`rmlib.engine.frames.TEMPLATES` | CLI ``--chat-template`` |
| :data:`TINY_ARCHS`, :data:`RANDOM_SHAPES` | ``tiny:<arch>`` test models, ``random:<shape>`` benchmark models | models, CLI |
| :data:`BIGTWO_DIMENSIONS` | ``agency``, ``communion`` | the Big Two word lists (``tables.lexicons``) and their statistics (``stats.bigtwo``) |
| :data:`BENCH_SECTIONS` | the ``make bench`` sections in run order, each ``default``, ``full`` or ``gpu`` | ``rmlib.bench.SECTIONS``, CLI ``bench --only``, ``--full`` |
"""

from __future__ import annotations

import argparse

from .errors import InputError

MODES = ("token", "paper")
#: The Big Two's dimensions, in the order the word lists are returned.
BIGTWO_DIMENSIONS = ("agency", "communion")
#: How mode "paper" runs its (published) inputs: the same inputs and read positions either way.
PAPER_FORWARDS = ("shared-prefix", "full")
MODEL_KINDS = ("classifier", "logprob")
SCORER_KINDS = (*MODEL_KINDS, "implicit")
DTYPE_NAMES = ("float32", "bfloat16", "float16")
#: ``device_map`` values, passed to transformers (accelerate) to spread a large model over the GPUs.
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")
TEMPLATE_NAMES = ("chatml", "llama3", "plain", "gemma")  # the keys of rmlib.engine.frames.TEMPLATES (a test checks)
TINY_ARCHS = ("llama-classifier", "gemma2-classifier", "llama-lm")
#: ``random:<shape>`` -> the embedded model whose config (size) and tokenizer it takes, or None for a paper
#: RM's shape built from its config with a synthetic tokenizer (``rmlib.engine.shapes``); a classifier head.
RANDOM_SHAPES = {"smollm2-135m-classifier": "default", "gemma2-2b-rm": None, "llama3.1-8b-rm": None,
                 "gemma2-27b-rm": None}
#: The ``make bench`` sections in run order, and when each runs: ``"default"`` in every run, ``"full"`` with
#: ``--full``, ``"gpu"`` with ``--full`` on a CUDA GPU only (``--only`` names any). :data:`rmlib.bench.SECTIONS`
#: gives each its function; the CLI's help lists them from here without importing the benchmarks.
BENCH_SECTIONS = {"startup": "default", "startup_parts": "default", "engine_vs_paper": "default",
                  "logprob_full_vocab": "default", "chapter_scoring": "default", "text_scoring": "default",
                  "book_workers": "default", "heap": "default", "gcg": "default",
                  "whole_process": "full", "threads_scaling": "full", "train_rm": "full", "search": "full",
                  "search_goal": "full", "search_anytime": "full", "gpu": "gpu"}


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``PROG: error: MESSAGE (see PROG --help)``, exit status 2:
    the usage block argparse prints first would bury the line that says what is wrong (``--help`` shows it).
    Subparsers made with ``add_subparsers`` are of the same class."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(str(message).split())} (see {self.prog} --help)\n")


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else an InputError (a ValueError) saying what each means."""
    if mode not in MODES:
        raise InputError(f"mode must be 'token' (exact, from token ids) or 'paper' (the published method), not {mode!r}")
    return mode


def check_device_map(value, name: str = "device_map") -> str:
    """``value`` if it is one of :data:`DEVICE_MAPS`, else an :class:`InputError` (starting with ``name``, when
    given) naming them; a device's name (``cuda:0``) is refused with a pointer to ``--device``, which places a
    model on one device whichever way it is loaded."""
    if isinstance(value, str) and value in DEVICE_MAPS:
        return value
    import difflib

    close = difflib.get_close_matches(str(value).strip().lower(), DEVICE_MAPS, n=1, cutoff=0.6)
    one = str(value).strip().split(":")[0] in ("cpu", "cuda", "mps")
    fix = (f"for one device, leave --device-map out and give --device {value}" if one else
           f"did you mean {close[0]!r}?" if close else "give one of those, or leave it out (one device: --device)")
    text = f"{value!r} is not one of {', '.join(DEVICE_MAPS)} (the ways to spread a model over the GPUs): {fix}"
    raise InputError(f"{name} {text}" if name else text)


def check_chat_template(value, name: str = "chat_template") -> str:
    """``value`` if it is a built-in template's name (:data:`TEMPLATE_NAMES`) or looks like a Jinja template
    (it holds ``{{`` or ``{%``); else an :class:`InputError` (starting with ``name``, when given) that names the
    built-in templates and, for a near miss (``chatmll``), the one meant. Checked before a model loads: a
    misspelt name would otherwise be rendered as a template with no placeholder and fail late and vaguely."""
    if isinstance(value, str) and (value in TEMPLATE_NAMES or "{{" in value or "{%" in value):
        return value
    import difflib

    close = difflib.get_close_matches(str(value).strip().lower(), TEMPLATE_NAMES, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]!r}?" if close else "give one of those names, or a Jinja template"
    text = (f"{value!r} is neither a built-in template ({', '.join(TEMPLATE_NAMES)}) nor a Jinja template (it has "
            f"no '{{{{' or '{{%'): {fix}")
    raise InputError(f"{name} {text}" if name else text)


def vocab_slice(text: str | None) -> slice | str | None:
    """Read ``"START:STOP"`` (either side may be empty) as a slice of the vocabulary.

    ``""`` or ``None`` means the whole vocabulary (returns ``None``); ``"words"``
    the stated subset of :mod:`rmlib.tables.subsets` (returned as ``"words"``,
    resolved per model's tokenizer by ``rmlib.tables.results.resolve_token_ids``).
    """
    if text is None or not str(text).strip():
        return None
    if str(text).strip().lower() == "words":
        return "words"
    parts = str(text).strip().split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, stop = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise InputError(
            f"vocabulary slice {text!r} is not START:STOP: write e.g. '0:300', ':1000' or '1000:' "
            "(or '' for the whole vocabulary, 'words' for the lexicon words plus a random sample)"
        ) from None
    if (start is not None and start < 0) or (stop is not None and stop < 0):
        raise InputError(f"vocabulary slice {text!r}: token ids are non-negative, use e.g. '0:300'")
    if start is not None and stop is not None and stop <= start:
        raise InputError(f"vocabulary slice {text!r} is empty: STOP must be greater than START")
    return slice(start, stop)


__all__ = ["BIGTWO_DIMENSIONS", "DTYPE_NAMES", "MODEL_KINDS", "MODES", "PAPER_FORWARDS", "RANDOM_SHAPES", "SCORER_KINDS", "TEMPLATE_NAMES", "TINY_ARCHS",
           "DEVICE_MAPS", "OneLineParser", "check_chat_template", "check_device_map", "check_mode", "vocab_slice"]


def count_at_least_one(value, source: str, what: str) -> int:
    """``value`` (an int or its text) as a whole number >= 1; else an :class:`InputError` naming
    ``source`` (``--jobs``, ``RMLIB_THREADS``) and what the number counts."""
    try:
        n = int(str(value).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(f"{source}={value!r}: give {what}, a whole number >= 1")
    return n
