"""rmlib.engine.heap: freed activations stay in the heap (glibc), so forwards do not page-fault them in."""

import subprocess
import sys

import pytest

CHILD = r"""
import ctypes, sys, torch
from rmlib.engine import heap

class MallInfo2(ctypes.Structure):  # glibc's struct mallinfo2 (malloc.h)
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "keep":
    assert heap.keep_freed_memory() and heap.keep_freed_memory()  # once per process, True both times
before = libc.mallinfo2().hblkhd  # bytes in blocks malloc took with their own mmap
x = torch.empty(4_000_000).fill_(1.0)  # a 16 MB activation
print(libc.mallinfo2().hblkhd - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_activation_comes_from_the_heap_once_freed_memory_is_kept():
    grown = {mode: int(subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                                      check=True).stdout) for mode in ("default", "keep")}
    assert grown["default"] >= 16_000_000  # glibc's default: its own mapping, unmapped again when freed
    assert grown["keep"] == 0  # kept: from the heap, reused by the next forward
