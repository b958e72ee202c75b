"""A TaskManager process keeps the large blocks it frees for reuse: allocating and freeing
arrays of tens of megabytes again and again then costs a fraction of the page faults it
costs with the C library's defaults (each process measured on its own)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_CHURN = """
import resource, sys, threading
import numpy as np
if sys.argv[1] == "reuse":
    from weir.taskmanager.memory_allocator import reuse_freed_blocks
    assert reuse_freed_blocks()
def churn():
    for _ in range(10):
        blocks = [np.ones(3_000_000, dtype=np.int64) for _ in range(4)]
        joined = [np.concatenate([b, b]) for b in blocks]
        del blocks, joined
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
thread = threading.Thread(target=churn)  # as the checkpoint writer's thread
thread.start()
thread.join()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _CHURN, mode], check=True, capture_output=True, text=True
    )
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_blocks_are_reused_instead_of_mapped_again():
    defaults, reused = _faults("defaults"), _faults("reuse")
    assert reused * 2 < defaults, (defaults, reused)
