"""Tables: the on-disk score store (``store``), models x prompts long tables (``results``), the
pinned public files (the registry ``data_files``, fetched and checked by ``downloads``) and their
readers (``paper_release``, ``token_csv``, ``lexicons``, ``word_frequencies``, ``followup``)."""
