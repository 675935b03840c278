"""A page's set-up: charts drawn offline, no progress bars.

What a page shows comes from general functions: its scorer from
:func:`rmlib.tables.provenance.provenance_table` (and, for titles,
:func:`~rmlib.tables.provenance.score_kind`), its tables from
:func:`rmlib.viz.html.table`, its findings from a template per claim in
:mod:`rmlib.stats`.
"""

from __future__ import annotations

__all__ = ["page_setup"]


def page_setup() -> None:
    """Altair charts drawn offline (the vendored Vega bundle); no weight-loading progress bars in the page."""
    from transformers.utils import logging as hf_logging

    from . import charts

    charts.enable()
    hf_logging.disable_progress_bar()
