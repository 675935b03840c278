"""Command line: ``python -m rmlib score|search|train-rm|bench|import-paper-csv|paper-data|cache|chapter|book``.

The parser is built from the standard library and ``rmlib.options`` alone, so
``--help`` and argument errors answer without importing torch, transformers or
pandas; each subcommand imports what it needs when it runs. Errors print as
one line (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys

from . import options
from .paths import SCORES_ENV_VAR


def _slice(text: str) -> slice | str | None:
    try:
        return options.vocab_slice(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _threads(text: str) -> str:
    if text.strip() != "auto" and not (text.strip().isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a thread count: give a whole number >= 1 or 'auto'")
    if text.strip() != "auto":
        from .engine.threads import available_cpus, most_threads  # stdlib only

        cpus = available_cpus()
        most = most_threads(cpus)
        if int(text) > most:
            raise argparse.ArgumentTypeError(f"{int(text)} threads is far more than the {cpus} CPUs this process may "
                                             f"use (at most {most} are accepted; each thread reserves memory): give "
                                             f"{cpus}, or 'auto'")
    return text.strip()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be a positive whole number (1 or more)")
    return value


#: The largest prompt file read (a prompt must fit a model's context; /dev/zero is refused, not read).
MAX_PROMPT_FILE = 1 << 20


def _read_prompt(args) -> str:
    """The prompt from --prompt or --prompt-file (UTF-8, at most 1 MiB; a byte-order mark dropped, Windows
    line ends read as newlines, one trailing newline of a file dropped)."""
    from .errors import InputError

    if args.prompt_file is not None:
        from .tables.textfiles import read_text

        prompt = read_text(args.prompt_file, f"--prompt-file {args.prompt_file}", limit=MAX_PROMPT_FILE)
        prompt = prompt[:-1] if prompt.endswith("\n") else prompt
    else:
        prompt = args.prompt
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as err:  # undecodable bytes in argv arrive as lone surrogates
            raise InputError(f"--prompt holds bytes that are not UTF-8 (at character {err.start}); pass UTF-8 "
                             "text, or put the prompt in a UTF-8 file and use --prompt-file") from None
    if not prompt.strip():
        raise InputError("the prompt is empty: pass the question as --prompt TEXT or --prompt-file FILE")
    import unicodedata

    if all(unicodedata.category(c)[0] in "CZ" for c in prompt):  # NUL bytes, zero-width or other invisible marks
        where = f"--prompt-file {args.prompt_file}" if args.prompt_file is not None else "--prompt"
        raise InputError(f"{where} holds no visible character, only control or format characters (e.g. "
                         f"{ascii(next(c for c in prompt if not c.isspace()))}): the prompt is empty; pass the "
                         "question as text")
    return prompt


def _token_ids(tokens: slice | str | None, vocab_size: int, model_id: str, tokenizer=None):
    """The ids of a START:STOP slice, which must lie inside the vocabulary (no silent clipping),
    or of the stated subset ``words`` (rmlib.tables.subsets)."""
    import numpy as np

    from .errors import InputError

    if tokens is None:
        return None
    if isinstance(tokens, str):
        from .tables.results import resolve_token_ids

        return resolve_token_ids(tokens, vocab_size, tokenizer)
    start = tokens.start or 0
    stop = vocab_size if tokens.stop is None else tokens.stop
    if start >= vocab_size or stop > vocab_size:
        raise InputError(f"--tokens {start}:{'' if tokens.stop is None else tokens.stop} is outside the "
                         f"vocabulary of {model_id} (ids 0..{vocab_size - 1}, {vocab_size} tokens): use e.g. "
                         f"--tokens {min(start, vocab_size - 1)}:{vocab_size} or --tokens {min(start, vocab_size - 1)}:")
    return np.arange(start, stop)


def _train_first(args) -> None:
    """A ``trained:<base>`` model or reference not in the cache yet is trained first (the engine only loads)."""
    specs = [s for s in (args.model, getattr(args, "reference", None)) if isinstance(s, str) and s.startswith("trained:")]
    if specs:
        from .training.trained import ensure_trained

        for spec in specs:
            ensure_trained(spec, progress=not args.no_progress)


def _score(args) -> int:
    from .engine.threads import apply_threads, cpu_sample

    prompt = _read_prompt(args)
    started = cpu_sample()  # the imports below are the window in which the machine's load is measured
    from .engine.scorers import load_scorer
    from .stats.vocab import top_bottom
    from .tables.store import check_output_path, score_vocabulary

    if args.out:
        check_output_path(args.out, suffix=".parquet")  # before the model loads
    _check_device(args.device)
    apply_threads(args.threads, since=started)
    if args.no_progress:
        _quiet_transformers()
    dist = None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch
        import torch.distributed as dist

        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if torch.cuda.is_available():
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    _train_first(args)
    scorer = load_scorer(args.model, reference=args.reference, chat_template=args.chat_template,
                         batch_size=args.batch_size, paper_forward=args.paper_forward, kind=args.kind,
                         dtype=args.dtype, revision=args.revision, trust_remote_code=args.trust_remote_code,
                         device=args.device, device_map=args.device_map, lite=args.mode == "token")  # a Llama checkpoint starts ~2.5 s sooner (engine/lite_llama.py)
    ids = _token_ids(args.tokens, scorer.vocab_size, scorer.loaded.model_id, scorer.tokenizer)
    table = score_vocabulary(scorer, prompt, ids, mode=args.mode, cache_dir=args.cache_dir,
                             shard_size=args.shard_size, progress=not args.no_progress, out=args.out)
    if dist is None or dist.get_rank() == 0:
        ends = top_bottom(table, 5)
        top = ends[ends["end"] == "top"]
        print(f"scored {len(table)} tokens with {table.attrs['provenance']['model_id']} "
              f"({table.attrs['provenance']['scorer']}, mode={args.mode})")
        for row in top.itertuples():
            print(f"  {row.token_id:>7} {row.decoded!r:>20} {row.score: .4f}")
        if args.out:
            print(f"wrote {args.out}")
    if dist is not None:
        dist.destroy_process_group()
    return 0


def _search(args) -> int:
    """Multi-token search (rmlib.engine.search); Ctrl-C keeps and writes the best so far."""
    from .engine.scorers import load_scorer
    from .engine.search import run
    from .engine.search_config import SearchConfig
    from .engine.threads import apply_threads
    from .errors import InputError
    from .tables.store import check_output_path

    if not args.prompt.strip():
        raise InputError("--prompt must not be empty")
    if args.budget_seconds is not None and not math.isfinite(args.budget_seconds):
        raise InputError(f"--budget-seconds {args.budget_seconds}: give a number of seconds > 0, or leave it out")
    with _options_named(SEARCH_OPTIONS, prefix="SearchConfig."):  # before loading a model
        config = SearchConfig(method=args.method, length=args.length, maximize=args.direction == "max",
                              restarts=args.restarts, budget_seconds=args.budget_seconds, allowed=args.allowed,
                              seed=args.seed, progress=not args.no_progress).validate()
    if args.out:
        check_output_path(args.out, suffix=".json")  # before the search, whose result it holds
    _check_device(args.device)
    apply_threads(args.threads)
    _train_first(args)
    scorer = load_scorer(args.model, reference=args.reference, chat_template=args.chat_template,
                         batch_size=args.batch_size, kind=args.kind, dtype=args.dtype, revision=args.revision,
                         trust_remote_code=args.trust_remote_code, device=args.device,
                         lite=True)  # searches score ids (token path): a Llama checkpoint starts ~2.5 s sooner
    _check_search_length(scorer, args.prompt, args.length)
    result = run(scorer, args.prompt, config, start=args.start)
    local = {True: "yes", False: "NO", None: "not checked"}[result.local_optimum]
    print(f"{result.method} search, {result.direction}imize, {result.length} tokens, {result.provenance.get('model_id')}")
    print(f"  best ids:   {result.best_ids}")
    print(f"  best text:  {result.best_text!r}")
    print(f"  score:      {result.best_score:.6f} (fresh re-score)")
    print(f"  single-swap local optimum: {local} ({result.local_optimum_check})")
    if result.better_swap:
        print(f"  better swap: position {result.better_swap['position']} -> {result.better_swap['token']!r} "
              f"({result.better_swap['score']:.6f})")
    print(f"  restarts:   {result.agreement}; their end values spread over {result.restart_spread or 0:.6f}")
    why = {"budget": " (the --budget-seconds are spent)",
           "space exhausted": " (every allowed sequence was scored: the best is the global optimum)",
           "every start tried": " (no new start is left)"}.get(result.stop_reason, "")
    print(f"  spent: {result.candidates_scored} candidates in {result.seconds:.1f} s, {len(result.runs)} run(s), "
          f"stopped: {result.stop_reason}{why}")
    if args.out:
        try:
            result.save_json(args.out)
        except OSError as err:
            from .errors import RmlibError
            from .files import write_failure

            folder = os.path.dirname(os.path.abspath(args.out))
            raise RmlibError(f"--out {args.out}: cannot write in {folder}: {write_failure(err) or err.strerror or err}; "
                             "the best response is shown above (nothing else is saved): free space there or give "
                             "another --out") from err
        print(f"wrote {args.out}")
    if result.stop_reason == "interrupted":
        kept = f" and written to {args.out}" if args.out else ""
        print(f"rmlib search: interrupted: the best response found so far is shown above{kept}; nothing else is "
              "saved and a search does not resume: run the command again to search afresh", file=sys.stderr)
        return 130
    return 0


def _check_search_length(scorer, prompt: str, length: int) -> None:
    """``--length`` tokens after the prompt's chat frame must fit the model's context (checked before the search)."""
    from .errors import InputError

    frame = scorer.frame(prompt)  # also refuses a prompt too long on its own
    models = [m for m in (getattr(scorer, "policy", None), getattr(scorer, "reference", None)) if m is not None]
    contexts = [c for c in (m.context_length() for m in (models or [scorer])) if c is not None]
    need = len(frame.prefix_ids) + length + len(frame.suffix_ids)
    if contexts and need > min(contexts):
        room = min(contexts) - len(frame.prefix_ids) - len(frame.suffix_ids)
        raise InputError(f"--length {length}: the prompt's chat frame ({need - length} tokens) plus {length} response "
                         f"tokens is over the context of {scorer.loaded.model_id} ({min(contexts)} positions); "
                         f"give --length {max(room, 1)} or less")


def _import_csv(args) -> int:
    from .errors import InputError
    from .paths import scores_dir
    from .tables.store import atomic_write_table, import_paper_csv

    out_dir = args.out_dir or str(scores_dir() / "imported")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError(f"--out-dir {out_dir} is a file: give a folder (it is created if missing)")
    tables = import_paper_csv(args.csv, args.model)
    os.makedirs(out_dir, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", args.model).strip("-")[:80]
    for prompt, df in tables.items():
        name = os.path.join(out_dir, f"{os.path.basename(args.csv).rsplit('.', 1)[0]}__{slug}__{len(df)}__"
                            f"{prompt.split()[-3]}.parquet")
        atomic_write_table(df, name, df.attrs["provenance"])
        print(f"wrote {name}")
    from .prompts import PAPER_PROMPTS

    absent = [column for column, prompt in PAPER_PROMPTS.items() if prompt not in tables]
    if absent:
        print(f"note: {args.csv} has no column {', '.join(map(repr, absent))}: those prompts are not imported")
    return 0


def _train_rm(args) -> int:
    from .engine.threads import apply_threads
    from .training.configuration import TrainConfig
    from .training.folders import check_output_folder
    from .training.train import train_reward_model

    given = {name: getattr(args, name) for name in TRAIN_OPTIONS if getattr(args, name) is not None}
    if args.threads not in (None, "auto"):  # the run's own count: part of its configuration and key
        given["threads"] = int(args.threads)
    if args.no_progress:
        _quiet_transformers()
    with _options_named(TRAIN_OPTIONS):
        config = TrainConfig(**given).validate()  # options left out take TrainConfig's defaults (one place)
        _check_device(args.device)
        if args.out is not None:
            check_output_folder(args.out)
        apply_threads(args.threads)
        try:
            run = train_reward_model(config, out=args.out, device=args.device, progress=not args.no_progress,
                                     force=args.force)
        except Exception as err:  # a library's write error (safetensors) is not an OSError
            from .errors import CacheError, RmlibError
            from .files import write_failure
            from .paths import cache_dir

            why = None if isinstance(err, RmlibError) else write_failure(err)
            if why is None:
                raise
            places = " or ".join(dict.fromkeys(str(p) for p in (args.out, cache_dir() / "trained") if p))
            raise CacheError(f"cannot write under {places}: {why}; epochs already checkpointed and features already "
                             "cached are kept, and the same command resumes from them: free space there, or pass "
                             "--out on another disk (RMLIB_CACHE_DIR for the cache)") from err
    info = run.info
    what = "reused" if run.reused else f"trained in {info['wall_s']:.0f} s"
    print(f"{what}: {run.folder}")
    print(f"  base {info['base_model_id']}, {info['trained']}, {info['n_pairs']} pairs, {info['epochs']} epochs")
    if info.get("heldout_tau") is not None:
        print(f"  held-out Kendall tau-b with human ratings: {info['heldout_tau']:.3f} "
              f"({info['split']['n_test_items']} test items)")
    if info.get("heldout_pair_accuracy") is not None:
        print(f"  held-out pair accuracy: {info['heldout_pair_accuracy']:.3f} ({info['n_heldout_pairs']} pairs)")
    elif info.get("n_heldout_pairs") == 0:
        print(f"  held-out pair accuracy: none: no pair has both responses among the {info['split']['n_test_items']} "
              "test items, so nothing was evaluated; give more pairs per response or a larger --test-fraction")
    return 0


def _quiet_transformers() -> None:
    """--no-progress also silences transformers' own bars ("Loading weights", "Writing model shards")."""
    import transformers

    transformers.utils.logging.disable_progress_bar()


