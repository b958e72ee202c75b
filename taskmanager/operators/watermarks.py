"""Stamping records with event time and generating watermarks.

``WatermarkEmitter`` runs one ``WatermarkStrategy`` for one parallel instance: it
extracts each record's timestamp with the strategy's ``TimestampAssigner`` (a batch
at a time), feeds the generator, and asks it for a watermark every
``pipeline.auto-watermark-interval`` through the task's processing-time service (so
on the task thread, between two batches). It forwards a watermark only when it is
higher than the last one, and idleness changes only when they change something.

Two operators use it: ``TimestampsAndWatermarksOperator``
(``DataStream.assign_timestamps_and_watermarks``), which swallows the watermarks
arriving from upstream except the final one, as Flink's does; and the source
operator of ``from_source(source, strategy, name)`` (``weir.taskmanager.operators.source``).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable
from typing import Any

from weir.core import config
from weir.core.columnar import ColumnBatch, batch_column
from weir.core.errors import UserCodeError
from weir.core.field_access import field_of
from weir.core.watermarks import Watermark
from weir.taskmanager.operators.base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    Collect,
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
    timestamp_list,
)
from weir.taskmanager.operators.timers import ProcessingTimeService

logger = logging.getLogger(__name__)


class TimestampAssignerError(UserCodeError, TypeError):
    """A TimestampAssigner returned something that is not an event time."""


class PeriodicEmission(abc.ABC):
    """Calls ``periodic_emit()`` every ``_interval_ms`` on the task thread, through the
    task's processing-time service, until ``_closed``."""

    _interval_ms: int
    _processing_timers: ProcessingTimeService | None
    _clock_ms: Callable[[], int]
    _closed: bool

    @abc.abstractmethod
    def periodic_emit(self) -> None:
        """Ask the generator(s) for a watermark."""

    def start(self) -> None:
        """Start periodic emission (no-op for an interval of 0 or no timer service)."""
        if self._interval_ms > 0 and self._processing_timers is not None:
            self._processing_timers.schedule(self._clock_ms() + self._interval_ms, self._tick)

    def _tick(self) -> None:
        if self._closed:
            return
        self.periodic_emit()
        assert self._processing_timers is not None
        self._processing_timers.schedule(self._clock_ms() + self._interval_ms, self._tick)


