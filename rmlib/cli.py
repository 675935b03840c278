"""Command line: ``python -m rmlib score|search|bench|import-paper-csv|chapter|book``."""

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


def _search(args) -> int:
    """Multi-token search (rmlib.engine.search); Ctrl-C keeps and writes the best so far."""
    from .engine.scorers import load_scorer
    from .engine.search import SearchConfig, search

    if not args.prompt.strip():
        raise SystemExit("rmlib search: --prompt must not be empty")
    config = SearchConfig(method=args.method, length=args.length, maximize=args.direction == "max",
                          restarts=args.restarts, budget_seconds=args.budget_seconds, allowed=args.allowed,
                          seed=args.seed, progress=not args.no_progress).validate()  # before loading a model
    scorer = load_scorer(args.model, reference=args.reference, chat_template=args.chat_template,
                         batch_size=args.batch_size, kind=args.kind, dtype=args.dtype, revision=args.revision,
                         trust_remote_code=args.trust_remote_code, device=args.device)
    result = search(scorer, args.prompt, config, start=args.start)
    local = {True: "yes", False: "NO", None: "not checked"}[result.local_optimum]
    print(f"{result.method} search, {result.direction}imize, {result.length} tokens, {result.provenance.get('model_id')}")
    print(f"  best ids:   {result.best_ids}")
    print(f"  best text:  {result.best_text!r}")
    print(f"  score:      {result.best_score:.6f} (fresh re-score)")
    print(f"  single-swap local optimum: {local} ({result.local_optimum_check})")
    if result.better_swap:
        print(f"  better swap: position {result.better_swap['position']} -> {result.better_swap['token']!r} "
              f"({result.better_swap['score']:.6f})")
    print(f"  spent: {result.candidates_scored} candidates in {result.seconds:.1f} s, {len(result.runs)} run(s), "
          f"stopped: {result.stop_reason}")
    if args.out:
        result.save_json(args.out)
        print(f"wrote {args.out}")
    return 130 if result.stop_reason == "interrupted" else 0


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
    b.add_argument("--skip-search", action="store_true", help="leave out the coordinate-sweep benchmark")
    b.set_defaults(func=lambda a: __import__("rmlib.bench", fromlist=["main"]).main(a))
    f = sub.add_parser("search", help="search the L-token response with the highest (lowest) score")
    f.add_argument("--model", default="default", help="'default', a hub id, a local folder, or tiny:<arch>")
    f.add_argument("--prompt", required=True)
    f.add_argument("--length", type=int, required=True, help="response length in tokens")
    f.add_argument("--direction", choices=("max", "min"), required=True)
    f.add_argument("--method", choices=("gcg", "sweep", "both"), default="both",
                   help="GCG, exact coordinate sweeps, or GCG polished by sweeps (default)")
    f.add_argument("--budget-seconds", type=float, help="stop starting new scans after this long")
    f.add_argument("--allowed", choices=("ascii", "all"), default="ascii", help="tokens a response may use")
    f.add_argument("--restarts", type=int, default=3, help="sweep starts")
    f.add_argument("--seed", type=int, default=0, help="seeds the random restarts")
    f.add_argument("--start", help="the first start, as text of exactly --length tokens")
    f.add_argument("--out", help="write the result (ids, text, score, checks, provenance) to this JSON file")
    f.add_argument("--kind", choices=("classifier", "logprob"))
    f.add_argument("--reference", help="a reference LM: search the implicit reward log p_model - log p_reference")
    f.add_argument("--dtype", choices=("float32", "bfloat16", "float16"))
    f.add_argument("--revision")
    f.add_argument("--trust-remote-code", action="store_true", help="run the model's own code from its hub repo")
    f.add_argument("--chat-template", help="a Jinja template, or one of: chatml, llama3, plain")
    f.add_argument("--batch-size", type=int)
    f.add_argument("--device")
    f.add_argument("--no-progress", action="store_true")
    f.set_defaults(func=_search)
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with")
    c.add_argument("--out-dir", default="data/scores/imported")
    c.set_defaults(func=_import_csv)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"rmlib {args.command}: {err}", file=sys.stderr)
        return 2
