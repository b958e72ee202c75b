"""Deletes what finished checkpoints leave behind, in the background (Flink's
CheckpointsCleaner on the JobMaster's I/O executor).

A subsumed checkpoint, an aborted one, and the shared files nothing refers to any more are
deleted on one thread of their own, in the order the coordinator asked for them, never on
the thread that handles acknowledgements, declines or triggers: deleting on a slow or
unreachable store (an S3 request retries for seconds before it fails) must not hold up
the next checkpoint, nor the decline that says the store is down.

Contract:

- ``clean`` returns at once; the action runs later on the cleaner's thread, after every
  action asked for before it (one thread, first in first out).
- An action that raises is logged at WARNING and does not stop the ones after it: what is
  left costs space, never correctness (no retained checkpoint refers to it).
- ``post_clean`` runs after each action, on the cleaner's thread, whatever the action's
  outcome: the coordinator retries a periodic trigger it held back while too many
  checkpoints awaited deletion (``number_of_checkpoints_to_clean``, Flink's bound on the
  backlog).
- ``close`` takes no more actions and waits for those queued; its thread then ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor

from weir.core.ids import JobId

logger = logging.getLogger(__name__)

Action = Callable[[], None]


class CheckpointsCleaner:
    """Runs checkpoint deletions in order on an executor of its own (or the one given,
    which must run what it is given in order: tests pass one that runs it at once)."""

    def __init__(self, job_id: JobId, executor: Executor | None = None) -> None:
        self.job_id = job_id
        self._executor = executor or ThreadPoolExecutor(
            1, thread_name_prefix=f"checkpoint-cleaner-{job_id[:8]}"
        )
        self._lock = threading.Condition()
        self._to_clean = 0
        self._closed = False

    @property
    def number_of_checkpoints_to_clean(self) -> int:
        """Deletions asked for and not finished yet."""
        with self._lock:
            return self._to_clean

    def clean(self, checkpoint_id: int, action: Action, post_clean: Action | None = None) -> None:
        """Run ``action`` (deleting what checkpoint ``checkpoint_id`` left) in the
        background, then ``post_clean``. After ``close`` nothing runs (logged)."""
        with self._lock:
            if self._closed:
                # The job's end deletes or sweeps its directory after the queued deletions.
                logger.info(
                    "job %s: not deleting the files of checkpoint %d: the checkpoint "
                    "coordinator is shut down",
                    self.job_id,
                    checkpoint_id,
                )
                return
            self._to_clean += 1
        self._executor.submit(self._run, checkpoint_id, action, post_clean)

    def _run(self, checkpoint_id: int, action: Action, post_clean: Action | None) -> None:
        try:
            action()
        except Exception:
            # Space, not correctness: no retained checkpoint refers to what is left; the
            # job's end deletes what it can find of it again.
            logger.warning(
                "job %s: could not delete the files of checkpoint %d",
                self.job_id,
                checkpoint_id,
                exc_info=True,
            )
        finally:
            with self._lock:
                self._to_clean -= 1
                self._lock.notify_all()
        if post_clean is not None:
            try:
                post_clean()
            except Exception:
                logger.warning(
                    "job %s: the action after deleting checkpoint %d failed",
                    self.job_id,
                    checkpoint_id,
                    exc_info=True,
                )

    def close(self, wait: bool = True) -> None:
        """Take no more deletions; with ``wait``, return once the queued ones ran (each is
        bounded by the store client's own retries). Idempotent."""
        with self._lock:
            self._closed = True
            if wait:
                while self._to_clean:
                    self._lock.wait()
        self._executor.shutdown(wait=False)
