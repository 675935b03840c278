"""The engine: model loading and the registry (``models``, ``registry``), chat frames
(``frames``), the prefix-cached kernel (``kernel``), scorers (``scorers``), and multi-token
search under one config (``search_config``) and one ``search.run``: GCG (``gcg``), exact coordinate
sweeps (``sweeps``), starts and restarts (``restarts``), shortlists (``shortlists``), the tables a page
shows (``search_tables``). No file I/O beyond loading models."""
