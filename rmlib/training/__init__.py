"""Reward models trained here: Bradley-Terry training on preference data (``train``, the loop, with
``configuration``, ``preferences``, ``bradley_terry``, ``classifier`` and ``folders``) and their
held-out evaluation against the paper's RMs and baselines (``evaluate``). Sits after ``engine``,
``tables`` and ``stats`` (it uses all three); nothing below imports it. ``trained.ensure_trained``
trains a ``trained:<base>`` RM that is not in the cache yet (the CLI and the book's preparation
step call it); the engine only loads one trained before."""