class WatermarkEmitter(PeriodicEmission):
    """Timestamps and watermarks of one stream instance (see the module docstring)."""

    def __init__(
        self,
        strategy: Any,
        output: Output,
        *,
        clock_ms: Callable[[], int],
        processing_timers: ProcessingTimeService | None,
        interval_ms: int,
    ) -> None:
        self._output = output
        self._generator = strategy.create_watermark_generator(clock_ms)
        assigner = getattr(strategy, "timestamp_assigner", None)
        self._extract = None if assigner is None else assigner.extract_timestamp
        # An assigner that returns one field reads that column of a ColumnBatch.
        self._field = None if assigner is None else field_of(assigner)
        self._processing_timers = processing_timers
        self._clock_ms = clock_ms
        self._interval_ms = interval_ms
        self._on_batch = self._generator.on_batch
        self._batches = bool(getattr(self._generator, "accepts_batches", False))
        # A batch being stamped record by record (custom generators), so that a
        # watermark emitted after record i goes out right after it.
        self._pending: tuple[list[Any], list[int], Collect] | None = None
        self._start = 0
        self._index = 0
        self.current_watermark = MIN_WATERMARK
        self.idle = False
        self._closed = False

    # --- WatermarkOutput --------------------------------------------------------------

    def emit_watermark(self, watermark: Watermark) -> None:
        ts = watermark.get_timestamp()
        if self.idle:
            self.mark_active()
        if ts > self.current_watermark:
            if self._pending is not None:
                self._flush_pending(self._index + 1)
            self.current_watermark = ts
            self._output.emit_watermark(ts)

    def mark_idle(self) -> None:
        if not self.idle:
            if self._pending is not None:  # the records before it go first
                self._flush_pending(self._index + 1)
            self.idle = True
            self._output.emit_watermark_status(True)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self._output.emit_watermark_status(False)

    # --- records -----------------------------------------------------------------------

    def periodic_emit(self) -> None:
        """Ask the generator for its watermark (every auto-watermark interval)."""
        self._generator.on_periodic_emit(self)

    def before_barrier(self) -> None:
        """A checkpoint barrier is about to be sent on: the generator may emit what it
        knows now (``WatermarkGenerator.on_checkpoint_barrier``)."""
        if not self._closed:
            self._generator.on_checkpoint_barrier(self)

    def stamp(self, batch: list[Any], timestamps: Timestamps) -> list[int]:
        """The event time of every record of ``batch``: from the assigner (given the
        record's previous timestamp, or Long.MIN_VALUE), else the record's own. A batch
        of columns whose assigner returns one integer field: that column, as an int64
        array."""
        extract = self._extract
        if extract is None:
            if timestamps is None:
                return [MIN_WATERMARK] * len(batch)
            return [MIN_WATERMARK if t is None else t for t in timestamps]
        if type(batch) is ColumnBatch:
            column = batch_column(batch, self._field)
            if column is not None and column.dtype.kind in "iu":
                # The column itself travels as the timestamps (``Timestamps``).
                if column.dtype.kind == "u" and len(column) and column.max() >= 1 << 63:
                    return column.tolist()  # type: ignore[no-any-return]
                return column if column.dtype == "int64" else column.astype("int64")
        if timestamps is None:
            stamped = [extract(x, MIN_WATERMARK) for x in batch]
        else:
            stamped = [
                extract(x, MIN_WATERMARK if t is None else t)
                for x, t in zip(batch, timestamps, strict=True)
            ]
        # Cheap checks, once per batch: a missing return is the usual mistake.
        if stamped and (type(stamped[0]) is not int or None in stamped):
            self._bad_timestamps(batch, stamped)
        return stamped

    def _bad_timestamps(self, batch: list[Any], stamped: list[Any]) -> None:
        for x, ts in zip(batch, stamped, strict=True):
            if not isinstance(ts, int) or isinstance(ts, bool):
                assigner = getattr(self._extract, "__self__", self._extract)
                msg = (
                    f"the TimestampAssigner {type(assigner).__name__} returned {ts!r} "
                    f"for the record {x!r}; extract_timestamp must return the event "
                    "time as an int (milliseconds since the epoch)"
                )
                raise TimestampAssignerError(msg)

    def process(self, batch: list[Any], timestamps: Timestamps, collect: Collect) -> None:
        stamped = self.stamp(batch, timestamps)
        if self.idle:
            self.mark_active()
        if self._batches:
            collect(batch, stamped)  # type: ignore[arg-type]
            self._on_batch(batch, stamped, self)
            return
        stamped = timestamp_list(stamped)  # type: ignore[assignment]  # read one by one
        self._pending = (batch, stamped, collect)
        self._start = 0
        on_event = self._generator.on_event
        try:
            for i, (x, t) in enumerate(zip(batch, stamped, strict=True)):
                self._index = i
                on_event(x, t, self)
            self._flush_pending(len(batch))
        finally:
            self._pending = None

    def _flush_pending(self, end: int) -> None:
        assert self._pending is not None
        batch, stamped, collect = self._pending
        start = self._start
        if end > start:
            if start == 0 and end == len(batch):
                collect(batch, stamped)  # type: ignore[arg-type]
            else:
                collect(batch[start:end], stamped[start:end])  # type: ignore[arg-type]
            self._start = end

    def end_of_input(self) -> None:
        """Bounded input ended: event time is over (Long.MAX_VALUE), as in Flink."""
        self._closed = True
        if self.idle:
            self.mark_active()
        if self.current_watermark < MAX_WATERMARK:
            self.current_watermark = MAX_WATERMARK
            self._output.emit_watermark(MAX_WATERMARK)

    def close(self) -> None:
        self._closed = True


def auto_watermark_interval(setup: OperatorSetup) -> int:
    if setup.batch_mode:
        return 0  # BATCH execution: only the final watermark, as Flink does
    return int(config.get(setup.config or {}, config.AUTO_WATERMARK_INTERVAL))


class TimestampsAndWatermarksOperator(StreamOperator):
    """``DataStream.assign_timestamps_and_watermarks(strategy)``.

    A batch of columns passes as it is where what this operator feeds reads columns
    (``passes_columns``: the chain makes it ``columnar`` then); the timestamps are its
    assigner's field's column, or the batch's records stamped one by one."""

    emitter: WatermarkEmitter | None = None
    passes_columns = True

    def open(self, output: Output) -> None:
        super().open(output)
        emitter = WatermarkEmitter(
            self.setup.payload["watermark_strategy"],
            output,
            clock_ms=self.setup.clock_ms,
            processing_timers=self.setup.processing_timers,
            interval_ms=auto_watermark_interval(self.setup),
        )
        self.emitter = emitter
        collect = output.collect
        process = emitter.process

        def process_batch(batch: list[Any], timestamps: Timestamps) -> None:
            process(batch, timestamps, collect)

        self.process = process_batch
        emitter.start()

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if self.emitter is not None:
            self.emitter.before_barrier()

    def advance_watermark(self, watermark: int) -> None:
        # Upstream watermarks are replaced by this operator's own; only the end of
        # event time passes (Flink's TimestampsAndWatermarksOperator).
        if watermark == MAX_WATERMARK and self.emitter is not None:
            self.emitter.end_of_input()

    def process_watermark_status(self, idle: bool) -> None:
        """Upstream idleness is not forwarded: this operator decides its own."""

    def close(self) -> None:
        if self.emitter is not None:
            self.emitter.close()
