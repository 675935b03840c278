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
from rmlib.stats.vocab import duplicate_report, shared_vocabulary, top_bottom
from rmlib.stats.rsa import design, rsa_regression, similarity_matrices
