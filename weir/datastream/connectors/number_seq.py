"""``NumberSequenceSource``: the numbers ``start..end`` (inclusive), split over the subtasks."""

from __future__ import annotations

import collections
from typing import Any

from weir.common.typeinfo import TypeInformation, Types
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.source import SourceReaderContext, SourceStateError
from weir.datastream._column_specs import column_spec

__all__ = ["NumberSequenceSource"]

# How a column of longs makes records, and the range of a long.
_LONGS = column_spec(Types.LONG()) or ColumnSpec()
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def split_range(start: int, end: int, num_splits: int) -> list[range]:
    """``[start, end]`` in ``num_splits`` contiguous ranges whose sizes differ by at most one
    (the first ones get the extra numbers), as Flink's NumberSequenceSource splits it."""
    total = max(0, end - start + 1)
    base, remainder = divmod(total, num_splits)
    ranges = []
    low = start
    for i in range(num_splits):
        size = base + (1 if i < remainder else 0)
        ranges.append(range(low, low + size))
        low += size
    return ranges


def restore_ranges(source: str, splits: list[Any]) -> collections.deque[list[int]]:
    """``[next, stop]`` per split state ``(next, stop)`` (a range of numbers or indices
    and the next one to emit), for ``restore_splits``."""
    try:
        return collections.deque([int(n), int(s)] for n, s in splits)
    except (TypeError, ValueError) as exc:
        msg = (
            f"{source}: cannot restore splits {splits!r}; expected the (next, stop) pairs "
            "its reader's snapshot_splits returned"
        )
        raise SourceStateError(msg) from exc


class NumberSequenceReader:
    """Reads its splits one after the other; each poll is one ``list(range(...))``, or
    one ``np.arange`` for a consumer of columns (``poll_columns``).

    A split is a range of numbers; its state is ``(next, stop)``: the next number it
    returns and the end of the range (exclusive), so a restored reader needs nothing
    from the source, in whichever subtask and at whichever parallelism it runs.
    """

    def __init__(self, numbers: range) -> None:
        # [next, stop] per split, the one being read first
        self._splits = collections.deque([[numbers.start, numbers.stop]])

    def _next_range(self, max_records: int) -> range | None:
        """The next up to ``max_records`` numbers of the split being read (taken), or None
        once every split is read."""
        splits = self._splits
        while splits:
            split = splits[0]
            next_, stop = split
            if next_ >= stop:
                splits.popleft()
                continue
            upper = min(next_ + max_records, stop)
            split[0] = upper
            return range(next_, upper)
        return None

    def poll_batch(self, max_records: int) -> list[int] | None:
        numbers = self._next_range(max_records)
        return None if numbers is None else list(numbers)

    def poll_columns(self, max_records: int) -> ColumnBatch | list[int] | None:
        """The numbers ``poll_batch`` returns, as one int64 column (``np.arange``; they
        are Python ints again as records); numbers beyond a long's range as records."""
        numbers = self._next_range(max_records)
        if numbers is None:
            return None
        if numbers.start < _LONG_MIN or numbers.stop - 1 > _LONG_MAX:
            return list(numbers)
        import numpy as np  # noqa: PLC0415 (only a columnar consumer needs numpy)

        return ColumnBatch({"f0": np.arange(numbers.start, numbers.stop, dtype=np.int64)}, _LONGS)

    def snapshot_splits(self, checkpoint_id: int) -> list[tuple[int, int]]:
        return [(n, s) for n, s in self._splits if n < s]

    def restore_splits(self, splits: list[tuple[int, int]]) -> None:
        self._splits = restore_ranges("NumberSequenceSource", splits)

    def restore_state(self, state: tuple[int, int]) -> None:
        """A position written before the reader kept splits: its one split."""
        self.restore_splits([state])

    def close(self) -> None:
        self._splits.clear()


class NumberSequenceSource:
    """A parallel, bounded source of the longs ``start`` to ``end`` inclusive::

    env.from_source(NumberSequenceSource(1, 1000), WatermarkStrategy.no_watermarks(), "seq")
    """

    def __init__(self, start: int, end: int) -> None:
        if end < start:
            msg = f"NumberSequenceSource: end ({end}) must not be smaller than start ({start})"
            raise ValueError(msg)
        self._start = int(start)
        self._end = int(end)

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context: SourceReaderContext) -> NumberSequenceReader:
        splits = split_range(self._start, self._end, context.get_number_of_parallel_subtasks())
        return NumberSequenceReader(splits[context.get_index_of_this_subtask()])

    def get_produced_type(self) -> TypeInformation:
        return Types.LONG()

    def estimated_size_bytes(self) -> int:
        """The volume the source reads, for BATCH mode's parallelism: eight bytes a number,
        as Java writes a long."""
        return 8 * (self._end - self._start + 1)

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self._start}, {self._end})"
