"""Command line: ``python -m rmlib score|search|train-rm|bench|import-paper-csv|paper-data|cache|chapter|book``.

The parser is built from the standard library and ``rmlib.options`` alone, so
``--help`` and argument errors answer without importing torch, transformers or
pandas; each subcommand's body (:mod:`rmlib.commands`) imports what it needs when it
runs. Errors print as one line (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import commands, options
from .paths import SCORES_ENV_VAR


def _slice(text: str) -> slice | str | None:
    try:
        return options.vocab_slice(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _chat_template(text: str) -> str:
    try:
        return options.check_chat_template(text, name="")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _device_map(text: str) -> str:
    try:
        return options.check_device_map(text, name="")
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
        raise argparse.ArgumentTypeError(f"must be a positive whole number (1 or more), got {value}")
    return value


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
    p.add_argument("--chat-template", type=_chat_template,
                   help="a Jinja template, or one of: " + ", ".join(options.TEMPLATE_NAMES))
    p.add_argument("--batch-size", type=_positive_int)
    p.add_argument("--device")
    p.add_argument("--threads", type=_threads,
                   help=THREADS_HELP[:-1] + "; a score table started at one count, and its batches, are finished "
                                            "with the same, so that its scores equal one run's)")
    p.add_argument("--no-progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (stdlib only: building it and --help import nothing heavy)."""
    parser = options.OneLineParser(prog="rmlib", description=__doc__.split("\n\n")[0])
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
    s.add_argument("--device-map", type=_device_map, help="'auto' spreads a large model over the GPUs (accelerate; "
                   "also " + ", ".join(options.DEVICE_MAPS[1:]) + ")")
    s.add_argument("--cache-dir", help=f"score cache folder (default ${SCORES_ENV_VAR}, else data/scores in a "
                   "checkout, else the user cache)")
    s.add_argument("--shard-size", type=_positive_int, default=4096,
                   help="tokens per shard; a cache keeps the size it was started with")
    s.set_defaults(func=commands.score)
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
    f.set_defaults(func=commands.search)
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
    t.add_argument("--chat-template", type=_chat_template, help="a Jinja template, or one of: " + ", ".join(options.TEMPLATE_NAMES)
                   + " (default: the base's own, the reward read at its end-of-turn token)")
    t.add_argument("--out", help="output folder (default: the cache folder keyed by the configuration)")
    t.add_argument("--force", action="store_true", help="train again even if the folder holds this model")
    t.add_argument("--threads", type=_threads,
                   help="torch CPU threads the run encodes and trains on (default 1, whatever RMLIB_THREADS or the "
                        "machine's load say): part of the configuration, since float sums depend on it, so another "
                        "count trains (and caches) another model")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=commands.train_rm)
    b = sub.add_parser("bench", help="speed benchmarks, JSON on stdout (the default sections: at most 10 minutes "
                                     "on a 2-core CPU)")
    sections = options.BENCH_SECTIONS
    b.add_argument("--full", action="store_true", help="also the long sections ("
                   + ", ".join(n for n, when in sections.items() if when == "full") + "), and on a CUDA GPU the GPU ones ("
                   + ", ".join(n for n, when in sections.items() if when == "gpu") + ")")
    b.add_argument("--out", metavar="FILE.json", help="also write the report there, and FILE.md beside it "
                                                      "(make bench: docs/benchmarks.json)")
    b.add_argument("--n-tokens", type=_positive_int, default=384)
    b.add_argument("--skip-gcg", action="store_true")
    b.add_argument("--skip-search", action="store_true", help="leave out the coordinate-sweep benchmark")
    b.add_argument("--skip-train", action="store_true", help="leave out the reward-model training benchmark")
    b.add_argument("--whole-tokens", type=_positive_int, default=2048,
                   help="tokens scored by each whole `rmlib score` process (engine vs paper)")
    b.add_argument("--quick", action="store_true", help="start-up, whole-process, thread, worker, chapter- and text-scoring sections "
                                                  "on tiny models (for the tests)")
    b.add_argument("--only", metavar="NAME[,NAME]",
                   help="run only these sections: " + ", ".join(sections))
    b.add_argument("--threads", type=_threads, help=THREADS_HELP)
    b.set_defaults(func=commands.bench)
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with (part of the output names)")
    c.add_argument("--out-dir", help="where the tables go (default: imported/ in the score cache folder)")
    c.set_defaults(func=commands.import_csv)
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
    d.set_defaults(func=commands.paper_data)
    k = sub.add_parser("cache", help="what the caches hold and their sizes; --prune removes what is no longer used")
    k.add_argument("--prune", action="store_true", help="list what the current code no longer reads (a dry run "
                                                        "unless --yes)")
    k.add_argument("--yes", action="store_true", help="with --prune: delete it")
    k.add_argument("-v", "--verbose", action="store_true", help="list every entry")
    k.set_defaults(func=commands.cache)
    parser.add_argument("--debug", action="store_true", help="on an error, show the full traceback")
    for p in (s, f, t, b, c, d, k):  # before or after the command; left out here, so it keeps the top one's value
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, show the full traceback")
    # The book's commands keep their own parsers (rmlib.book): forward every argument untouched.
    ch = sub.add_parser("chapter", add_help=False, prefix_chars="\0", usage="rmlib chapter NN [-p NAME VALUE]... "
                        "[--no-build] [--log-output]", help="re-execute one chapter with parameters, then rebuild "
                        "the book (`rmlib chapter --help`)")
    ch.add_argument("args", nargs=argparse.REMAINDER)
    ch.set_defaults(func=commands.chapter)
    bk = sub.add_parser("book", add_help=False, prefix_chars="\0", usage="rmlib book [--log-output]",
                        help="execute every chapter, then build the book")
    bk.add_argument("args", nargs=argparse.REMAINDER)
    bk.set_defaults(func=commands.book)
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
