"""Tables: the on-disk score store (``store``), long tables reshaped (``results``), the
pinned public files (the registry ``data_files``, fetched and checked by ``downloads``) and their
readers (``paper_release``, ``token_csv``, ``lexicons``, ``word_frequencies``, ``followup``). Loading
models and running them over many prompts is :mod:`rmlib.runs`'s job; ``store`` scores through its cache
with a scorer it is given."""
