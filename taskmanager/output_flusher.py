"""OutputFlusher: sends a task's partly filled buffers while its thread is stuck in a batch.

The task thread flushes its RecordWriters itself when the buffer timeout is due, but
only between two batches. A batch that takes long (a slow user function, a window
firing that runs for seconds) would keep what the batch emitted early on waiting
until it ends, where Flink's OutputFlusher thread sends it within the buffer timeout:
downstream watermarks, timers and windows then see those records before the slow
part is over. This thread does that part of Flink's OutputFlusher, and nothing else.

Threading contract: the task thread brackets the processing of every batch with
``epoch += 1`` before and after (``with flusher:``), so ``epoch`` is odd exactly while
it is inside one.
Every ``interval_s`` this thread looks at ``epoch``; if it is odd and the same as at
its previous look, the task has been inside one batch for at least an interval, and
it flushes each writer through ``RecordWriter.flush_if``, which takes the writer's
lock without waiting and checks again under it that the batch has not ended, and
re-arms the task's ``BufferTimeout``: like Flink's fixed-rate flusher, it has done the
periodic flush, so the task does not flush again the moment the batch ends (which
would send the batch's last record apart from those right after it). Outside
batches (mailbox actions, checkpoints, barriers, end of input) it never writes, so a
checkpoint sees the writers as the task thread left them; a flush in progress when
the batch ends finishes before the task thread's next use of the writer, which waits
for the lock. A flush may block on back-pressure like any write; releasing the
partition (cancel, failure) ends it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from weir.taskmanager.network.api import PartitionClosedError
from weir.taskmanager.record_writer import BufferTimeout, RecordWriter

logger = logging.getLogger(__name__)

# With a buffer timeout of 0 the task flushes after every batch itself; inside a long
# batch this is how soon its output follows. Short, since such a job asked for low
# latency, yet long enough that the idle wake-ups cost nothing measurable.
_ZERO_TIMEOUT_INTERVAL_S = 0.01


class OutputFlusher:
    """See the module docstring. ``start`` does nothing when there is nothing to flush
    (no writers, or a buffer timeout of -1: only full buffers are sent)."""

    def __init__(
        self, writers: Sequence[RecordWriter], buffer_timeout: BufferTimeout | None, name: str
    ) -> None:
        self.epoch = 0
        """Odd while the task thread is inside a batch (written by the task thread only)."""
        self._writers = tuple(writers)
        self._buffer_timeout = buffer_timeout
        timeout_ms = -1 if buffer_timeout is None else buffer_timeout.timeout_ms
        self._interval_s = timeout_ms / 1000 if timeout_ms > 0 else _ZERO_TIMEOUT_INTERVAL_S
        self._enabled = bool(self._writers) and timeout_ms >= 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._name = f"OutputFlusher for {name}"

    def __enter__(self) -> OutputFlusher:
        """The task thread enters a batch (``with flusher:`` around its processing)."""
        self.epoch += 1
        return self

    def __exit__(self, *_: object) -> None:
        self.epoch += 1

    def start(self) -> None:
        if not self._enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop (idempotent, any thread). Not joined: the thread ends at once unless it is
        blocked writing, which releasing the partitions ends; it writes nothing after
        this returns unless it was already writing."""
        self._stop.set()

    def _run(self) -> None:
        seen = -1
        while not self._stop.wait(self._interval_s):
            try:
                seen = self.check(seen)
            except PartitionClosedError:
                return  # the task is failing or being cancelled
            except Exception:  # the task thread meets the same error on its next write
                logger.warning("%s: flushing failed", self._name, exc_info=True)
                return

    def check(self, seen: int) -> int:
        """One look (the thread's, every interval): flush if the task is inside the same
        batch as at the previous look, whose ``epoch`` was ``seen``. Returns the epoch to
        pass next time."""
        epoch = self.epoch
        if epoch & 1 and epoch == seen:

            def still_due() -> bool:
                return self.epoch == epoch and not self._stop.is_set()

            flushed = False
            for writer in self._writers:
                flushed = writer.flush_if(still_due) or flushed
            if flushed and self._buffer_timeout is not None:
                self._buffer_timeout.rearm()
        return epoch
