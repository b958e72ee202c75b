"""Watermark generators: how a stream's event time advances (Flink's ``eventtime`` package).

A ``WatermarkGenerator`` sees every record's timestamp (``on_event``) and is asked
every ``pipeline.auto-watermark-interval`` for its watermark (``on_periodic_emit``); it
emits through a ``WatermarkOutput``, which forwards a watermark only when it is higher
than every one before (watermarks never go back). A punctuated generator emits from
``on_event`` instead.

The built-in generators also take a whole batch of timestamps at once
(``on_batch``), so stamping a batch costs one ``max()``, not one call per record. The
API (``weir.common``) re-exports these names; they live here because the TaskManager
runs them.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "MAX_WATERMARK",
    "MIN_WATERMARK",
    "BoundedOutOfOrdernessWatermarks",
    "NoWatermarksGenerator",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarksWithIdleness",
]

MIN_WATERMARK = -(1 << 63)
"""Long.MIN_VALUE: no watermark yet."""
MAX_WATERMARK = (1 << 63) - 1
"""Long.MAX_VALUE: the end of event time (sent when a bounded input ends)."""


class Watermark:
    """A point in event time: no record at or before it is expected any more."""

    __slots__ = ("_timestamp",)

    def __init__(self, timestamp: int) -> None:
        self._timestamp = int(timestamp)

    def get_timestamp(self) -> int:
        return self._timestamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Watermark) and other._timestamp == self._timestamp

    def __hash__(self) -> int:
        return hash(self._timestamp)

    def __repr__(self) -> str:
        return f"Watermark @ {self._timestamp}"


class WatermarkOutput(Protocol):
    def emit_watermark(self, watermark: Watermark) -> None: ...

    def mark_idle(self) -> None: ...

    def mark_active(self) -> None: ...


class WatermarkGenerator(abc.ABC):
    """Generates watermarks from the timestamps it sees (periodic or punctuated)."""

    accepts_batches = False
    """True when ``on_batch`` never emits, so a batch need not be cut after a record."""

    @abc.abstractmethod
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        """Called for every record; a punctuated generator emits here."""

    @abc.abstractmethod
    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        """Called every ``pipeline.auto-watermark-interval``; a periodic generator emits here."""

    def on_checkpoint_barrier(self, output: WatermarkOutput) -> None:  # noqa: B027 (optional)
        """Called right before the task sends a checkpoint barrier on. A generator whose
        watermark follows from the events it saw, not from when it is asked, emits it
        here too: the windows the records before the barrier closed then fire before
        the snapshot instead of being written into it. It is a watermark a periodic
        emission could have given at that moment, so results are the same. By default
        nothing (a generator of the user's is asked only every interval, as in Flink)."""

    def on_batch(self, batch: list[Any], timestamps: list[int], output: WatermarkOutput) -> None:
        """A batch of records: ``on_event`` for each, in order (overridden where a batch
        can be taken at once). A batch of columns gives ``timestamps`` as an int64 numpy
        array."""
        on_event = self.on_event
        for event, ts in zip(batch, timestamps, strict=True):
            on_event(event, ts, output)


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Periodic: the highest timestamp seen minus the bound minus 1 (Flink's
    ``BoundedOutOfOrdernessWatermarks``; a bound of 0 gives monotonous timestamps)."""

    __slots__ = ("_bound", "max_timestamp")
    accepts_batches = True

    def __init__(self, max_out_of_orderness_ms: int) -> None:
        if max_out_of_orderness_ms < 0:
            msg = (
                f"the maximum out-of-orderness must not be negative; got "
                f"{max_out_of_orderness_ms} ms"
            )
            raise ValueError(msg)
        self._bound = max_out_of_orderness_ms
        # So that the first watermark, before any record, is Long.MIN_VALUE.
        self.max_timestamp = MIN_WATERMARK + max_out_of_orderness_ms + 1

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.max_timestamp = max(self.max_timestamp, event_timestamp)

    def on_batch(self, batch: list[Any], timestamps: list[int], output: WatermarkOutput) -> None:
        if len(timestamps):
            # A batch of columns gives its timestamps as an int64 array.
            highest = (
                max(timestamps) if type(timestamps) is list else int(timestamps.max())  # type: ignore[attr-defined]
            )
            self.max_timestamp = max(self.max_timestamp, highest)

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(self.max_timestamp - self._bound - 1))

    on_checkpoint_barrier = on_periodic_emit


class NoWatermarksGenerator(WatermarkGenerator):
    """``WatermarkStrategy.no_watermarks()``: event time never advances (until the end
    of a bounded input)."""

    accepts_batches = True

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        pass

    def on_batch(self, batch: list[Any], timestamps: list[int], output: WatermarkOutput) -> None:
        pass

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


class WatermarksWithIdleness(WatermarkGenerator):
    """Marks the stream idle when no record arrived for ``idle_timeout_ms`` of processing
    time, so it stops holding back the watermark downstream; active again with the next
    record (Flink's ``WatermarksWithIdleness``)."""

    def __init__(
        self, generator: WatermarkGenerator, idle_timeout_ms: int, clock_ms: Callable[[], int]
    ) -> None:
        if idle_timeout_ms <= 0:
            msg = f"the idle timeout must be positive; got {idle_timeout_ms} ms"
            raise ValueError(msg)
        self._generator = generator
        self.accepts_batches = generator.accepts_batches
        self._timeout = idle_timeout_ms
        self._clock_ms = clock_ms
        self._counter = 0
        self._last_counter = 0
        self._idle_since: int | None = None
        self._idle = False

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self._activity(output)
        self._generator.on_event(event, event_timestamp, output)

    def on_batch(self, batch: list[Any], timestamps: list[int], output: WatermarkOutput) -> None:
        self._activity(output)
        self._generator.on_batch(batch, timestamps, output)

    def _activity(self, output: WatermarkOutput) -> None:
        self._counter += 1
        if self._idle:
            self._idle = False
            output.mark_active()

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        now = self._clock_ms()
        if self._counter != self._last_counter:
            self._last_counter = self._counter
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now
        if self._idle_since is not None and now - self._idle_since >= self._timeout:
            if not self._idle:
                self._idle = True
                output.mark_idle()
            return
        self._generator.on_periodic_emit(output)

    def on_checkpoint_barrier(self, output: WatermarkOutput) -> None:
        # Idleness is decided every interval only; an idle stream stays idle.
        if not self._idle:
            self._generator.on_checkpoint_barrier(output)