def _check_device(device: str | None) -> None:
    """``--device`` checked before a model loads (the meta device and unknown names refused)."""
    if device is not None:
        from .engine.models import check_device

        check_device(device)


@contextlib.contextmanager
def _options_named(names, prefix: str = ""):
    """Errors of a library call that name a setting by its field (``test_fraction must be ...``,
    ``SearchConfig.length must be ...``) name the command-line option instead (``--test-fraction``)."""
    from .errors import InputError

    try:
        yield
    except ValueError as err:
        text = str(err)
        for name in names:
            for field in (prefix + name, name) if prefix else (name,):
                if re.match(rf"{re.escape(field)}\b(?!-)", text):
                    text = "--" + name.replace("_", "-") + text[len(field):]
                    raise InputError(text) from None
        raise


def _paper_data(args) -> int:
    from .tables.downloads import paper_data_note, paper_data_status

    groups = [g for g in args.group or [] if g != "followup_logprobs"]
    ok = True
    if groups or not args.group:
        status = paper_data_status(groups or None, download=args.download)
        for row in status.itertuples():
            print(f"{'present' if row.present else 'absent ':8} {row.group:18} {row.path}")
        print(paper_data_note(status))
        if args.verbose:
            for reason in status.loc[~status["present"], "reason"]:
                print(f"  {reason}")
        ok = bool(status["present"].all())
    if "followup_logprobs" in (args.group or []):  # about 2 GB from a hub dataset: only when named
        from .tables import logprobs

        lp = logprobs.status(download=args.download)
        for row in lp.itertuples():
            print(f"{'present' if row.present else 'absent ':8} {'followup_logprobs':18} {row.file}")
        print(logprobs.status_note(lp))
        if args.verbose:
            for reason in lp.loc[~lp["present"], "reason"]:
                print(f"  {reason}")
        ok = ok and bool(lp["present"].all())
    return 0 if ok else 1


