"""The command bodies of ``python -m rmlib`` (:mod:`rmlib.cli` parses the arguments and runs one of these).

Each imports what it needs when it runs, so importing this module, like building the parser, imports
nothing heavy; each checks its input (prompt, output path, device, options) before it loads a model.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys


#: ``train-rm`` options that are TrainConfig fields (unset ones take TrainConfig's defaults).
TRAIN_OPTIONS = ("base", "prompt", "data", "split_seed", "test_fraction", "epochs", "lr", "unfreeze_blocks",
                 "pairs_per_item", "data_fraction", "max_items", "seed", "dtype", "chat_template")
#: ``search`` options that are SearchConfig fields (their range errors name the option).
SEARCH_OPTIONS = ("method", "length", "restarts", "budget_seconds", "allowed", "seed")


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


def _token_ids(tokens: slice | str | None, vocab_size: int, model_id: str, scorer=None):
    """The ids of a START:STOP slice, which must lie inside the vocabulary (no silent clipping),
    or of the stated subset ``words`` (rmlib.tables.subsets, from ``scorer``'s tokenizer: only a subset reads it)."""
    import numpy as np

    from .errors import InputError

    if tokens is None:
        return None
    if isinstance(tokens, str):
        from .tables.results import resolve_token_ids

        return resolve_token_ids(tokens, vocab_size, None if scorer is None else scorer.tokenizer)
    start = tokens.start or 0
    stop = vocab_size if tokens.stop is None else tokens.stop
    if start >= vocab_size or stop > vocab_size:
        raise InputError(f"--tokens {start}:{'' if tokens.stop is None else tokens.stop} is outside the "
                         f"vocabulary of {model_id} (ids 0..{vocab_size - 1}, {vocab_size} tokens): use e.g. "
                         f"--tokens {min(start, vocab_size - 1)}:{vocab_size} or --tokens {min(start, vocab_size - 1)}:")
    return np.arange(start, stop)


def _train_first(args) -> None:
    """A ``trained:<base>`` model or reference not in the cache yet is trained first (the engine only loads);
    both specs are checked before anything is trained or loaded."""
    from .engine.models import check_model_spec
    from .errors import InputError

    check_model_spec(args.model)
    if getattr(args, "reference", None) is not None:
        try:
            check_model_spec(args.reference)
        except InputError as err:  # say which of the two models is wrong
            raise InputError(f"--reference: {err}") from None
    specs = [s for s in (args.model, getattr(args, "reference", None)) if isinstance(s, str) and s.startswith("trained:")]
    if specs:
        from .training.trained import ensure_trained

        for spec in specs:
            ensure_trained(spec, progress=not args.no_progress)


def score(args) -> int:
    from .engine.threads import apply_threads, cpu_sample

    prompt = _read_prompt(args)
    started = cpu_sample()  # the imports below are the window in which the machine's load is measured
    from .engine.scorers import load_scorer
    from .stats.vocab import top_bottom
    from .tables.store import check_table_output, score_vocabulary

    if args.out:
        check_table_output(args.out)  # before the model loads
    if args.cache_dir:
        from .files import check_folder_option

        check_folder_option(args.cache_dir, "--cache-dir")
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
                         device=args.device, device_map=args.device_map, lite=args.mode == "token")  # Llama, Gemma-2: no transformers import (engine/lite_llama.py)
    ids = _token_ids(args.tokens, scorer.vocab_size, scorer.loaded.model_id, scorer)
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


