"""Bounded buffers between collect sinks and the client (execute_and_collect).

Each collect operator of a job has one buffer. Sink subtasks push serialized batches;
a push waits while the buffer is full, so a client that reads slowly back-pressures
the job instead of growing the JobMaster's memory. The client pulls in batches.

With checkpointing on, the buffer makes the client see every record exactly once, as
Flink's collect sink does: each batch carries the *epoch* of its sink subtask (the id of
the last checkpoint the subtask took or restored, 0 before any) and is held back until a
checkpoint with a larger id completes. Such a checkpoint covers the batch (the subtask
pushed it before taking that checkpoint's barrier), so a restart never replays it. A
restart drops what is held back (the redeployed tasks produce it again from the restored
checkpoint); the end of the job (FINISHED) releases it all (nothing will be replayed).
Not covered: a restart that falls back to an older checkpoint because the latest cannot
be read replays records the client has already seen.

Memory: only visible batches count against ``max_batches``. A sink waiting to push
cannot take the barrier that would release its held-back data, so counting those would
deadlock the job. Held-back data is therefore bounded by what the job's collect sinks
produce in one checkpoint interval (plus the time a checkpoint takes to complete), not
by ``max_batches``.
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


@dataclass(frozen=True, slots=True)
class _HeldBatch:
    epoch: int
    batch: bytes


class CollectBuffer:
    """The batches of one collect operator.

    ``hold_back``: the job checkpoints, so batches wait for a checkpoint to complete
    before the client can fetch them (see the module docstring). Every method may be
    called from any thread.
    """

    def __init__(
        self, num_producers: int, max_batches: int = DEFAULT_MAX_BATCHES, hold_back: bool = False
    ) -> None:
        self._batches: deque[bytes] = deque()
        self._held: deque[_HeldBatch] = deque()
        self._max_batches = max_batches
        self._producers = num_producers
        self._hold_back = hold_back
        self._ended: set[int] = set()
        self._attempt = 0
        self._closed = False
        self._cond = threading.Condition()

    def push(
        self,
        subtask: int,
        batch: bytes,
        end_of_data: bool,
        timeout: float,
        *,
        epoch: int = 0,
        attempt: int = 0,
    ) -> bool:
        """Add a batch of sink subtask ``subtask`` taken in ``epoch``; False if the
        visible batches stayed at ``max_batches`` for ``timeout`` s (the caller retries).

        ``attempt`` is the job attempt (ExecutionGraph.attempt_number) of the pushing
        task: pushes of an attempt older than the last ``restart`` are dropped, since the
        restart already discarded what that attempt had sent."""
        with self._cond:
            if attempt < self._attempt:
                return True
            if batch:
                if not self._cond.wait_for(
                    lambda: self._closed or len(self._batches) < self._max_batches, timeout
                ):
                    return False
                if self._closed:
                    return True  # the job is over; drop what arrives late
                if attempt < self._attempt:  # restarted while this push waited
                    return True
                if self._hold_back:
                    self._held.append(_HeldBatch(epoch, batch))
                else:
                    self._batches.append(batch)
            if end_of_data:
                self._ended.add(subtask)
            self._cond.notify_all()
            return True

    def checkpoint_completed(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: batches of an earlier epoch become
        fetchable, in the order they were pushed."""
        with self._cond:
            if not self._held:
                return
            kept: deque[_HeldBatch] = deque()
            for held in self._held:
                if held.epoch < checkpoint_id:
                    self._batches.append(held.batch)
                else:
                    kept.append(held)
            self._held = kept
            self._cond.notify_all()

    def restart(self, attempt: int) -> None:
        """The job restarts as ``attempt`` and every sink subtask is redeployed: drop what
        is held back (it will be produced again) and forget which producers ended.
        Visible batches stay: the restored checkpoint covers them."""
        with self._cond:
            self._held.clear()
            self._ended.clear()
            self._attempt = max(self._attempt, attempt)
            self._cond.notify_all()

    def release_all(self) -> None:
        """The job finished: nothing will be replayed, so everything held back becomes
        fetchable."""
        with self._cond:
            self._batches.extend(held.batch for held in self._held)
            self._held.clear()
            self._cond.notify_all()

    def fetch(self, max_batches: int, timeout: float) -> FetchResult:
        """Up to ``max_batches`` visible batches, waiting up to ``timeout`` s for one.
        ``end_of_data`` once nothing more will become visible: every producer ended and
        nothing is held back, or the buffer is closed."""
        with self._cond:
            self._cond.wait_for(lambda: self._batches or self._at_end(), timeout)
            taken = [self._batches.popleft() for _ in range(min(max_batches, len(self._batches)))]
            if taken:
                self._cond.notify_all()
            return FetchResult(taken, not self._batches and self._at_end())

    def close(self) -> None:
        """The job ended: wake everyone; what is visible can still be fetched, what is
        held back is dropped (call ``release_all`` first when the job finished)."""
        with self._cond:
            self._closed = True
            self._held.clear()
            self._cond.notify_all()

    @property
    def num_held_back(self) -> int:
        with self._cond:
            return len(self._held)

    def _at_end(self) -> bool:
        return self._closed or (len(self._ended) >= self._producers and not self._held)