def _bench(args) -> int:
    from .bench import main as bench_main

    return bench_main(args)


def _cache(args) -> int:
    from .caches import main as cache_main

    return cache_main(do_prune=args.prune, yes=args.yes, verbose=args.verbose)


def _chapter(args) -> int:
    from .book.__main__ import main as book_main

    return book_main(["chapter", *args.args])  # its own parser: `rmlib chapter --help` shows it


def _book(args) -> int:
    from .book.__main__ import main as book_main

    if any(a in ("-h", "--help") for a in args.args):
        return book_main(["--help"])
    return book_main(["all", *args.args])


#: ``train-rm`` options that are TrainConfig fields (unset ones take TrainConfig's defaults).
TRAIN_OPTIONS = ("base", "prompt", "data", "split_seed", "test_fraction", "epochs", "lr", "unfreeze_blocks",
                 "pairs_per_item", "data_fraction", "max_items", "seed", "dtype", "chat_template")
#: ``search`` options that are SearchConfig fields (their range errors name the option).
SEARCH_OPTIONS = ("method", "length", "restarts", "budget_seconds", "allowed", "seed")

THREADS_HELP = ("torch CPU threads: a number, or 'auto' (default: the cores other processes leave free; "
                "RMLIB_THREADS or OMP_NUM_THREADS also set it)")


