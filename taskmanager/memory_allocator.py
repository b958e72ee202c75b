"""The C allocator of a TaskManager process: large blocks, once freed, are kept for reuse.

Columnar state allocates and frees arrays of tens of megabytes again and again: a
checkpoint of a built-in aggregate's open windows cuts them into new arrays and encodes
those into new buffers, every interval. glibc maps each block above 128 kB (its default
``M_MMAP_THRESHOLD``, raised to at most 32 MB as blocks are freed) fresh from the kernel
and gives it back when freed, so each checkpoint pays a page fault and the kernel's
zeroing for every page it writes again (in q2 with checkpoints every second, four times
the page faults of the run without checkpoints). A long-lived
TaskManager keeps them instead (``reuse_freed_blocks``), as the JVM keeps its heap: what
it has freed stays in the process (its resident size does not shrink after a peak) and
serves the next checkpoint. Elsewhere than on glibc nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks up to this size come from the heap, not from mappings of their own: 1 GiB, above
# any array a checkpoint of one subtask's windows makes (132 MB seen in q2).
_MMAP_THRESHOLD = 1 << 30
# Free memory at the top of the heap is given back only past this much: 2 GiB.
_TRIM_THRESHOLD = 1 << 31


def reuse_freed_blocks() -> bool:
    """Keep large freed blocks in the process for reuse (glibc); False where the C
    library is not glibc or refuses, and nothing changed."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc: its own defaults stay
    done = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1
    done = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1 and done
    if not done:
        logger.warning("the C allocator refused to keep freed blocks; its defaults stay")
    return done
