"""``DataGeneratorSource``: records made from their index, optionally rate-limited.

As Flink's ``DataGeneratorSource(generatorFunction, count, rateLimiterStrategy, type)``:
the indices ``0..count-1`` are split over the subtasks in contiguous ranges, each subtask
maps its indices in order through the generator function, and a ``RateLimiterStrategy``
caps the rate (``per_second`` is the rate of the whole source, divided evenly over the
subtasks). Each range is a split whose state (the next index and the end) is
checkpointed, so a deterministic generator function replays exactly the same records
after recovery, also at another parallelism (the ranges are then dealt out again).
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import TypeInformation
from weir.core.source import SourceReaderContext
from weir.datastream.connectors.number_seq import restore_ranges, split_range

__all__ = ["DataGeneratorSource", "RateLimiter", "RateLimiterStrategy"]

# Tokens saved up while the reader was not polled are capped at one second's worth, as
# Guava's SmoothBursty limiter (behind Flink's perSecond strategy) caps them.
_MAX_BURST_S = 1.0


class RateLimiter:
    """How many records a subtask may emit now. Never blocks: the reader returns ``[]``
    while ``acquire`` grants nothing, and the task waits for its mailbox meanwhile."""

    def acquire(self, wanted: int) -> int:
        """Up to ``wanted`` permits, taken now."""
        return wanted

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """A checkpoint completed (``per_checkpoint`` limiters open their gate again)."""


class _PerSecondRateLimiter(RateLimiter):
    """A token bucket: ``rate`` permits a second, at most ``_MAX_BURST_S`` of them saved."""

    def __init__(self, rate: float, clock: Callable[[], float]) -> None:
        self._rate = rate
        self._clock = clock
        self._capacity = max(1.0, rate * _MAX_BURST_S)
        self._tokens = 0.0
        self._last = clock()

    def acquire(self, wanted: int) -> int:
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now
        granted = min(wanted, int(self._tokens))
        self._tokens -= granted
        return granted


class _PerCheckpointRateLimiter(RateLimiter):
    """``records`` permits between two completed checkpoints."""

    def __init__(self, records: int) -> None:
        self._records = records
        self._left = records

    def acquire(self, wanted: int) -> int:
        granted = min(wanted, self._left)
        self._left -= granted
        return granted

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._left = self._records


class RateLimiterStrategy:
    """Creates each subtask's RateLimiter from the source's parallelism (Flink's
    ``RateLimiterStrategy``)::

        DataGeneratorSource(lambda i: f"Number: {i}", 10**9, RateLimiterStrategy.per_second(100))
    """

    def __init__(self, factory: Callable[[int, Callable[[], float]], RateLimiter]) -> None:
        self._factory = factory

    def create_rate_limiter(
        self, parallelism: int, clock: Callable[[], float] = time.monotonic
    ) -> RateLimiter:
        return self._factory(parallelism, clock)

    @staticmethod
    def per_second(records_per_second: float) -> RateLimiterStrategy:
        """At most ``records_per_second`` records a second over all subtasks together."""
        if records_per_second <= 0:
            msg = f"per_second: the rate must be positive; got {records_per_second!r}"
            raise ValueError(msg)
        return RateLimiterStrategy(_PerSecond(float(records_per_second)))

    @staticmethod
    def per_checkpoint(records_per_checkpoint: int) -> RateLimiterStrategy:
        """At most ``records_per_checkpoint`` records between two completed checkpoints,
        over all subtasks together."""
        if records_per_checkpoint <= 0:
            msg = f"per_checkpoint: the count must be positive; got {records_per_checkpoint!r}"
            raise ValueError(msg)
        return RateLimiterStrategy(_PerCheckpoint(int(records_per_checkpoint)))

    @staticmethod
    def no_op() -> RateLimiterStrategy:
        """No limit."""
        return RateLimiterStrategy(_NoOp())


# Module-level factories, so a strategy pickles into the JobGraph.
class _PerSecond:
    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, parallelism: int, clock: Callable[[], float]) -> RateLimiter:
        return _PerSecondRateLimiter(self.rate / parallelism, clock)


class _PerCheckpoint:
    def __init__(self, records: int) -> None:
        self.records = records

    def __call__(self, parallelism: int, clock: Callable[[], float]) -> RateLimiter:
        return _PerCheckpointRateLimiter(max(1, self.records // parallelism))


class _NoOp:
    def __call__(self, parallelism: int, clock: Callable[[], float]) -> RateLimiter:
        return RateLimiter()


class DataGeneratorReader:
    """Maps the indices of its splits through the generator function, in order, one
    split after the other. A split is a range of indices; its state is ``(next,
    stop)``, as a ``NumberSequenceSource`` split's, so it rescales."""

    def __init__(
        self, generate: Callable[[int], Any], indices: range, rate_limiter: RateLimiter
    ) -> None:
        self._generate = generate
        # [next, stop] per split, the one being read first
        self._splits = collections.deque([[indices.start, indices.stop]])
        self._rate_limiter = rate_limiter

    def poll_batch(self, max_records: int) -> list[Any] | None:
        splits = self._splits
        while splits and splits[0][0] >= splits[0][1]:
            splits.popleft()
        if not splits:
            return None
        split = splits[0]
        next_, stop = split
        granted = self._rate_limiter.acquire(min(max_records, stop - next_))
        if granted <= 0:
            return []
        generate = self._generate
        batch = [generate(i) for i in range(next_, next_ + granted)]
        split[0] = next_ + granted
        return batch

    def snapshot_splits(self, checkpoint_id: int | None = None) -> list[tuple[int, int]]:
        """``(next index to generate, end of the range)`` per split not finished."""
        return [(n, s) for n, s in self._splits if n < s]

    def restore_splits(self, splits: list[tuple[int, int]]) -> None:
        self._splits = restore_ranges("DataGeneratorSource", splits)

    def restore_state(self, state: bytes) -> None:
        """A position written before the reader kept splits (JSON of ``next`` and
        ``stop``): its one split."""
        position = json.loads(state)
        self.restore_splits([(position["next"], position["stop"])])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._rate_limiter.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        self._splits.clear()


