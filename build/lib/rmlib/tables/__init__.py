"""Tables: the on-disk score store (``store``), models x prompts long tables (``results``),
and the pinned public datasets (``datasets``)."""