def _model_options(p: argparse.ArgumentParser) -> None:
    """The options every command that loads a model shares."""
    p.add_argument("--model", default="default", help="'default', a hub id, a local folder, tiny:<arch>, or "
                   "trained:<base> (trained first when not in the cache)")
    p.add_argument("--kind", choices=options.MODEL_KINDS)
    p.add_argument("--reference", help="a reference LM: the implicit reward log p_model - log p_reference")
    p.add_argument("--dtype", choices=options.DTYPE_NAMES)
    p.add_argument("--revision", help="a hub revision (commit, branch or tag); only for hub ids")
    p.add_argument("--trust-remote-code", action="store_true", help="run the model's own code from its hub repo")
    p.add_argument("--chat-template", help="a Jinja template, or one of: " + ", ".join(options.TEMPLATE_NAMES))
    p.add_argument("--batch-size", type=_positive_int)
    p.add_argument("--device")
    p.add_argument("--threads", type=_threads,
                   help=THREADS_HELP[:-1] + "; a score table started at one count, and its batches, are finished "
                                            "with the same, so that its scores equal one run's)")
    p.add_argument("--no-progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (stdlib only: building it and --help import nothing heavy)."""
    parser = argparse.ArgumentParser(prog="rmlib", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score every token of the vocabulary as the response to a prompt")
    _model_options(s)
    which = s.add_mutually_exclusive_group(required=True)
    which.add_argument("--prompt", help="the user's question (UTF-8 text)")
    which.add_argument("--prompt-file", help="read the prompt from this UTF-8 file (one trailing newline dropped)")
    s.add_argument("--tokens", type=_slice, help="a slice of the vocabulary, START:STOP, or 'words' (lexicon words plus a seeded random sample)")
    s.add_argument("--out", help="also write the finished table to this Parquet file (its name ends in .parquet)")
    s.add_argument("--mode", choices=options.MODES, default="token")
    s.add_argument("--paper-forward", choices=options.PAPER_FORWARDS, default="shared-prefix",
                   help="mode paper: run the texts' common prefix once (default; the same inputs and read "
                        "positions), or 'full' padded forwards as the paper's code did")
    s.add_argument("--device-map", help="'auto' spreads a large model over the GPUs (accelerate)")
    s.add_argument("--cache-dir", help=f"score cache folder (default ${SCORES_ENV_VAR}, else data/scores in a "
                   "checkout, else the user cache)")
    s.add_argument("--shard-size", type=_positive_int, default=4096,
                   help="tokens per shard; a cache keeps the size it was started with")
    s.set_defaults(func=_score)
    f = sub.add_parser("search", help="search the L-token response with the highest (lowest) score")
    _model_options(f)
    f.add_argument("--prompt", required=True)
    f.add_argument("--length", type=int, required=True, help="response length in tokens")
    f.add_argument("--direction", choices=("max", "min"), required=True)
    f.add_argument("--method", choices=("gcg", "sweep", "both"), default="both",
                   help="GCG, exact coordinate sweeps, or GCG polished by sweeps (default)")
    f.add_argument("--budget-seconds", type=float,
                   help="spend this long: restarts (GCG's too) go on until it is spent or every sequence is scored, "
                        "and the output says which (without it: --restarts starts)")
    f.add_argument("--allowed", choices=("ascii", "all"), default="ascii", help="tokens a response may use")
    f.add_argument("--restarts", type=int, default=3, help="sweep starts when no --budget-seconds is given")
    f.add_argument("--seed", type=int, default=0, help="seeds the random restarts")
    f.add_argument("--start", help="the first start, as text of exactly --length tokens")
    f.add_argument("--out", help="write the result (ids, text, score, checks, provenance) to this JSON file (*.json)")
    f.set_defaults(func=_search)
    t = sub.add_parser("train-rm", help="train a Bradley-Terry reward model (EloEverything or a CSV)")
    t.add_argument("--base", help="'default' (SmolLM2-135M-Instruct), 'gemma-3-270m', a hub id or a local causal-LM folder")
    t.add_argument("--prompt", help="the prompt every item answers (default: the paper's Sec. 4 prompt)")
    t.add_argument("--data", help="'eloeverything' (default), or a CSV of item,rating or [prompt,]chosen,rejected")
    t.add_argument("--split-seed", type=int)
    t.add_argument("--test-fraction", type=float, help="held-out items (default 0.5)")
    t.add_argument("--epochs", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--unfreeze-blocks", type=int, help="0: train the head only (default); K: also the top K blocks")
    t.add_argument("--pairs-per-item", type=_positive_int)
    t.add_argument("--data-fraction", type=float, help="use this fraction of the training pairs")
    t.add_argument("--max-items", type=_positive_int, help="a seeded random subset of the items (quick runs)")
    t.add_argument("--seed", type=int)
    t.add_argument("--device", default="cpu")
    t.add_argument("--dtype", choices=options.DTYPE_NAMES)
    t.add_argument("--chat-template", help="a Jinja template, or one of: " + ", ".join(options.TEMPLATE_NAMES)
                   + " (default: the base's own, the reward read at its end-of-turn token)")
    t.add_argument("--out", help="output folder (default: the cache folder keyed by the configuration)")
    t.add_argument("--force", action="store_true", help="train again even if the folder holds this model")
    t.add_argument("--threads", type=_threads,
                   help="torch CPU threads the run encodes and trains on (default 1, whatever RMLIB_THREADS or the "
                        "machine's load say): part of the configuration, since float sums depend on it, so another "
                        "count trains (and caches) another model")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=_train_rm)
    b = sub.add_parser("bench", help="speed benchmarks, JSON on stdout (the default sections: at most 10 minutes "
                                     "on a 2-core CPU)")
    b.add_argument("--full", action="store_true", help="also the long sections (whole_process, threads_scaling, "
                                                       "train_rm, search, search_goal)")
    b.add_argument("--out", metavar="FILE.json", help="also write the report there, and FILE.md beside it "
                                                      "(make bench: docs/benchmarks.json)")
    b.add_argument("--n-tokens", type=_positive_int, default=384)
    b.add_argument("--skip-gcg", action="store_true")
    b.add_argument("--skip-search", action="store_true", help="leave out the coordinate-sweep benchmark")
    b.add_argument("--skip-train", action="store_true", help="leave out the reward-model training benchmark")
    b.add_argument("--whole-tokens", type=_positive_int, default=2048,
                   help="tokens scored by each whole `rmlib score` process (engine vs paper)")
    b.add_argument("--quick", action="store_true", help="every section on tiny models, in seconds")
    b.add_argument("--only", metavar="NAME[,NAME]",
                   help="run only these sections: startup, startup_parts, engine_vs_paper, logprob_full_vocab, chapter_scoring, "
                        "book_workers, gcg, whole_process, threads_scaling, train_rm, search, search_goal, search_anytime")
    b.add_argument("--threads", type=_threads, help=THREADS_HELP)
    b.set_defaults(func=_bench)
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with (part of the output names)")
    c.add_argument("--out-dir", help="where the tables go (default: imported/ in the score cache folder)")
    c.set_defaults(func=_import_csv)
    d = sub.add_parser("paper-data", help="which of the paper's released files are here (hashes checked)")
    d.add_argument("--group", action="append", choices=("token_scores", "base_logits", "published_tables",
                                                         "published_figures", "followup_config",
                                                         "followup_corpora", "followup_scores", "followup_training",
                                                         "followup_logprobs"),
                   help="only these groups (repeatable); followup_logprobs, the follow-up's log-probabilities of "
                        "12 LMs (about 2 GB, a Hugging Face dataset), is looked at and downloaded only when named")
    d.add_argument("--download", action="store_true", help="download what is missing (needs a network; "
                                                           "not with RMLIB_OFFLINE=1)")
    d.add_argument("-v", "--verbose", action="store_true", help="say why each absent file is absent")
    d.set_defaults(func=_paper_data)
    k = sub.add_parser("cache", help="what the caches hold and their sizes; --prune removes what is no longer used")
    k.add_argument("--prune", action="store_true", help="list what the current code no longer reads (a dry run "
                                                        "unless --yes)")
    k.add_argument("--yes", action="store_true", help="with --prune: delete it")
    k.add_argument("-v", "--verbose", action="store_true", help="list every entry")
    k.set_defaults(func=_cache)
    for p in (parser, s, f, t, b, c, d, k):
        p.add_argument("--debug", action="store_true", help="on an error, show the full traceback")
    # The book's commands keep their own parsers (rmlib.book): forward every argument untouched.
    ch = sub.add_parser("chapter", add_help=False, prefix_chars="\0", usage="rmlib chapter NN [-p NAME VALUE]... "
                        "[--no-build] [--log-output]", help="re-execute one chapter with parameters, then rebuild "
                        "the book (`rmlib chapter --help`)")
    ch.add_argument("args", nargs=argparse.REMAINDER)
    ch.set_defaults(func=_chapter)
    bk = sub.add_parser("book", add_help=False, prefix_chars="\0", usage="rmlib book [--log-output]",
                        help="execute every chapter, then build the book")
    bk.add_argument("args", nargs=argparse.REMAINDER)
    bk.set_defaults(func=_book)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `--tokens -5:10` would read as an option: keep it as the value, so the slice check can answer.
    argv = [f"{a}={argv[i + 1]}" if a == "--tokens" and i + 1 < len(argv) and argv[i + 1].startswith("-") else a
            for i, a in enumerate(argv) if not (i and argv[i - 1] == "--tokens" and a.startswith("-"))]
    args = build_parser().parse_args(argv)
    return run_guarded(args.func, args, f"rmlib {args.command}", debug=getattr(args, "debug", False))


def entry(argv=None) -> None:
    """The process entry point (``python -m rmlib``, the ``rmlib`` script): :func:`main`, then exit.

    Once a command has loaded torch, the interpreter's own teardown (freeing thousands of modules
    and tensors one by one) adds about a second to every command on a 2-core machine and nothing
    else: every output file is already written and closed (rmlib writes through ``rmlib.files``
    and registers no exit handler). So logging is shut down (its handlers flushed), standard output
    and error are flushed, and the process ends there (``os._exit``). Commands that did not load
    torch exit the usual way. :func:`main` itself never exits (tests call it in-process).
    """
    rc = main(argv)
    if "torch" in sys.modules:
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    sys.exit(rc)


#: What Ctrl-C leaves behind, per command, when the command itself did not say (an ``Interrupted`` does),
#: and whether running it again resumes.
INTERRUPTED = {
    "score": ("interrupted before any shard was finished", True),
    "search": ("interrupted before the search started: nothing is saved, and a search does not resume; run the "
               "command again to start it", False),
    "train-rm": ("interrupted before an epoch finished: nothing new is saved; run the same command again to start "
                 "over (it resumes from the epoch checkpoints of an earlier run, if one left any)", False),
    "import-paper-csv": ("interrupted: each table reported as written is complete, the others are not written; run "
                         "the command again to import them all", False),
    "paper-data": ("interrupted: files already downloaded and checked are kept; run the command again for the rest",
                   False),
    "bench": ("interrupted: no report is written (the benchmark prints its JSON at the end)", False),
    "chapter": ("interrupted: the chapter's page is unchanged (its last good version is kept) and finished score "
                "tables stay in the score cache; run the same command again to continue from them", False),
    "book": ("interrupted: chapters finished so far are kept, the others keep their last good page, and finished "
             "score tables stay in the score cache; run the same command again to continue from them", False),
}


def run_guarded(func, args, name: str, debug: bool = False) -> int:
    """Run a command; an rmlib error, a path error or Ctrl-C becomes one line on stderr and exit 1
    (2 for bad input, 130 for Ctrl-C); any other exception is a bug: one line "internal error, please
    report" and exit 1. ``debug`` re-raises for the traceback."""
    from .errors import InputError, Interrupted, RmlibError

    try:
        return func(args)
    except KeyboardInterrupt as err:
        if debug:
            raise
        msg, resumes = (str(err), True) if isinstance(err, Interrupted) else INTERRUPTED.get(
            name.split()[-1], ("interrupted: nothing is saved", False))
        again = f"To resume: python -m rmlib {' '.join(_quoted(sys.argv[1:]))}" if resumes else ""
        print(f"{name}: {msg}. {again}".rstrip(), file=sys.stderr)
        return 130
    except (RmlibError, OSError) as err:
        if debug:
            raise
        what = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if isinstance(err, OSError) and not isinstance(err, RmlibError):
            what = f"{err.strerror or err}" + (f": {err.filename}" if err.filename else "")
        hint = "" if isinstance(err, RmlibError) else " (run with --debug for the traceback)"
        print(f"{name}: {what}{hint}", file=sys.stderr)
        return 2 if isinstance(err, InputError) else 1
    except Exception as err:  # not raised on purpose: a bug in rmlib (or below it), not the user's input
        if debug:
            raise
        from .files import write_failure

        if write_failure(err):  # a library's write error on a full or read-only disk: the place, not a bug
            print(f"{name}: cannot write: {write_failure(err)} ({type(err).__name__}: "
                  f"{str(err).strip().splitlines()[0][:200]}): free space, or point --out / RMLIB_CACHE_DIR / "
                  "RMLIB_SCORES_DIR at another disk", file=sys.stderr)
            return 1
        what = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"{name}: internal error, please report it (run again with --debug for the traceback): "
              f"{type(err).__name__}{': ' + what if what else ''}", file=sys.stderr)
        return 1


def _quoted(argv) -> list[str]:
    import shlex

    return [shlex.quote(a) for a in argv]