class DataGeneratorSource:
    """A parallel, bounded source of ``generator_function(index)`` for the indices
    ``0..count-1`` (Flink's DataGeneratorSource)::

        source = DataGeneratorSource(lambda i: f"Number: {i}", 1000,
                                     RateLimiterStrategy.per_second(100), Types.STRING())
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Generator Source")

    ``generator_function`` is a callable or an object with a ``map(index)`` method (Flink's
    GeneratorFunction). Use a large ``count`` to simulate an unbounded stream.
    """

    def __init__(
        self,
        generator_function: Any,
        count: int,
        rate_limiter_strategy: RateLimiterStrategy | None = None,
        type_info: TypeInformation | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        mapper = getattr(generator_function, "map", None)
        if not callable(mapper) and not callable(generator_function):
            msg = (
                "DataGeneratorSource: generator_function must be a callable or have a "
                f"map(index) method; got {type(generator_function)!r}"
            )
            raise TypeError(msg)
        if count < 0:
            msg = f"DataGeneratorSource: count must not be negative; got {count}"
            raise ValueError(msg)
        self._generator_function = generator_function
        self._count = int(count)
        self._rate_limiter_strategy = rate_limiter_strategy or RateLimiterStrategy.no_op()
        self._type_info = type_info
        self._clock = clock

    def is_bounded(self) -> bool:
        return True  # as Flink's: a count of records, however large

    def create_reader(self, context: SourceReaderContext) -> DataGeneratorReader:
        parallelism = context.get_number_of_parallel_subtasks()
        indices = split_range(0, self._count - 1, parallelism)[context.get_index_of_this_subtask()]
        limiter = self._rate_limiter_strategy.create_rate_limiter(
            parallelism, self._clock or time.monotonic
        )
        mapper = getattr(self._generator_function, "map", None)
        generate = mapper if callable(mapper) else self._generator_function
        return DataGeneratorReader(generate, indices, limiter)

    def get_produced_type(self) -> TypeInformation | None:
        return self._type_info

    def __repr__(self) -> str:
        return f"DataGeneratorSource(count={self._count})"
