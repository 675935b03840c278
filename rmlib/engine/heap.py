"""Freed activations kept in the process's heap on a CPU, not handed back to the kernel.

glibc's ``malloc`` serves a large block (from 128 KiB, a threshold it raises as
such blocks are freed) with its own ``mmap`` and returns it with ``munmap`` when
freed. A CPU forward allocates and frees its activations (megabytes each) layer
by layer, so every forward touches fresh pages: hundreds of thousands of page
faults per thousand candidates, each a kernel entry and a page zeroed. Raising
the mmap threshold to glibc's maximum (32 MiB) and the trim threshold to 512 MiB
keeps those blocks in the heap for the next forward: far fewer page faults, less
kernel time, faster scans (``make bench``, section ``heap``, measures both ways
in whole processes). It changes no result: the same
arithmetic runs on memory from another source, and torch aligns every tensor the
same way either way.

:func:`keep_freed_memory` sets both once per process (glibc only; elsewhere it
does nothing). :func:`rmlib.engine.models.load_model` calls it for a CPU model.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

#: glibc's ``mallopt`` parameters (malloc.h) and the values set
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 512 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Keep freed blocks below 32 MiB in the heap (glibc); True when glibc accepted both settings."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl without mallopt): nothing to do
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
