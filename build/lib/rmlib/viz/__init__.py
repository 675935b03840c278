"""Showing results: Altair charts rendered offline (``charts``) and escaped HTML (``html``).
Every string that comes from a vocabulary goes through ``html.visible`` / ``html.escape``."""
