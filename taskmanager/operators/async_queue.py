"""The stream element queues of the async wait operator (Flink's
``OrderedStreamElementQueue`` and ``UnorderedStreamElementQueue``).

A queue holds the elements the operator has taken in and not yet emitted: records whose
request is in flight or done, and the watermarks that arrived between them. Its length
counts both, and is what the capacity bounds. ``pop_completed`` returns what may be
emitted now, in the order to emit it:

- ordered: the longest prefix of done entries, so results keep the input order;
- unordered: the done records before the first watermark still waiting, in the order
  they completed; a watermark once every record before it went out, then the records
  after it. Watermarks cut the queue into segments and nothing crosses one, so no
  result is emitted late and none ahead of a watermark it came before.

Pure bookkeeping on the task thread: no locks, no clock, no I/O.
"""

from __future__ import annotations

import collections
from typing import Any, Protocol


class RecordEntry:
    """A record in the queue and the state of its request.

    The first group of fields is the task thread's; the second the event loop's
    (``async_runner``), which the task thread never reads or writes once the entry is
    handed to the loop. ``value`` and ``timestamp`` are read by both, written by none."""

    __slots__ = (
        "attempts",
        "deadline",
        "request",
        "results",
        "retry_handle",
        "segment",
        "timeout_handle",
        "timestamp",
        "value",
    )

    is_watermark = False

    def __init__(self, value: Any, timestamp: int | None) -> None:
        self.value = value
        self.timestamp = timestamp
        # Task thread.
        self.results: list[Any] | None = None
        """The results to emit, once the request is done (an empty list: none)."""
        self.attempts = 0
        """Attempts started; the number of the one whose outcome counts."""
        self.segment: _Segment | None = None
        # Event loop thread.
        self.request: Any = None
        self.timeout_handle: Any = None
        self.retry_handle: Any = None
        self.deadline: float | None = None

    @property
    def done(self) -> bool:
        return self.results is not None

    def element(self) -> tuple[Any, ...]:
        """What a checkpoint keeps of it: the input record, requested again on restore."""
        return ("record", self.value, self.timestamp)


class WatermarkEntry:
    """A watermark in the queue: always done, emitted when its turn comes."""

    __slots__ = ("timestamp",)

    is_watermark = True
    done = True

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp

    def element(self) -> tuple[Any, ...]:
        return ("watermark", self.timestamp)


QueueEntry = RecordEntry | WatermarkEntry


class StreamElementQueue(Protocol):
    def __len__(self) -> int: ...

    def has_room(self) -> bool:
        """Fewer entries than the capacity: one more may be added."""
        ...

    def add(self, entry: QueueEntry) -> None:
        """Append ``entry`` (a record not done yet, or a watermark); see ``has_room``."""
        ...

    def completed(self, entry: RecordEntry) -> None:
        """``entry`` got its results."""
        ...

    def pop_completed(self) -> list[QueueEntry]:
        """Remove and return what may be emitted now, in emission order."""
        ...

    def entries(self) -> list[QueueEntry]:
        """Every entry, in an order that, replayed, keeps records between the watermarks
        they came between."""
        ...


class OrderedStreamElementQueue:
    """Emits in input order: an entry only once every entry before it was emitted."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._queue: collections.deque[QueueEntry] = collections.deque()

    def __len__(self) -> int:
        return len(self._queue)

    def has_room(self) -> bool:
        return len(self._queue) < self._capacity

    def add(self, entry: QueueEntry) -> None:
        self._queue.append(entry)

    def completed(self, entry: RecordEntry) -> None:
        """Nothing to move: the head is checked when popping."""

    def pop_completed(self) -> list[QueueEntry]:
        queue = self._queue
        out = []
        while queue and queue[0].done:
            out.append(queue.popleft())
        return out

    def entries(self) -> list[QueueEntry]:
        return list(self._queue)


class _Segment:
    """The records between two watermarks (or a watermark alone)."""

    __slots__ = ("completed", "incomplete")

    def __init__(self) -> None:
        # A dict as an insertion-ordered set: snapshots list records in a stable order.
        self.incomplete: dict[RecordEntry, None] = {}
        self.completed: collections.deque[QueueEntry] = collections.deque()

    @property
    def is_empty(self) -> bool:
        return not self.incomplete and not self.completed


class UnorderedStreamElementQueue:
    """Emits records as they complete, within the segment between two watermarks."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._segments: collections.deque[_Segment] = collections.deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def has_room(self) -> bool:
        return self._size < self._capacity

    def add(self, entry: QueueEntry) -> None:
        segments = self._segments
        self._size += 1
        if isinstance(entry, WatermarkEntry):
            # A segment of its own (the last one, if it is drained), and a new one after
            # it for the records that follow.
            if segments and segments[-1].is_empty:
                segment = segments[-1]
            else:
                segment = _Segment()
                segments.append(segment)
            segment.completed.append(entry)
            segments.append(_Segment())
            return
        if not segments:
            segments.append(_Segment())
        segment = segments[-1]
        entry.segment = segment
        segment.incomplete[entry] = None

    def completed(self, entry: RecordEntry) -> None:
        segment = entry.segment
        if segment is not None and entry in segment.incomplete:
            del segment.incomplete[entry]
            segment.completed.append(entry)

    def pop_completed(self) -> list[QueueEntry]:
        segments = self._segments
        out: list[QueueEntry] = []
        while segments:
            segment = segments[0]
            completed = segment.completed
            while completed:
                out.append(completed.popleft())
            if segment.incomplete or len(segments) == 1:
                break
            segments.popleft()
        self._size -= len(out)
        return out

    def entries(self) -> list[QueueEntry]:
        out: list[QueueEntry] = []
        for segment in self._segments:
            out.extend(segment.completed)
            out.extend(segment.incomplete)
        return out
