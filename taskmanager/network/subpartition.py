"""One subpartition's queue and the view through which its single consumer reads it.

Neither class locks: both are guarded by the lock of the ``ResultPartition`` that owns
them, so a buffer costs one lock acquisition to enqueue and one to dequeue.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

from weir.taskmanager.network.api import BufferKind

logger = logging.getLogger(__name__)

UNLIMITED_CREDIT = 1 << 62
"""Credit of an in-memory reader: it takes a buffer only when its task polls, so the
subpartition's own bound already limits what is held."""


class SubpartitionView:
    """The consumer's handle on a subpartition (Flink's ``ResultSubpartitionView``).

    ``credit`` counts the DATA buffers the consumer can still take. ``available`` is
    True while the view sits in its reader's queue of views to drain; whoever flips it
    from False to True (under the partition lock) must call ``listener`` afterwards,
    outside the lock, so the reader (the I/O thread, or an input gate) comes and polls.
    """

    __slots__ = ("available", "credit", "index", "listener", "partition")

    def __init__(
        self, index: int, credit: int, listener: Callable[[SubpartitionView], None]
    ) -> None:
        self.index = index
        self.credit = credit
        self.listener = listener
        self.available = False
        self.partition: object | None = None
        """The ResultPartition once attached (``None`` while the request is parked)."""


class PipelinedSubpartition:
    """A FIFO of ``(kind, payload)``; only DATA buffers count against the bound."""

    __slots__ = ("consumed", "data_count", "queue", "view")

    def __init__(self) -> None:
        self.queue: deque[tuple[BufferKind, bytes]] = deque()
        self.data_count = 0
        self.view: SubpartitionView | None = None
        self.consumed = False
        """END_OF_PARTITION was taken by the consumer."""

    def is_sendable(self, view: SubpartitionView) -> bool:
        """The head may go to the view now: events need no credit, data needs one."""
        return bool(self.queue) and (self.queue[0][0] != BufferKind.DATA or view.credit > 0)

    def add_priority_event(self, payload: bytes) -> list[bytes]:
        """Insert a PRIORITY_EVENT behind the priority events already at the head (they
        keep their order) and ahead of everything else; return the DATA buffers it
        overtook, in queue order. They stay queued: they are sent after the event."""
        queue = self.queue
        position = 0
        for kind, _ in queue:
            if kind != BufferKind.PRIORITY_EVENT:
                break
            position += 1
        overtaken = [p for i, (k, p) in enumerate(queue) if i >= position and k == BufferKind.DATA]
        queue.insert(position, (BufferKind.PRIORITY_EVENT, payload))
        return overtaken

    def clear(self) -> None:
        self.queue.clear()
        self.data_count = 0
