"""Kept for readers of earlier versions: GCG is :mod:`rmlib.engine.gcg`."""

from .engine.gcg import *  # noqa: F401,F403
from .engine.gcg import GCGConfig, GCGResult, run  # noqa: F401
