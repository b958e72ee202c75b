"""The contract between a source (``weir.datastream.connectors``) and the task that reads it.

A ``Source`` is created on the client, pickled into the JobGraph, and unpickled in
each source subtask, which calls ``create_reader`` once and then polls it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class SourceReaderContext(Protocol):
    def get_index_of_this_subtask(self) -> int: ...
    def get_number_of_parallel_subtasks(self) -> int: ...


@runtime_checkable
class SourceReader(Protocol):
    def poll_batch(self, max_records: int) -> list[Any] | None:
        """Up to ``max_records`` records in order; ``[]`` when none are available right now
        (an unbounded source that is idle); ``None`` once the input has ended for good.

        Called on the task thread only; must not block for long (at most a few ms), so the
        task can serve its mailbox.
        """
        ...

    def close(self) -> None: ...


@runtime_checkable
class Source(Protocol):
    def create_reader(self, context: SourceReaderContext) -> SourceReader: ...
