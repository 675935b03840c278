"""rmlib.engine.heap: freed activations stay in the heap (glibc), so forwards do not page-fault them in."""

import subprocess
import sys

import pytest

CHILD = r"""
import ctypes, torch
from rmlib.engine import heap

class MallInfo2(ctypes.Structure):  # glibc's struct mallinfo2 (malloc.h)
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2

def mapped_by_a_16_mb_activation():  # bytes malloc took with their own mmap for it
    before = libc.mallinfo2().hblkhd
    x = torch.empty(4_000_000).fill_(1.0)
    return libc.mallinfo2().hblkhd - before

libc.mallopt(heap.M_MMAP_THRESHOLD, 128 * 1024)  # glibc's starting threshold, whatever the imports did to it
print(mapped_by_a_16_mb_activation())
assert heap.keep_freed_memory() and heap.keep_freed_memory()  # once per process, True both times
print(mapped_by_a_16_mb_activation())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_activation_comes_from_the_heap_once_freed_memory_is_kept():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout.split()
    default, kept = map(int, out)
    assert default >= 16_000_000  # glibc's own mapping, unmapped again when freed
    assert kept == 0  # from the heap, reused by the next forward
