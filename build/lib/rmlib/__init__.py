"""rmlib: interrogate reward models by scoring every token of a vocabulary.

The library behind the executable book "Optimal & Pessimal Tokens"
(Christian et al., FAccT 2025, arXiv 2506.07326).
"""

__version__ = "0.1.0"
