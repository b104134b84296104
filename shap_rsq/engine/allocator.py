"""How the kernels' temporaries meet the C allocator (glibc's ``malloc``; nothing elsewhere).

The kernels walk their rows in blocks and make the same few temporaries of 0.1-4 MB in every
block.  glibc serves a request of at least its *mmap threshold* with a fresh ``mmap``, whose
pages fault in one by one when first written and go back to the system when freed; the
threshold starts at 128 KiB and rises only when the process frees such a mapped block, to that
block's size (at most 32 MiB; mallopt(3), ``M_MMAP_THRESHOLD``), and the heap is trimmed
whenever twice the threshold lies free at its top.  So a process that has freed no large
block, such as one that loads a saved model and explains it, pays a page fault per 4 KiB of
every temporary: per-row shares of XGBoost depth 6 (300 trees, 1,000 rows) took 430,000-610,000
faults and 4.2-4.7 CPU s a call there, against 200-600 faults and 3.1-3.3 s in a process that
had fitted the model first (xgboost's fit had freed large blocks).
"""

from __future__ import annotations

import ctypes
from functools import cache

__all__ = ["keep_temporaries_on_the_heap", "return_freed_memory"]


@cache
def _glibc() -> ctypes.CDLL | None:
    """The C library's allocator, when it is glibc's (``None`` elsewhere)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        libc.free.restype, libc.free.argtypes = None, [ctypes.c_void_p]
        libc.malloc_trim.restype, libc.malloc_trim.argtypes = ctypes.c_int, [ctypes.c_size_t]
    except (OSError, AttributeError):  # not glibc: its allocator keeps its own policy
        return None
    return libc


def keep_temporaries_on_the_heap(n_bytes: int) -> None:
    """Raise glibc's mmap threshold to ``n_bytes`` (``Tuning.heap_threshold_bytes``), as freeing
    any block of that size does: allocate one, untouched (no page is mapped in), and free it.

    Temporaries below the threshold then come from the heap and stay mapped from block to block.
    The threshold only ever rises this way, and a process that fixed it with ``mallopt`` keeps its
    own.  The block is the C library's, not NumPy's: ``tracemalloc`` does not count it, and
    nothing is written into it.
    """
    libc = _glibc()
    if libc is not None:
        libc.free(libc.malloc(n_bytes))


def return_freed_memory() -> None:
    """Give the pages malloc keeps after the kernels' temporaries are freed back to the system
    (glibc's ``malloc_trim``; nothing elsewhere).

    joblib restarts a worker whose resident memory stays 300 MB above its size after its first
    task, taking the plans it kept with it (and warning "A worker stopped ... memory leak"):
    XGBoost of depth 12 on 10,000 rows left a worker that far above after one block.
    """
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
