"""The engine: model loading (``models``; the embedded GGUF models, ``embedded``; the hub, ``hub``;
``tiny:`` and ``random:`` models, ``random_init`` and ``shapes``; ``trained:`` pointers,
``trained_pointers``; the model names themselves are :mod:`rmlib.registry`'s), chat frames
(``frames``), the prefix-cached kernel (``kernel``), scorers (``scorers``), and multi-token
search under one config (``search_config``) and one ``search.run``: GCG (``gcg``), exact coordinate
sweeps (``sweeps``), starts and restarts (``restarts``), shortlists (``shortlists``), the tables a page
shows (``search_tables``).

Files: besides reading models and tokenizers, the engine writes into the user cache
(:func:`rmlib.paths.cache_dir`) only: the de-quantized embedded models (``embedded``), each tokenizer's
token table as Parquet (``token_tables``) and the tokenizer records a warm start reads instead of the
tokenizer (``tokenizer_facts``); and a search result where its caller asks
(:meth:`rmlib.engine.search.SearchResult.save_json`)."""
