"""Speed benchmarks (``make bench``): JSON, ratios measured side by side in one run, each section timed.

``make bench`` runs the default sections (:data:`SECTIONS`; ten minutes at most on a 2-core CPU)
and writes ``docs/benchmarks.json`` and ``docs/benchmarks.md`` with the machine and the date
(``--out``); ``--full`` adds the long sections, ``--only NAME[,NAME]`` runs just those. Each
section's seconds are printed as it ends and kept in ``sections_s``.

Default run:

* ``startup``: whole ``rmlib score`` processes timed from outside, cold and warm, to the first
  score (``rmlib.bench.startup``).
* ``startup_parts``: a warm ``rmlib score`` of 64 tokens as a whole process (median of 3) beside its
  parts timed in a fresh process (imports, the model stack's, weights, tokenizer, scoring, token table,
  writing) and their sum, and whether the tokenizer was read and transformers imported (a warm start
  does neither), for the default model and for a local Gemma-2 classifier folder with Gemma 3's
  real tokenizer (262,144 ids); the whole vocabulary's token table built and read back
  (``rmlib.bench.startup``).
* ``engine_vs_paper``: a SmolLM2-135M-shaped classifier RM (random weights, the model's own
  ChatML template) scores N consecutive vocabulary tokens with the engine (cached prefix, token +
  suffix only) and the first quarter of them (whole batches) with ``mode="paper"`` as the paper ran it
  (decode, template, tokenize, pad, each batch's full forward: ``paper_forward="full"``): tokens/s of each, their ratio, and the ratio's ceiling
  (prefix+token+suffix)/(token+suffix); beside them mode "paper" as rmlib runs it by default (the
  texts' common prefix run once).
* ``logprob_full_vocab``: the log-prob scorer over the default model's full vocabulary (load and
  scoring apart).
* ``chapter_scoring``: the chapters' vocabulary scoring with each trained RM as they load it
  (lite forward, grown CPU batch) against transformers at batch 64 (``rmlib.bench.chapter_speed``).
* ``text_scoring``: texts at fixed places (how the chapters score them) against length-sorted
  batches, at several positions per forward (``rmlib.bench.chapter_speed``).
* ``book_workers``: what ``make book``'s parallel chapters rest on: one process with every core
  against two with half the cores each, and two oversubscribed ones (``rmlib.bench.workers``).
* ``heap``: a one-thread scan of the trained SmolLM2 RM in whole processes with freed activations kept
  in the heap (:mod:`rmlib.engine.heap`, what ``load_model`` does on a CPU) and with glibc's defaults:
  seconds, page faults, kernel time, their ratio, the largest score difference (``rmlib.bench.heap_speed``).
* ``gcg``: GCG steps per second on the default model (``rmlib.bench.gcg_speed``).

With ``--full`` (or ``--only``):

* ``whole_process``: 2,048 tokens in whole ``rmlib score`` processes, engine vs the paper's
  method (``rmlib.bench.startup``).
* ``threads_scaling``: in-process tokens/s at 1 and 2 threads, idle and with a core kept busy,
  and the thread count rmlib chooses (``rmlib.bench.startup``).
* ``train_rm``: reward-model training throughput and the trained RM's scoring, both default
  bases (``rmlib.bench.train_speed``).
* ``search``: coordinate sweeps on ``trained:default``, L = 2 and 3, beside GCG
  (``rmlib.bench.search_speed``).
* ``search_goal``: the search goal (single-swap optimal, within 1 % of a 20-restart run, in at
  most 60 s) on the tiny classifier RM, as built and with rugged weights (``rmlib.bench.search_speed``).
* ``search_anytime``: search quality at equal budget on five seeded rugged tiny RMs, L = 2 and 3,
  both directions: the share of cells within 1 % of a 20-restart reference with the earlier
  three-start rule and with the anytime restarts (``rmlib.bench.search_speed``).

* ``gpu`` (a CUDA GPU only): the paper RMs' shapes (Gemma-2-2B, Llama-3.1-8B, Gemma-2-27B) in bf16,
  full-vocabulary wall time, tokens/s and the fraction of the FLOP floor, mode "paper", GCG and
  sweeps (``rmlib.bench.gpu``). ``python -m rmlib bench --only gpu --out docs/benchmarks-gpu.json``.

Other modes: ``--quick`` runs the start-up, whole-process, thread, worker, chapter- and text-scoring
sections on tiny models (for the tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from .. import __version__
from ..prompts import PAPER_PROMPTS
from ..errors import InputError
from ..files import atomic_write, check_output_path
from ..options import BENCH_SECTIONS

BENCH_PROMPT = PAPER_PROMPTS["greatest"]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def engine_vs_paper(n_tokens: int = 384, paper_tokens: int | None = None, repeats: int = 3, engine_batch: int = 256,
                    paper_batch: int = 64) -> dict:
    """Each path at its own sensible batch size: the engine's candidates are 3 tokens long,
    the paper path's whole sequences ~45, so 256 x 3 and 64 x 45 tokens per forward. Beside them,
    mode "paper" as rmlib runs it by default (``paper_forward="shared-prefix"``, CLI default batch):
    the same published inputs with their common prefix run once.

    The tokens are consecutive ids from the middle of the vocabulary, as a whole-vocabulary run meets
    them. The published computation runs the vocabulary in consecutive batches of ``paper_batch`` ids, so
    it scores the first ``paper_tokens`` of them (default a quarter, rounded to whole batches): rates are
    tokens per second of each path's own count, and the score differences are taken on the tokens both
    scored."""
    from ..engine.models import load_model
    from ..engine.scorers import Scorer

    whole = max(1, round(n_tokens / 4 / paper_batch)) * paper_batch
    paper_tokens = min(whole, n_tokens) if paper_tokens is None else paper_tokens
    if not 1 <= paper_tokens <= n_tokens:
        raise InputError(f"paper_tokens must be between 1 and n_tokens ({n_tokens}), not {paper_tokens}")
    loaded = load_model("random:smollm2-135m-classifier")
    engine_scorer = Scorer(loaded, batch_size=engine_batch)
    paper_scorer = Scorer(loaded, batch_size=paper_batch, paper_forward="full")  # the published computation
    shared_scorer = Scorer(loaded)  # mode "paper" as rmlib runs it by default
    first = engine_scorer.vocab_size // 2 // 4096 * 4096  # a boundary of every batch and block size used
    ids = np.arange(first, first + n_tokens, dtype=np.int64)
    every = np.arange(paper_tokens)  # the paper path's share: whole batches of consecutive ids
    paper_ids = ids[every]
    frame = engine_scorer.frame(BENCH_PROMPT)
    engine_scorer.token_scores(BENCH_PROMPT, ids[:8])  # warm up both paths
    paper_scorer.token_scores(BENCH_PROMPT, ids[:8], mode="paper")
    shared_scorer.token_scores(BENCH_PROMPT, ids[:8], mode="paper")
    engine_t, paper_t, shared_t = [], [], []
    for _ in range(repeats):  # interleaved, so drift in machine speed hits all alike
        engine, t = _timed(lambda: engine_scorer.token_scores(BENCH_PROMPT, ids))
        engine_t.append(t)
        paper, t = _timed(lambda: paper_scorer.token_scores(BENCH_PROMPT, paper_ids, mode="paper"))
        paper_t.append(t)
        shared, t = _timed(lambda: shared_scorer.token_scores(BENCH_PROMPT, ids, mode="paper"))
        shared_t.append(t)
    p, s = len(frame.prefix_ids), len(frame.suffix_ids)
    te, tp, ts = float(np.median(engine_t)), float(np.median(paper_t)), float(np.median(shared_t))
    engine_rate, paper_rate, shared_rate = n_tokens / te, paper_tokens / tp, n_tokens / ts
    return {
        "model": "random:smollm2-135m-classifier (SmolLM2-135M shape, random weights, fp32)",
        "template": "ChatML (the SmolLM2 tokenizer's own)", "n_tokens": int(n_tokens),
        "paper_tokens": int(paper_tokens), "repeats": repeats,
        "engine_batch_size": engine_batch, "paper_batch_size": paper_batch,
        "prefix_len": p, "suffix_len": s, "engine_s_median": round(te, 3), "paper_s_median": round(tp, 3),
        "engine_tokens_per_s": round(engine_rate, 1), "paper_tokens_per_s": round(paper_rate, 1),
        "ratio": round(engine_rate / paper_rate, 2), "ratio_ceiling": round((p + 1 + s) / (1 + s), 2),
        "max_abs_diff_engine_vs_paper": float(np.abs(engine[every] - paper).max()),
        "paper_shared_prefix_s_median": round(ts, 3), "paper_shared_prefix_tokens_per_s": round(shared_rate, 1),
        "paper_shared_prefix_vs_full_ratio": round(shared_rate / paper_rate, 2),
        "max_abs_diff_paper_shared_prefix_vs_full": float(np.abs(shared[every] - paper).max()),
    }


def logprob_full_vocab() -> dict:
    from ..engine.embedded import default_model_folder
    from ..engine.models import load_model
    from ..engine.scorers import Scorer

    default_model_folder()  # one-time GGUF conversion is not part of the timing
    loaded, load_s = _timed(lambda: load_model("default"))
    scorer = Scorer(loaded)
    table, score_s = _timed(lambda: scorer.score_tokens(BENCH_PROMPT))
    return {"model": loaded.model_id, "revision": loaded.revision, "vocab_size": len(table),
            "load_s": round(load_s, 2), "score_full_vocab_s": round(score_s, 3),
            "prob_mass": float(np.exp(table["score"]).sum())}


@dataclasses.dataclass(frozen=True)
class Section:
    """One part of ``make bench``: ``run(args)`` returns its JSON part. ``default``: in the run without
    ``--full`` (the default run fits in 10 minutes on a 2-core CPU; the long sections need ``--full``
    or ``--only``)."""

    run: Callable[[object], object]
    default: bool = True
    needs_gpu: bool = False


def _gcg(args):
    try:
        from .gcg_speed import bench_gcg
    except ImportError:
        return "not available"
    return bench_gcg()


def _train_rm(args):
    from .train_speed import bench_train

    return {base: bench_train(base) for base in ("default", "gemma-3-270m")}


def _search(args):
    from .search_speed import bench_search

    return bench_search()


def _search_goal(args):
    from .search_speed import bench_search_goal

    return {"tiny": bench_search_goal(), "tiny_rugged": bench_search_goal(init_range=1.0)}


def _search_anytime(args):
    from .search_speed import bench_search_anytime

    return bench_search_anytime()


def _gpu(args):
    from .gpu import bench_gpu

    out = getattr(args, "out", None)  # each finished part is kept beside the report as the run goes
    return bench_gpu(partial=str(pathlib.Path(out).with_suffix(".partial.json")) if out else None)


def _chapter_scoring(args):
    from .chapter_speed import chapter_scoring

    return chapter_scoring()


def _text_scoring(args):
    from .chapter_speed import text_scoring

    return text_scoring()


def _heap(args):
    from .heap_speed import heap_reuse

    return heap_reuse()


def _book_workers(args):
    from .workers import worker_scaling

    return worker_scaling()


def _startup(args):
    from . import startup

    return startup.startup("default")


def _startup_parts(args):
    from . import startup

    return startup.startup_parts()


def _whole_process(args):
    from . import startup

    return startup.whole_process(n_tokens=args.whole_tokens)


def _threads_scaling(args):
    from . import startup

    return startup.thread_scaling()


#: Each section's function. Names, run order and when each runs are :data:`rmlib.options.BENCH_SECTIONS`'s
#: (stdlib only, so the CLI's help lists them without importing this module): a new section is one line
#: there and one here.
SECTION_RUNS: dict[str, Callable[[object], object]] = {
    "startup": _startup,
    "startup_parts": _startup_parts,
    "engine_vs_paper": lambda args: engine_vs_paper(args.n_tokens),
    "logprob_full_vocab": lambda args: logprob_full_vocab(),
    "chapter_scoring": _chapter_scoring,
    "text_scoring": _text_scoring,
    "book_workers": _book_workers,
    "heap": _heap,
    "gcg": _gcg,
    "whole_process": _whole_process,
    "threads_scaling": _threads_scaling,
    "train_rm": _train_rm,
    "search": _search,
    "search_goal": _search_goal,
    "search_anytime": _search_anytime,
    "gpu": _gpu,
}
if set(SECTION_RUNS) != set(BENCH_SECTIONS):
    raise RuntimeError(f"rmlib.options.BENCH_SECTIONS and SECTION_RUNS name different sections: "
                       f"{sorted(set(SECTION_RUNS) ^ set(BENCH_SECTIONS))}")
#: Every section, in run order.
SECTIONS: dict[str, Section] = {name: Section(SECTION_RUNS[name], default=when == "default", needs_gpu=when == "gpu")
                                for name, when in BENCH_SECTIONS.items()}


def _only(value) -> set | None:
    """``--only a,b`` as a set of section names; a clear error for an unknown one."""
    if not value:
        return None
    names = {v.strip() for v in value.split(",") if v.strip()}
    bad = sorted(names - set(SECTIONS))
    if bad:
        raise InputError(f"--only: unknown section(s) {bad}; choose from {', '.join(SECTIONS)}")
    return names


def chosen_sections(args) -> list[str]:
    """The sections a run executes: ``--only``'s, else the default ones (every one with ``--full``),
    less those a ``--skip-*`` flag leaves out."""
    only = _only(getattr(args, "only", None))
    if only is not None:
        return [name for name in SECTIONS if name in only]
    skip = {"gcg": getattr(args, "skip_gcg", False), "search": getattr(args, "skip_search", False),
            "search_goal": getattr(args, "skip_search", False),
            "search_anytime": getattr(args, "skip_search", False), "train_rm": getattr(args, "skip_train", False)}
    full = getattr(args, "full", False)
    gpu = torch.cuda.is_available()
    return [name for name, sec in SECTIONS.items()
            if (full or sec.default) and not skip.get(name) and (gpu or not sec.needs_gpu)]


def machine() -> dict:
    """What the figures were measured on: CPU model, cores, memory, OS, versions, load, date, commit."""
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                    if line.startswith("model name")), "")
    mem_gib = None
    with contextlib.suppress(OSError, StopIteration, ValueError):
        kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        mem_gib = round(kib / 2**20, 1)
    from ..paths import checkout_root

    commit = None
    root = checkout_root()
    if root is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                    text=True, timeout=10).stdout.strip() or None
    return {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "cpu": cpu or platform.processor() or platform.machine(), "cpus": os.cpu_count(), "memory_gib": mem_gib,
            "os": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "rmlib_version": __version__, "commit": commit,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}


def _flat(value, prefix: str = "") -> list[tuple[str, object]]:
    if isinstance(value, dict):
        return [kv for k, v in value.items() for kv in _flat(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [kv for i, v in enumerate(value) for kv in _flat(v, f"{prefix}[{i}]")]
    return [(prefix, value)]


def markdown(report: dict) -> str:
    """``docs/benchmarks.md``: the machine and date, each section's time, then each section's figures."""
    m, sections = report["machine"], report["sections_s"]
    gpu = "gpu" in sections
    lines = ["# Benchmarks on a GPU" if gpu else "# Benchmarks", ""]
    if report.get("note"):  # how the page was made, where that is not one plain run
        lines += [report["note"], ""]
    elif gpu:
        lines += ["Written by `python -m rmlib bench --only gpu --out docs/benchmarks-gpu.json` on a CUDA machine "
                  "(every figure in `benchmarks-gpu.json` beside this file). Do not edit by hand: run it again.", ""]
    else:
        lines += ["Written by `make bench` (`python -m rmlib bench --out docs/benchmarks.json`; every figure of the "
                  "run is in `benchmarks.json` beside this file). Do not edit by hand: run it again. Sections left "
                  "out of the default run: `python -m rmlib bench --full` or `--only NAME`. The book build's own "
                  "times: `python -m rmlib.book timings` after a build.", ""]
    if report.get("summary"):  # a list of flat rows: one table
        cols = list(report["summary"][0])
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(row.get(c, "")) for c in cols) + " |" for row in report["summary"]]
        lines += [""]
    lines += ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in m.items() if v is not None]
    lines += [f"| {k} | {v} |" for k, v in (("threads", report.get("threads")),
                                               ("load (1 min) at start", report.get("load_avg_1min_at_start")))
              if v is not None]
    lines += ["", "| section | seconds |", "|---|---|"]
    lines += [f"| [{name}](#{name.replace('_', '-')}) | {sec} |" for name, sec in sections.items()]
    for name in sections:
        lines += ["", f"## {name}", "", "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in _flat(report.get(name))]
    return "\n".join(lines) + "\n"


def is_bench_report(path) -> bool:
    """Whether the file at ``path`` is a report ``rmlib bench --out`` wrote: the JSON (its machine and
    sections' times) or the Markdown page beside it. The only files ``--out`` replaces."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if path.suffix == ".md":  # the title and the sections' table that markdown() writes
        return text.startswith("# Benchmarks") and "\n| section | seconds |\n" in text
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and {"machine", "sections_s"} <= data.keys()


def check_report_output(out) -> pathlib.Path:
    """``--out FILE.json``: a path for the report, and for the page ``FILE.md`` beside it, where no file
    stands that rmlib did not write (:func:`rmlib.files.check_output_path`)."""
    path = check_output_path(out, ".json", ours=is_bench_report, kind="a benchmark report")
    page = path.with_suffix(".md")
    if (page.exists() or page.is_symlink()) and (page.is_symlink() or not page.is_file() or not is_bench_report(page)):
        raise InputError(f"--out {out} also writes {page}, which exists and is not a benchmark page that rmlib "
                         "wrote, so rmlib leaves it alone: choose another --out name, or move that file away yourself")
    return path


def main(args) -> int:
    from ..engine.threads import apply_threads
    from . import startup

    names = chosen_sections(args)  # a bad --only name fails before any work
    if getattr(args, "out", None):
        check_report_output(args.out)  # likewise a place the report cannot go
    threads = apply_threads(getattr(args, "threads", None))
    report = {"rmlib_version": __version__, "torch": torch.__version__, "python": platform.python_version(),
              "threads": threads, "load_avg_1min_at_start": round(os.getloadavg()[0], 2), "machine": machine(),
              "sections_s": {}}
    quick = getattr(args, "quick", False)
    if quick:  # on tiny models: for the tests
        report["startup"] = startup.startup("tiny:llama-classifier", runs=1)
        report["whole_process"] = startup.whole_process("tiny:llama-classifier", n_tokens=64)
        report["threads_scaling"] = startup.thread_scaling("tiny:llama-classifier", n_engine=64, n_paper=16, repeats=1)
        from .workers import worker_scaling

        report["book_workers"] = worker_scaling("tiny:llama-classifier", n_tokens=64, rounds=1, lite=False)
        from .chapter_speed import chapter_scoring

        report["chapter_scoring"] = chapter_scoring(("tiny:llama-classifier",), n_tokens=300, rounds=1)
        from .chapter_speed import text_scoring

        report["text_scoring"] = text_scoring("tiny:llama-classifier", rounds=1, n_items=40)
    else:
        for name in names:
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            report[name], seconds = _timed(lambda: SECTIONS[name].run(args))
            report["sections_s"][name] = round(seconds, 1)
            print(f"bench: {name} took {seconds:.1f} s", file=sys.stderr, flush=True)
    if isinstance(report.get("gpu"), dict) and report["gpu"].get("summary"):
        report["summary"] = report["gpu"].pop("summary")  # the page's first table
    if "whole_process" in report and "engine_vs_paper" in report:
        report["whole_process"]["in_process_ratio"] = report["engine_vs_paper"]["ratio"]
    out = getattr(args, "out", None)
    if out:
        path = pathlib.Path(out)
        atomic_write(path, json.dumps(report, indent=2) + "\n")
        atomic_write(path.with_suffix(".md"), markdown(report))
        print(f"bench: wrote {path} and {path.with_suffix('.md')}", file=sys.stderr)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0
