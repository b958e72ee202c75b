"""``NumberSequenceSource``: the numbers ``start..end`` (inclusive), split over the subtasks."""

from __future__ import annotations

from weir.common.typeinfo import TypeInformation, Types
from weir.core.source import SourceReaderContext, SourceStateError

__all__ = ["NumberSequenceSource"]


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


class NumberSequenceReader:
    """Reads one split; each poll is one ``list(range(...))``.

    Its position is ``(next, stop)``: the next number it returns and the end of its
    split (exclusive), so a restored reader needs nothing from the source.
    """

    def __init__(self, numbers: range) -> None:
        self._next = numbers.start
        self._stop = numbers.stop

    def poll_batch(self, max_records: int) -> list[int] | None:
        if self._next >= self._stop:
            return None
        upper = min(self._next + max_records, self._stop)
        batch = list(range(self._next, upper))
        self._next = upper
        return batch

    def snapshot_state(self, checkpoint_id: int) -> tuple[int, int]:
        return (self._next, self._stop)

    def restore_state(self, state: tuple[int, int]) -> None:
        try:
            next_, stop = (int(v) for v in state)
        except (TypeError, ValueError) as exc:
            msg = (
                f"NumberSequenceSource: cannot restore from {state!r}; expected the "
                "(next, stop) pair its reader's snapshot_state returned"
            )
            raise SourceStateError(msg) from exc
        self._next, self._stop = next_, stop

    def close(self) -> None:
        self._next = self._stop


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

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self._start}, {self._end})"
