"""Statistics on score tables: pure functions on pandas DataFrames.

No plotting and no model code. Each submodule"s public functions are
re-exported here, one entry per submodule.
The submodules are imported on first use (PEP 562), so that importing one
light function (``from rmlib.stats.vocab import top_bottom``) does not pay for
scipy and statsmodels: that keeps ``rmlib score`` fast to start.
"""

from __future__ import annotations

import importlib

#: submodule -> the public names it gives this package
_EXPORTS = {
    "resampling": (
        "BootstrapResult", "PermutationResult", "bootstrap_ci", "bootstrap_indices", "bootstrap_weights",
        "cohens_d", "matched_permutation_test", "percentile_interval", "permutation_test",
    ),
    "tau": (
        "kendall_tau_b", "kendall_tau_b_matrix",
    ),
    "agreement": (
        "mds_embedding", "paper_rbo_depth", "prompt_overlap", "prompt_taus", "rank_agreement", "rbo", "upper_triangle",
    ),
    "moments": (
        "distribution_moments", "moments_table",
    ),
    "vocab": (
        "side_by_side", "top_bottom",
    ),
    "rsa": (
        "design", "matrix_correlation", "rsa_both_ways", "rsa_regression", "similarity_matrices",
    ),
    "lexical": (
        "asymmetry_test", "best_worst", "best_worst_wide", "class_gaps", "count_significant", "frequency_slope",
        "frequency_slopes", "iter_tables", "match_lexicon", "normalize_strings", "prompt_correlation",
        "prompt_correlations", "sentiment_by_class", "sentiment_slopes", "sentiment_slopes_long", "slope_asymmetry",
        "text_sentiment", "valence_slopes", "wordfreq_frequencies",
    ),
    "elo": (
        "TauBootstrap", "bootstrap_split_agreement", "bootstrap_taus", "comparisons_summary", "elo_wide",
        "human_model_summary", "model_model_mean", "rank_differences", "rank_trajectories", "ranks",
        "split_agreement", "tau_matrix", "top_item_counts", "top_items",
    ),
    "terms": (
        "term_forms", "term_keys", "term_matches", "words_of",
    ),
    "matched": (
        "balance", "compare_matched", "deciles", "matched_controls", "matched_differences", "percentile_ranks", "rank_gaps",
        "text_covariates", "token_frame",
    ),
    "ranking": (
        "cell_means", "gap", "median_ranks", "rank_within", "zscore_within",
    ),
    "mixed": (
        "mixed_model",
    ),
    "comparisons": (
        "bonferroni", "d_av", "holm", "paired_test", "panel_tests", "stars", "welch_test",
    ),
    "implicit": (
        "best_per_string", "mwlr", "mwlr_table", "variant_mean",
    ),
    "token_classes": (
        "class_shares", "classify_tokens", "out_of_distribution_share", "token_class",
    ),
    "searches": (
        "framing_means", "framing_sentiment", "framing_verdict", "search_summary",
    ),
    "bigtwo": (
        "bigtwo_matches", "bigtwo_scores", "family_of", "family_summary", "hedges_g",
    ),
    "policy": (
        "best_of_n", "best_of_n_matching", "best_of_n_path", "beta_label", "coverage",
        "crossover", "crossover_beta", "frequency_correlations",
        "group_mass", "kl_approximation", "kl_optimal", "kl_path",
        "policy_inputs", "summarize", "term_controls", "token_probabilities", "top_tokens",
    ),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # imported once
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
