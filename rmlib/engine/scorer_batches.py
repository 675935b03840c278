"""The batch size a search scores with: a shallow copy of the caller's scorer when the search needs
another one (the scorer passed in is never changed)."""

from __future__ import annotations

def search_batch_size(scorer, batch_size: int | None) -> int | None:
    """The scorer's batch size for a search: ``batch_size`` when given, else what the model's plan says
    (:attr:`rmlib.engine.plan.ForwardPlan.search_batch`; None: the scorer's own)."""
    return batch_size if batch_size is not None else scorer.loaded.plan.search_batch


def with_batch_size(scorer, size: int | None):
    """``scorer`` scoring in batches of ``size``: a shallow copy (and copies of both parts of an implicit
    scorer) when that changes anything, the scorer itself otherwise. The copy shares the model and
    the prompt caches; the scorer passed in is never changed."""
    import copy

    if size is None:
        return scorer
    if getattr(scorer, "kind", None) == "implicit":
        policy, reference = with_batch_size(scorer.policy, size), with_batch_size(scorer.reference, size)
        if policy is scorer.policy and reference is scorer.reference:
            return scorer
        clone = copy.copy(scorer)
        clone.policy, clone.reference = policy, reference
        return clone
    if getattr(scorer, "batch_size", None) == size:
        return scorer
    clone = copy.copy(scorer)
    clone.batch_size = size
    return clone


__all__ = ["search_batch_size", "with_batch_size"]