def search(args) -> int:
    """Multi-token search (rmlib.engine.search); Ctrl-C keeps and writes the best so far."""
    from .engine.scorers import load_scorer
    from .engine.search import is_search_result, run
    from .engine.search_config import SearchConfig
    from .engine.threads import apply_threads
    from .errors import InputError
    from .files import check_output_path

    if not args.prompt.strip():
        raise InputError("--prompt must not be empty")
    if args.budget_seconds is not None and not (math.isfinite(args.budget_seconds) and args.budget_seconds > 0):
        raise InputError(f"--budget-seconds must be a positive number of seconds, got {args.budget_seconds:g} (or "
                         "leave it out: the search then makes --restarts starts)")
    if args.start is not None and not args.start:
        raise InputError("--start is empty: give the starting text of the search (--length tokens of it), or leave "
                         "--start out")
    with _options_named(SEARCH_OPTIONS, prefix="SearchConfig."):  # before loading a model
        config = SearchConfig(method=args.method, length=args.length, maximize=args.direction == "max",
                              restarts=args.restarts, budget_seconds=args.budget_seconds, allowed=args.allowed,
                              seed=args.seed, progress=not args.no_progress).validate()
    if args.out:
        check_output_path(args.out, ".json", ours=is_search_result, kind="a search result")  # before the search
    _check_device(args.device)
    apply_threads(args.threads)
    _train_first(args)
    scorer = load_scorer(args.model, reference=args.reference, chat_template=args.chat_template,
                         batch_size=args.batch_size, kind=args.kind, dtype=args.dtype, revision=args.revision,
                         trust_remote_code=args.trust_remote_code, device=args.device,
                         lite=True)  # searches score ids (token path): Llama, Gemma-2 start without transformers
    _check_search_length(scorer, args.prompt, args.length)
    if args.start is not None:
        _check_start(scorer, args.start, args.length)
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


def _check_start(scorer, start: str, length: int) -> None:
    """``--start`` must be ``--length`` tokens (said in the options' words, before the search)."""
    from .engine.gcg import start_token_ids
    from .errors import InputError

    ids = start_token_ids(scorer, start)
    if len(ids) != length:
        raise InputError(f"--start {start!r} is {len(ids)} token{'s' * (len(ids) != 1)} of "
                         f"{scorer.loaded.model_id} but --length is {length}: give a --start of exactly {length} "
                         f"token{'s' * (length != 1)}, or leave --start out")


def import_csv(args) -> int:
    from .errors import InputError
    from .paths import scores_dir
    from .tables.store import atomic_write_table, import_paper_csv, is_score_table

    out_dir = args.out_dir or str(scores_dir() / "imported")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError(f"--out-dir {out_dir} is a file: give a folder (it is created if missing)")
    tables = import_paper_csv(args.csv, args.model)
    os.makedirs(out_dir, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", args.model).strip("-")[:80]
    names = {prompt: os.path.join(out_dir, f"{os.path.basename(args.csv).rsplit('.', 1)[0]}__{slug}__{len(df)}__"
                                  f"{prompt.split()[-3]}.parquet") for prompt, df in tables.items()}
    for name in names.values():  # every name checked before any is written
        if os.path.lexists(name) and (os.path.islink(name) or not is_score_table(name)):
            raise InputError(f"--out-dir {out_dir} already holds {os.path.basename(name)}, which is not a score table "
                             "rmlib wrote, so rmlib leaves it alone: choose another --out-dir, or move that file away "
                             "yourself")
    for prompt, df in tables.items():
        name = names[prompt]
        atomic_write_table(df, name, df.attrs["provenance"])
        print(f"wrote {name}")
    from .prompts import PAPER_PROMPTS

    absent = [column for column, prompt in PAPER_PROMPTS.items() if prompt not in tables]
    if absent:
        print(f"note: {args.csv} has no column {', '.join(map(repr, absent))}: those prompts are not imported")
    return 0


def train_rm(args) -> int:
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
    """--no-progress also silences transformers' own bars ("Loading weights", "Writing model shards"), without
    importing transformers when it is not imported yet (a warm ``rmlib score`` never imports it): then the
    Hugging Face hub's switch, which transformers reads when it is imported, is set."""
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    elif "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    else:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


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
                    # the command line's words, not Python's: no int, and no None (an option is left out)
                    text = text.replace(" an int >= ", " a whole number >= ").replace(" or None", "")
                    raise InputError(text) from None
        raise


def paper_data(args) -> int:
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


def bench(args) -> int:
    from .bench import main as bench_main

    return bench_main(args)


def cache(args) -> int:
    from .caches import main as cache_main

    return cache_main(do_prune=args.prune, yes=args.yes, verbose=args.verbose)


def chapter(args) -> int:
    from .book.__main__ import main as book_main

    return book_main(["chapter", *args.args])  # its own parser: `rmlib chapter --help` shows it


def book(args) -> int:
    from .book.__main__ import main as book_main

    if any(a in ("-h", "--help") for a in args.args):
        return book_main(["--help"])
    return book_main(["all", *args.args])
