"""A source a test holds at chosen numbers until it lets the job go on.

A test that needs its job still running when something happens (a checkpoint completes,
another subtask commits, a TaskManager is killed) drives the job to that point instead
of pacing it and hoping: ``HeldNumbers`` reads the numbers of a ``NumberSequenceSource``
as fast as the task can, but stops before each number of ``holds`` until that number's
gate opens. Meanwhile the reader is idle, not blocked: the task serves its mailbox, so
checkpoints go on, and a cancel ends it. The job cannot pass the number before its gate
opened, however fast or slow the machine is.

A gate is a picklable callable, asked on the task thread at every poll while the reader
is held (every few ms); once it said yes that hold is gone, and a restored reader asks
again. ``FileExists`` is the usual one: the test (or the job) creates the file.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from weir.common import Types
from weir.datastream.connectors.number_seq import restore_ranges, split_range

Gate = Callable[[], bool]


class FileExists:
    """A gate that opens once ``path`` exists."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def __call__(self) -> bool:
        return os.path.exists(self.path)


class CheckpointCompleted:
    """A gate that opens once checkpoint ``n`` or a later one of a job completed (its
    ``_metadata`` is in ``checkpoints``, the job's checkpoint storage directory)."""

    def __init__(self, checkpoints: str | Path, n: int = 1) -> None:
        self.checkpoints = str(checkpoints)
        self.n = n

    def __call__(self) -> bool:
        return any(
            int(metadata.parent.name[4:]) >= self.n
            for metadata in Path(self.checkpoints).glob("*/chk-*/_metadata")
        )


class OutputCommitted:
    """A gate that opens once a committed (visible) file is in ``out``."""

    def __init__(self, out: str | Path) -> None:
        self.out = str(out)

    def __call__(self) -> bool:
        return any(p.is_file() and not p.name.startswith(".") for p in Path(self.out).rglob("*"))


class HeldNumberReader:
    """The numbers of ``numbers`` (split states ``[next, stop]``, as
    ``NumberSequenceReader`` keeps them), held before each number of ``holds`` until its
    gate opens."""

    def __init__(self, numbers: range, holds: Mapping[int, Gate]) -> None:
        self._splits = collections.deque([[numbers.start, numbers.stop]])
        self._holds = dict(sorted(holds.items()))

    def poll_batch(self, max_records: int) -> list[int] | None:
        splits = self._splits
        while splits:
            split = splits[0]
            next_, stop = split
            if next_ >= stop:
                splits.popleft()
                continue
            upper = min(next_ + max_records, stop)
            for hold, gate in list(self._holds.items()):
                if hold >= upper:
                    break
                if hold < next_ or gate():
                    del self._holds[hold]  # passed (restored beyond it) or opened
                    continue
                if hold == next_:
                    return []  # held: idle until the gate opens
                upper = hold
                break
            split[0] = upper
            return list(range(next_, upper))
        return None

    def snapshot_splits(self, checkpoint_id: int) -> list[tuple[int, int]]:
        return [(n, s) for n, s in self._splits if n < s]

    def restore_splits(self, splits: list[tuple[int, int]]) -> None:
        self._splits = restore_ranges("HeldNumbers", splits)

    def close(self) -> None:
        self._splits.clear()


class HeldNumbers:
    """``NumberSequenceSource(start, end)`` whose readers stop before each number of
    ``holds`` until its gate returns true."""

    def __init__(self, start: int, end: int, holds: Mapping[int, Gate]) -> None:
        self.start, self.end = start, end
        self.holds = dict(holds)

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context) -> HeldNumberReader:
        splits = split_range(self.start, self.end, context.get_number_of_parallel_subtasks())
        numbers = splits[context.get_index_of_this_subtask()]
        return HeldNumberReader(numbers, self.holds)

    def get_produced_type(self):
        return Types.LONG()
