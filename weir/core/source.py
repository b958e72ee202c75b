"""The contract between a source (``weir.datastream.connectors``) and the task that reads it.

A ``Source`` is created on the client, pickled into the JobGraph, and unpickled in
each source subtask, which calls ``create_reader`` once and then polls it.

A reader that can be replayed keeps its position as a list of splits, as Flink's
``SourceReader.snapshotState`` does: it implements ``SplitCheckpointedSourceReader``.
Between two batches the task asks it for the state of every split it holds and has not
finished (``snapshot_splits``), each split state self-contained (a file and the offset
in it, a range of numbers and the next one); on recovery it hands a new reader, before
its first poll, the splits it is to read (``restore_splits``) in place of those the
reader would derive from its subtask index. At the parallelism of the checkpoint a
subtask gets back the splits it wrote. At another one, every new subtask is given the
split lists of all old subtasks, in the old subtasks' order, and takes its share of the
flattened list round-robin (``assign_splits``: new subtask ``i`` of ``p`` takes the
splits at positions ``i, i + p, i + 2p, ...``, so the counts differ by at most one).
The JobMaster only hands out handles, it never unpickles the splits; a subtask that
gets no split reads nothing. Finished splits are not listed, so they are never
read again; a subtask that had finished holds no state, and an operator all of whose
subtasks had finished is restored as finished at any parallelism.

A reader that implements only ``CheckpointedSourceReader`` keeps one opaque position
(``snapshot_state`` / ``restore_state``): it is replayed at the parallelism it had, and
a checkpoint of it cannot be restored at another one (the JobMaster refuses, naming the
operator). Readers without either keep working; their sources are simply not replayable.

A reader whose records carry their own event time (a Kafka record's timestamp) implements
``TimestampedSourceReader``: the timestamps of each batch go with it, and are the records'
event time unless the watermark strategy assigns its own.

A reader that can hand its records over as columns implements ``ColumnarSourceReader``:
when what follows the source in its task reads columns (a batch function, a batch sink,
a built-in aggregate, a forward or key-group edge), the task polls ``poll_columns`` in
place of ``poll_batch``; the records the two return, and the reader's state after them,
are the same. Operators that read records one by one get a ColumnBatch's records, built
once per batch.

A reader that reads several splits at once implements ``SplitSourceReader`` as well:
``from_source`` then generates watermarks per split and the source's watermark is the
minimum over them (``weir.taskmanager.operators.split_watermarks``). A reader that reads its
splits one after the other needs none of it: one generator sees the same event time.
"""

from __future__ import annotations

from collections.abc import Sequence
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
class ColumnarSourceReader(SourceReader, Protocol):
    """A reader that can return a batch as columns (see the module docstring).

    >>> class RangeReader:
    ...     def poll_columns(self, max_records):
    ...         return ColumnBatch({"f0": np.arange(self.next, self.next + max_records)}, spec)
    """

    def poll_columns(self, max_records: int) -> Sequence[Any] | None:
        """What ``poll_batch`` returns, as a ``weir.core.columnar.ColumnBatch`` whose
        records are those ``poll_batch`` would have returned (same values, same types),
        or as a list when the batch has no columnar form; ``[]`` and ``None`` as there.
        Called on the task thread only, in place of ``poll_batch`` (never both on one
        reader)."""
        ...


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
class TimestampedSourceReader(SourceReader, Protocol):
    """A reader whose records have timestamps of their own (Flink's
    ``ReaderOutput.collect(record, timestamp)``).

    >>> class LogReader:
    ...     def current_timestamps(self): return self.last_batch_timestamps
    """

    def current_timestamps(self) -> list[int | None] | None:
        """The timestamps (ms) of the records of the last ``poll_batch``, one per record
        (``None`` for a record without one), or ``None`` when none has one. Called on the
        task thread right after ``poll_batch``."""
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


@runtime_checkable
class SplitCheckpointedSourceReader(SourceReader, Protocol):
    """A reader whose position is the list of its splits' states (Flink's
    ``SourceReader.snapshotState`` and ``addSplits`` on restore), so that a checkpoint of
    it can be restored at another parallelism (see the module docstring).

    >>> class RangeReader:
    ...     def snapshot_splits(self, checkpoint_id): return [(self.next, self.stop)]
    ...     def restore_splits(self, splits): self.ranges = list(splits)
    """

    def snapshot_splits(self, checkpoint_id: int) -> list[Any]:
        """The state of every split this reader holds and has not finished, after the
        last record ``poll_batch`` returned: small values that pickle (tuples, ints,
        strs, bytes), each enough on its own for any reader of the same source, in any
        subtask and at any parallelism, to continue that split exactly where it is.
        Called on the task thread between two polls; must not share mutable parts with
        the reader, which keeps reading afterwards."""
        ...

    def restore_splits(self, splits: list[Any]) -> None:
        """Read exactly ``splits`` (states ``snapshot_splits`` returned, possibly of
        several old readers in other processes), each from where its state says, and
        nothing else: not the splits this reader would take from its subtask index. An
        empty list means there is nothing left to read. Called once, before the first
        ``poll_batch``."""
        ...


def assign_splits(split_lists: Sequence[Sequence[Any]], index: int, parallelism: int) -> list[Any]:
    """Subtask ``index`` of ``parallelism``'s share of the splits that old readers held:
    ``split_lists`` is each old subtask's list in the old subtasks' order; the flattened
    list is dealt round-robin, so every split goes to exactly one new subtask and the
    counts differ by at most one.

    >>> assign_splits([["a", "b", "c"], ["d"]], 1, 3)
    ['b']
    """
    if not 0 <= index < parallelism:
        msg = f"subtask index {index} is outside parallelism {parallelism}"
        raise ValueError(msg)
    flat = [split for splits in split_lists for split in splits]
    return flat[index::parallelism]


def create_reader(
    source: Source,
    context: SourceReaderContext,
    restored_state: Any = None,
    restored_splits: list[Any] | None = None,
) -> SourceReader:
    """``source.create_reader(context)``, restored to ``restored_splits`` (the splits
    this subtask is to read) or to the opaque position ``restored_state`` when given.

    >>> reader = create_reader(source, ctx, restored_splits=splits_from_checkpoint)
    """
    reader = source.create_reader(context)
    if restored_splits is not None:
        if not isinstance(reader, SplitCheckpointedSourceReader):
            msg = (
                f"cannot restore splits into the reader of {source!r}: "
                f"{type(reader).__name__} has no snapshot_splits/restore_splits; the "
                "checkpoint was taken with a different source, or drop its state with "
                "--allowNonRestoredState"
            )
            raise SourceStateError(msg)
        reader.restore_splits(restored_splits)
        return reader
    if restored_state is None:
        return reader
    # A split reader may still take a position written before it kept splits.
    if not callable(getattr(reader, "restore_state", None)):
        msg = (
            f"cannot restore a position into the reader of {source!r}: "
            f"{type(reader).__name__} has no snapshot_state/restore_state; the checkpoint "
            "was taken with a different source, or drop its state with "
            "--allowNonRestoredState"
        )
        raise SourceStateError(msg)
    reader.restore_state(restored_state)  # type: ignore[attr-defined]
    return reader
