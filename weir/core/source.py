"""The contract between a source (``weir.datastream.connectors``) and the task that reads it.

A ``Source`` is created on the client, pickled into the JobGraph, and unpickled in
each source subtask, which calls ``create_reader`` once and then polls it.

A reader that can be replayed also implements ``CheckpointedSourceReader``: the task
asks it for its position between two batches (``snapshot_state``) and, on recovery,
hands the position back to a new reader before its first poll (``restore_state``).
Readers without these methods keep working; their sources are simply not replayable.

A reader that reads several splits at once implements ``SplitSourceReader`` as well:
``from_source`` then generates watermarks per split and the source's watermark is the
minimum over them (``weir.taskmanager.operators.split_watermarks``). A reader that reads its
splits one after the other needs none of it: one generator sees the same event time.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from weir.core.errors import WeirError


class SourceStateError(WeirError, ValueError):
    """A source position could not be taken or restored."""


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


@runtime_checkable
class SplitSourceReader(SourceReader, Protocol):
    """A reader that names its splits, for watermarks per split (Flink's
    ``ReaderOutput.createOutputForSplit`` / ``releaseOutputForSplit``).

    >>> class PartitionReader:
    ...     def split_ids(self): return [p.name for p in self.partitions if not p.done]
    ...     def current_split_id(self): return self.last_partition.name
    ...     def poll_batch(self, max_records): ...  # records of one partition per batch
    """

    def split_ids(self) -> list[str]:
        """The splits this reader holds and has not finished. A split counts in the
        source's watermark from when it is listed until it is no longer listed."""
        ...

    def current_split_id(self) -> str:
        """The split the records of the last ``poll_batch`` came from: every batch
        holds the records of one split."""
        ...


@runtime_checkable
class CheckpointedSourceReader(SourceReader, Protocol):
    """A reader whose position can be checkpointed (Flink's ``SourceReader.snapshotState``
    and ``addSplits`` on restore, reduced to one opaque position per reader)."""

    def snapshot_state(self, checkpoint_id: int) -> Any:
        """The position after the last record returned by ``poll_batch``: a small value
        that pickles (tuples, ints, strs, bytes). Called on the task thread between two
        polls, so it is exact; the reader keeps reading afterwards and must not share
        mutable parts of the value with itself."""
        ...

    def restore_state(self, state: Any) -> None:
        """Continue from ``state`` (a value ``snapshot_state`` returned, possibly in
        another process): the next ``poll_batch`` returns the record after the last one
        read before that snapshot. Called once, before the first ``poll_batch``."""
        ...


def create_reader(
    source: Source, context: SourceReaderContext, restored_state: Any = None
) -> SourceReader:
    """``source.create_reader(context)``, restored to ``restored_state`` when given.

    >>> reader = create_reader(source, ctx, restored_state=state_from_checkpoint)
    """
    reader = source.create_reader(context)
    if restored_state is None:
        return reader
    if not isinstance(reader, CheckpointedSourceReader):
        msg = (
            f"cannot restore a position into the reader of {source!r}: "
            f"{type(reader).__name__} has no snapshot_state/restore_state; the checkpoint "
            "was taken with a different source, or drop its state with "
            "--allowNonRestoredState"
        )
        raise SourceStateError(msg)
    reader.restore_state(restored_state)
    return reader
