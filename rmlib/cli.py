"""Command line: ``python -m rmlib score|bench|import-paper-csv|paper-data|chapter|book``."""

from __future__ import annotations

import argparse
import os
import sys


def _slice(text: str) -> slice:
    from .tables.results import vocab_slice

    try:
        return vocab_slice(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _score(args) -> int:
    import numpy as np

    from .engine.scorers import load_scorer
    from .tables.store import score_vocabulary

    if not args.prompt.strip():
        raise SystemExit("rmlib score: --prompt must not be empty")
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


def _paper_data(args) -> int:
    from .tables.datasets import paper_data_note, paper_data_status

    status = paper_data_status(args.group or None, download=args.download)
    for row in status.itertuples():
        print(f"{'present' if row.present else 'absent ':8} {row.group:18} {row.path}")
    print(paper_data_note(status))
    if args.verbose:
        for reason in status.loc[~status["present"], "reason"]:
            print(f"  {reason}")
    return 0 if status["present"].all() else 1


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("chapter", "book"):
        from .book.__main__ import main as book_main

        # `rmlib chapter NN -p ...` re-executes one chapter; `rmlib book` executes all and builds.
        return book_main(argv if argv[0] == "chapter" else ["all", *argv[1:]])
    parser = argparse.ArgumentParser(prog="rmlib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score every token of the vocabulary as the response to a prompt")
    s.add_argument("--model", default="default", help="'default', a hub id, a local folder, or tiny:<arch>")
    s.add_argument("--prompt", required=True)
    s.add_argument("--tokens", type=_slice, help="a slice of the vocabulary, START:STOP")
    s.add_argument("--out", help="also write the finished table to this Parquet file")
    s.add_argument("--mode", choices=("token", "paper"), default="token")
    s.add_argument("--kind", choices=("classifier", "logprob"))
    s.add_argument("--reference", help="a reference LM: score the implicit reward log p_model - log p_reference")
    s.add_argument("--dtype", choices=("float32", "bfloat16", "float16"))
    s.add_argument("--revision")
    s.add_argument("--trust-remote-code", action="store_true", help="run the model's own code from its hub repo")
    s.add_argument("--chat-template", help="a Jinja template, or one of: chatml, llama3, plain")
    s.add_argument("--batch-size", type=int)
    s.add_argument("--device")
    s.add_argument("--device-map", help="'auto' spreads a large model over the GPUs (accelerate)")
    s.add_argument("--cache-dir", help="score cache folder (default data/scores or $RMLIB_SCORES_DIR)")
    s.add_argument("--shard-size", type=int, default=4096)
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(func=_score)
    b = sub.add_parser("bench", help="speed benchmarks, JSON on stdout")
    b.add_argument("--n-tokens", type=int, default=384)
    b.add_argument("--gpu-gemma2-2b", action="store_true", help="full 256,000-token vocabulary on a Gemma-2-2B-shaped RM")
    b.add_argument("--skip-gcg", action="store_true")
    b.set_defaults(func=lambda a: __import__("rmlib.bench", fromlist=["main"]).main(a))
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with")
    c.add_argument("--out-dir", default="data/scores/imported")
    c.set_defaults(func=_import_csv)
    d = sub.add_parser("paper-data", help="which of the paper's released files are here (hashes checked)")
    d.add_argument("--group", action="append", choices=("token_scores", "base_logits", "published_tables",
                                                         "published_figures", "reference"))
    d.add_argument("--download", action="store_true", help="download what is missing (needs a network, "
                                                           "and RMLIB_DATA_DIR unset)")
    d.add_argument("-v", "--verbose", action="store_true", help="say why each absent file is absent")
    d.set_defaults(func=_paper_data)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"rmlib {args.command}: {err}", file=sys.stderr)
        return 2
