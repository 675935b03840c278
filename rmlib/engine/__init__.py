"""The engine: model loading and the registry (``models``, ``registry``), chat frames
(``frames``), the prefix-cached kernel (``kernel``), scorers (``scorers``), and multi-token
search (``gcg``: gradient-guided; ``search``: exact coordinate sweeps, one API for both). No file I/O beyond loading models."""
