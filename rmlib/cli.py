"""Command line: ``python -m rmlib score|train-rm|bench|import-paper-csv|chapter|book``."""

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


def _train_rm(args) -> int:
    from .engine.train import TrainConfig, train_reward_model

    config = TrainConfig(base=args.base, prompt=args.prompt, data=args.data, split_seed=args.split_seed,
                         test_fraction=args.test_fraction, epochs=args.epochs, lr=args.lr,
                         unfreeze_blocks=args.unfreeze_blocks, dtype=args.dtype, seed=args.seed,
                         pairs_per_item=args.pairs_per_item, data_fraction=args.data_fraction,
                         chat_template=args.chat_template, max_items=args.max_items)
    run = train_reward_model(config, out=args.out, device=args.device, progress=not args.no_progress,
                             force=args.force)
    info = run.info
    what = "reused" if run.reused else f"trained in {info['wall_s']:.0f} s"
    print(f"{what}: {run.folder}")
    print(f"  base {info['base_model_id']}, {info['trained']}, {info['n_pairs']} pairs, {info['epochs']} epochs")
    if info.get("heldout_tau") is not None:
        print(f"  held-out Kendall tau-b with human ratings: {info['heldout_tau']:.3f} "
              f"({info['split']['n_test_items']} test items)")
    if info.get("heldout_pair_accuracy") is not None:
        print(f"  held-out pair accuracy: {info['heldout_pair_accuracy']:.3f} ({info['n_heldout_pairs']} pairs)")
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
    from .engine.train import DEFAULT_PROMPT, TrainConfig

    d = TrainConfig()
    t = sub.add_parser("train-rm", help="train a Bradley-Terry reward model (EloEverything or a CSV)")
    t.add_argument("--base", default=d.base, help="'default', 'gemma-3-270m', a hub id or a local causal-LM folder")
    t.add_argument("--prompt", default=DEFAULT_PROMPT, help="the prompt every item answers (default: the paper's Sec. 4)")
    t.add_argument("--data", default=d.data, help="'eloeverything', or a CSV of item,rating or [prompt,]chosen,rejected")
    t.add_argument("--split-seed", type=int, default=d.split_seed)
    t.add_argument("--test-fraction", type=float, default=d.test_fraction)
    t.add_argument("--epochs", type=int, default=d.epochs)
    t.add_argument("--lr", type=float, default=d.lr)
    t.add_argument("--unfreeze-blocks", type=int, default=d.unfreeze_blocks,
                   help="0: train the head only (default); K: also the top K blocks")
    t.add_argument("--pairs-per-item", type=int, default=d.pairs_per_item)
    t.add_argument("--data-fraction", type=float, default=d.data_fraction, help="use this fraction of the pairs")
    t.add_argument("--max-items", type=int, help="a seeded random subset of the items (quick runs)")
    t.add_argument("--seed", type=int, default=d.seed)
    t.add_argument("--device", default="cpu")
    t.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=d.dtype)
    t.add_argument("--chat-template", help="a Jinja template, or one of: chatml, llama3, plain")
    t.add_argument("--out", help="output folder (default: the cache folder keyed by the configuration)")
    t.add_argument("--force", action="store_true", help="train again even if the folder holds this model")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=_train_rm)
    b = sub.add_parser("bench", help="speed benchmarks, JSON on stdout")
    b.add_argument("--n-tokens", type=int, default=384)
    b.add_argument("--gpu-gemma2-2b", action="store_true", help="full 256,000-token vocabulary on a Gemma-2-2B-shaped RM")
    b.add_argument("--skip-gcg", action="store_true")
    b.add_argument("--skip-train", action="store_true", help="skip the reward-model training benchmark")
    b.set_defaults(func=lambda a: __import__("rmlib.bench", fromlist=["main"]).main(a))
    c = sub.add_parser("import-paper-csv", help="convert the paper's per-model CSV into score tables")
    c.add_argument("csv")
    c.add_argument("--model", required=True, help="the hub id the CSV was scored with")
    c.add_argument("--out-dir", default="data/scores/imported")
    c.set_defaults(func=_import_csv)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FloatingPointError) as err:
        print(f"rmlib {args.command}: {err}", file=sys.stderr)
        return 2
