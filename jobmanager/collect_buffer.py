"""Bounded buffers between collect sinks and the client (execute_and_collect).

Each collect operator of a job has one buffer. Sink subtasks push serialized batches;
a push waits while the buffer is full, so a client that reads slowly back-pressures
the job instead of growing the JobMaster's memory. The client pulls in batches.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

# Enough to keep a client busy between two fetches, small enough to bound memory: with
# 32 KiB batches this is ~2 MiB per collect sink.
DEFAULT_MAX_BATCHES = 64


@dataclass(frozen=True, slots=True)
class FetchResult:
    batches: list[bytes]
    end_of_data: bool


class CollectBuffer:
    def __init__(self, num_producers: int, max_batches: int = DEFAULT_MAX_BATCHES) -> None:
        self._batches: deque[bytes] = deque()
        self._max_batches = max_batches
        self._producers = num_producers
        self._ended: set[int] = set()
        self._closed = False
        self._cond = threading.Condition()

    def push(self, subtask: int, batch: bytes, end_of_data: bool, timeout: float) -> bool:
        """Add a batch; False if the buffer stayed full for ``timeout`` s (the caller retries)."""
        with self._cond:
            if batch:
                if not self._cond.wait_for(
                    lambda: self._closed or len(self._batches) < self._max_batches, timeout
                ):
                    return False
                if self._closed:
                    return True  # the job is over; drop what arrives late
                self._batches.append(batch)
            if end_of_data:
                self._ended.add(subtask)
            self._cond.notify_all()
            return True

    def reset_producer(self, subtask: int) -> None:
        """A sink subtask is redeployed: it has not ended any more."""
        with self._cond:
            self._ended.discard(subtask)

    def fetch(self, max_batches: int, timeout: float) -> FetchResult:
        with self._cond:
            self._cond.wait_for(lambda: self._batches or self._all_ended() or self._closed, timeout)
            taken = [self._batches.popleft() for _ in range(min(max_batches, len(self._batches)))]
            if taken:
                self._cond.notify_all()
            return FetchResult(taken, not self._batches and (self._all_ended() or self._closed))

    def close(self) -> None:
        """The job ended: wake everyone; what is buffered can still be fetched."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _all_ended(self) -> bool:
        return len(self._ended) >= self._producers
