"""The Hugging Face hub as rmlib meets it: a revision resolved to the commit it names, the hub's errors as
one-line errors that say the fix, and the refusal of a repository's own code unless the caller opted in.
"""

from __future__ import annotations

from ..errors import InputError, ModelLoadError, shortened


def check_remote_code(spec: str, entry: dict, trust_remote_code: bool) -> None:
    """Refuse a model that runs its repository's own code (the registry says so, or its config's ``auto_map``
    names a class of it) unless the caller opted in."""
    if entry.get("trust_remote_code") and not trust_remote_code:
        raise InputError(
            f"{spec} runs custom code from its hub repository (trust_remote_code). rmlib does not run "
            "it unless you opt in for this model: pass trust_remote_code=True (CLI: --trust-remote-code) "
            "if you have read and trust that code."
        )


def _unreachable(spec: str, revision: str | None, err: Exception) -> ValueError:
    rev = f" --revision {revision}" if revision else ""
    return ModelLoadError(
        f"could not load {spec!r} from the Hugging Face hub ({type(err).__name__}: {shortened(err, 300)}). "
        f"The id may be misspelt: check it on the Hub (https://huggingface.co/{spec}). "
        f"Without a network, download it elsewhere (`hf download {spec}{rev} --local-dir DIR`) "
        "and pass the local folder DIR as the model, or set HF_HUB_OFFLINE=1 with a filled cache."
    )


def hub_commit(repo_id: str, revision: str | None = None) -> str:
    """The commit a hub revision (a branch, tag or commit; None: the default branch) names now: asked of the hub
    (``HF_ENDPOINT``), or with ``HF_HUB_OFFLINE=1`` read from the hub cache's record of an earlier download.

    A repository or revision the hub does not have is an :class:`InputError`; a hub that cannot be reached
    with nothing cached, a :class:`ModelLoadError` saying how to load the model from a local folder."""
    import re

    from huggingface_hub import HfApi, errors

    unresolved = getattr(errors, "RevisionResolutionError", OSError)  # huggingface_hub >= 1.x
    api = HfApi()
    try:
        if hasattr(api, "resolve_revision"):
            return api.resolve_revision(repo_id, revision=revision).resolved
        if revision and re.fullmatch(r"[0-9a-f]{40}", revision):  # an older huggingface_hub: a commit is one
            return revision
        return api.model_info(repo_id, revision=revision).sha
    except (OSError, ValueError, unresolved) as err:  # unreachable hub, offline with nothing cached
        raise hub_error(repo_id, revision, err) from None


def hub_error(repo_id: str, revision: str | None, err: BaseException) -> Exception:
    """The error to raise for a failed hub call ``err`` (or one it was raised from): a repository or revision
    the hub does not have (an :class:`InputError`), a gated one, else an unreachable hub (:func:`_unreachable`)."""
    from huggingface_hub import errors

    cause, seen = err, []
    while cause is not None and cause not in seen:
        seen.append(cause)
        if isinstance(cause, errors.RevisionNotFoundError):
            return InputError(f"{repo_id} has no revision {revision!r} on the hub: pass a branch, tag or commit id "
                              "it has (its 'Files and versions' page lists them), or leave --revision out")
        if isinstance(cause, errors.GatedRepoError):
            return ModelLoadError(f"{repo_id} is gated on the hub: accept its terms on its page and log in "
                                  "(`hf auth login`), then run again")
        if isinstance(cause, errors.RepositoryNotFoundError):
            return InputError(f"no model repository {repo_id!r} on the hub (or it is private: log in with "
                              "`hf auth login`); check the id")
        cause = cause.__cause__ or cause.__context__
    return _unreachable(repo_id, revision, err)
