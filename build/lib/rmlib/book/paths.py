"""Where the book's sources, executed chapters and build output live (a checkout)."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"
BOOK_DIR = ROOT / "book"
CHAPTERS_DIR = BOOK_DIR / "chapters"
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
VENDOR_DIR = BOOK_DIR / "_vendor"
