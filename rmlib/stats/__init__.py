"""Statistics on score tables: pure functions on pandas DataFrames.

No plotting and no model code. Each submodule's public functions are
re-exported here (engineers append their own modules' lines below).
"""

from rmlib.stats.resampling import (
    BootstrapResult,
    PermutationResult,
    bootstrap_ci,
    cohens_d,
    permutation_test,
)
from rmlib.stats.agreement import (
    mds_embedding,
    paper_rbo_depth,
    rank_agreement,
    rbo,
    upper_triangle,
)
from rmlib.stats.moments import distribution_moments, moments_table
from rmlib.stats.vocab import duplicate_report, shared_vocabulary, side_by_side, top_bottom
from rmlib.stats.rsa import design, rsa_both_ways, rsa_regression, similarity_matrices
from rmlib.stats.lexical import (
    asymmetry_test,
    best_worst,
    best_worst_wide,
    count_significant,
    frequency_slope,
    frequency_slopes,
    match_lexicon,
    normalize_strings,
    prompt_correlation,
    prompt_correlations,
    sentiment_by_class,
    sentiment_slopes,
    slope_asymmetry,
    valence_slopes,
    wordfreq_frequencies,
)
from rmlib.stats.elo import (
    TauBootstrap,
    bootstrap_split_agreement,
    bootstrap_taus,
    bootstrap_weights,
    comparisons_summary,
    elo_wide,
    human_model_summary,
    kendall_tau_b,
    kendall_tau_b_matrix,
    model_model_mean,
    rank_differences,
    rank_trajectories,
    split_agreement,
    tau_matrix,
    top_item_counts,
    top_items,
)
from rmlib.stats.bigtwo import (
    bigtwo_lists,
    bigtwo_matches,
    bigtwo_scores,
    family_of,
    family_summary,
    hedges_g,
    read_dictionary,
)
