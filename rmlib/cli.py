"""Command line: ``python -m rmlib score|bench|import-paper-csv|chapter|book``.

The parser is built from the standard library and ``rmlib.options`` alone, so
``--help`` and argument errors answer without importing torch, transformers or
pandas; each subcommand imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import options


def _slice(text: str) -> slice:
    try:
        return options.vocab_slice(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _threads(text: str) -> str:
    if text.strip() != "auto" and not (text.strip().isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a thread count: give a whole number >= 1 or 'auto'")
    return text.strip()


def _score(args) -> int:
    from .engine.threads import apply_threads, cpu_sample

    if not args.prompt.strip():
        raise SystemExit("rmlib score: --prompt must not be empty")
    started = cpu_sample()  # the imports below are the window in which the machine's load is measured
    import numpy as np

    from .engine.scorers import load_scorer
    from .tables.store import score_vocabulary

    apply_threads(args.threads, since=started)
    if args.no_progress:
        import transformers

        transformers.utils.logging.disable_progress_bar()  # its "Loading weights" bar too
    dist = None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch
        import torch.distributed as dist

        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if torch.cuda.is_available():
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    scorer = load_scorer(args.model, reference=args.reference, chat_template=args.chat_template,
                         batch_size=args.batch_size, kind=args.kind, dtype=args.dtype, revision=args.revision,
                         trust_remote_code=args.trust_remote_code, device=args.device, device_map=args.device_map)
    ids = np.arange(scorer.vocab_size)[args.tokens] if args.tokens else None
    table = score_vocabulary(scorer, args.prompt, ids, mode=args.mode, cache_dir=args.cache_dir,
                             shard_size=args.shard_size, progress=not args.no_progress, out=args.out)
    if dist is None or dist.get_rank() == 0:
        top = table.nlargest(5, "score")
        print(f"scored {len(table)} tokens with {table.attrs['provenance']['model_id']} "
              f"({table.attrs['provenance']['scorer']}, mode={args.mode})")
        for row in top.itertuples():
            print(f"  {row.token_id:>7} {row.decoded!r:>20} {row.score: .4f}")
        if args.out:
            print(f"wrote {args.out}")
    if dist is not None:
        dist.destroy_process_group()
    return 0


def _import_csv(args) -> int:
    from .tables.store import atomic_write_table, import_paper_csv

    tables = import_paper_csv(args.csv, args.model)
    os.makedirs(args.out_dir, exist_ok=True)
    for prompt, df in tables.items():
        name = os.path.join(args.out_dir, f"{os.path.basename(args.csv).rsplit('.', 1)[0]}__{len(df)}__"
                            f"{prompt.split()[-3]}.parquet")
        atomic_write_table(df, name, df.attrs["provenance"])
        print(f"wrote {name}")
    return 0


def _bench(args) -> int:
    from .bench import main as bench_main

    return bench_main(args)


def _chapter(args) -> int:
    from .book.__main__ import main as book_main

    return book_main(["chapter", *args.args])  # its own parser: `rmlib chapter --help` shows it


def _book(args) -> int:
    from .book.__main__ import main as book_main

    if any(a in ("-h", "--help") for a in args.args):
        return book_main(["--help"])
    return book_main(["all", *args.args])


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (stdlib only: building it and --help import nothing heavy)."""
    parser = argparse.ArgumentParser(prog="rmlib", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    threads_help = ("torch CPU threads: a number, or 'auto' (default: the cores other processes leave free; "
                    "RMLIB_THREADS or OMP_NUM_THREADS also set it)")
    s = sub.add_parser("score", help="score every token of the vocabulary as the response to a prompt")
    s.add_argument("--model", default="default", help="'default', a hub id, a local folder, or tiny:<arch>")
    s.add_argument("--prompt", required=True)
    s.add_argument("--tokens", type=_slice, help="a slice of the vocabulary, START:STOP")
    s.add_argument("--out", help="also write the finished table to this Parquet file")
    s.add_argument("--mode", choices=options.MODES, default="token")
    s.add_argument("--kind", choices=options.KINDS)
    s.add_argument("--reference", help="a reference LM: score the implicit reward log p_model - log p_reference")
    s.add_argument("--dtype", choices=options.DTYPE_NAMES)
    s.add_argument("--revision")
    s.add_argument("--trust-remote-code", action="store_true", help="run the model's own code from its hub repo")
    s.add_argument("--chat-template", help="a Jinja template, or one of: " + ", ".join(options.TEMPLATE_NAMES))
    s.add_argument("--batch-size", type=int)
    s.add_argument("--device")
    s.add_argument("--device-map", help="'auto' spreads a large model over the GPUs (accelerate)")
    s.add_argument("--cache-dir", help="score cache folder (default data/scores or $RMLIB_SCORES_DIR)")
    s.add_argument("--shard-size", type=int, default=4096)
    s.add_argument("--threads", type=_threads, help=threads_help)
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(func=_score)
    b = sub.add_parser("bench", help="speed benchmarks, JSON on stdout")
    b.add_argument("--n-tokens", type=int, default=384)
    b.add_argument("--gpu-gemma2-2b", action="store_true", help="full 256,000-token vocabulary on a Gemma-2-2B-shaped RM")
    b.add_argument("--skip-gcg", action="store_true")
    b.add_argument("--whole-tokens", type=int, default=2048,
                   help="tokens scored by each whole `rmlib score` process (engine vs paper)")
    b.add_argument("--quick", action="store_true", help="every section on tiny models, in seconds")
    b.add_argument("--threads", type=_threads, help=threads_help)
    b.set_defaults(func=_bench)
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with")
    c.add_argument("--out-dir", default="data/scores/imported")
    c.set_defaults(func=_import_csv)
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
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"rmlib {args.command}: {err}", file=sys.stderr)
        return 2
