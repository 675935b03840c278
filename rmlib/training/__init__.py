"""Reward models trained here: Bradley-Terry training on preference data (``train``) and their
held-out evaluation against the paper's RMs and baselines (``evaluate``). Sits after ``engine``,
``tables`` and ``stats`` (it uses all three); ``engine.models`` reaches it only at run time, to
build a ``trained:<base>`` model on first use."""
