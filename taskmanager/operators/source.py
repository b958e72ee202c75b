"""The source operator at the head of a source task's chain.

Two kinds of payload: ``{"source": Source}`` (a reader the task polls a batch at a
time) and ``{"source_function": SourceFunction}`` (``run(ctx)`` on the task thread,
with a context that batches ``collect``\\ ed records). The task's mailbox loop drives
both; this module holds the parts that belong to the operator.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Mapping
from typing import Any

from weir.core import config
from weir.core.source import (
    SourceReader,
    SplitSourceReader,
    TimestampedSourceReader,
    assign_splits,
    create_reader,
)
from weir.taskmanager.operators.base import (
    MAX_WATERMARK,
    Collect,
    OperatorSetup,
    Output,
    RestoredSourceState,
    StreamOperator,
    Timestamps,
    discard,
)
from weir.taskmanager.operators.functions import close_function, open_function
from weir.taskmanager.operators.split_watermarks import SplitWatermarks
from weir.taskmanager.operators.watermarks import WatermarkEmitter, auto_watermark_interval


class SourceCanceledError(Exception):
    """Raised inside ``SourceFunction.run`` (from ``ctx.collect``) to unwind on cancel."""


class _ReaderContext:
    def __init__(self, index: int, parallelism: int) -> None:
        self._index = index
        self._parallelism = parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._index

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism


# A record collected this long after the one before goes out at once: a slow source's
# records are not held back waiting for a full batch.
_SLOW_COLLECT_S = 0.005


def source_function_batching(job_config: Mapping[str, str], bundle_size: int) -> tuple[int, float]:
    """``(batch size, longest age of a batch in seconds)`` for a ``SourceFunctionContext``:
    the bundle size, and the bundle time or, when shorter, the auto-watermark interval,
    so that a periodic watermark can fall between records collected further apart (as
    in PyFlink, whose sources hand records on one by one)."""
    age_ms = config.get(job_config, config.PYTHON_BUNDLE_TIME)
    batch_mode = config.get(job_config, config.RUNTIME_MODE) == "BATCH"
    interval_ms = 0 if batch_mode else config.get(job_config, config.AUTO_WATERMARK_INTERVAL)
    if interval_ms > 0:
        age_ms = min(age_ms, interval_ms)
    return bundle_size, age_ms / 1000


class SourceFunctionContext:
    """``SourceFunction.SourceContext``: ``collect`` appends to a batch that is pushed
    through the chain every ``batch_size`` records, once it is ``max_age_s`` old, or at
    once when the source is slow (its records more than 5 ms apart), in which case
    ``flush`` sends it on. A record that comes after a pause or past the age limit goes
    in a batch after the records before it, with the mailbox served in between, so a
    periodic watermark that fell due meanwhile comes before it, as in PyFlink.
    ``collect_with_timestamp`` and ``emit_watermark`` give the records event time, as a
    legacy Flink source may.

    After a batch went out, the next ``collect`` first calls ``serve``, which runs the
    task's mailbox (checkpoints among it) and checks for cancellation: a checkpoint is
    thus taken between one record's ``collect`` and the next, never inside one. A source
    that advances its position after each ``collect`` (as Flink's legacy sources do
    inside the checkpoint lock) snapshots a position consistent with what it emitted.

    The source function runs on the task thread, so while it blocks nothing else of the
    task runs: a source that blocks right after a fast burst keeps the burst's last
    records until it collects again or returns. Sources that wait for data belong in
    the ``Source`` API (``from_source``), whose readers are polled."""

    def __init__(
        self,
        output: Collect,
        batch_size: int,
        flush: Callable[[], None],
        serve: Callable[[], None],
        watermarks: Output | None = None,
        *,
        max_age_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._output = output
        self._batch_size = batch_size
        self._flush = flush
        self._serve = serve
        self._serve_due = False
        self._watermarks = watermarks
        self._max_age_s = max_age_s
        self._clock = clock
        self._batch: list[Any] = []
        self._timestamps: list[int | None] | None = None
        self._last_collect = 0.0
        self._batch_started = 0.0

    def _before_collect(self) -> bool:
        """Cut the pending batch if the record about to be collected comes after a pause
        or past the batch's age limit, and serve the mailbox if a batch went out since the
        last time; returns whether the source is slow."""
        now = self._clock()
        slow = now - self._last_collect > _SLOW_COLLECT_S
        self._last_collect = now
        if self._batch:
            if slow or now - self._batch_started >= self._max_age_s:
                self.emit_pending()
                if slow:
                    self._flush()
                self._serve_due = True
                self._batch_started = now
        else:
            self._batch_started = now
        if self._serve_due:
            self._serve_due = False
            self._serve()
        return slow

    def _after_collect(self, slow: bool) -> None:
        if slow or len(self._batch) >= self._batch_size:
            self.emit_pending()
            if slow:
                # A slow source may block next: what it produced must not wait for it.
                self._flush()
            self._serve_due = True

    def collect(self, value: Any) -> None:
        slow = self._before_collect()
        self._batch.append(value)
        if self._timestamps is not None:
            self._timestamps.append(None)
        self._after_collect(slow)

    def collect_with_timestamp(self, value: Any, timestamp: int) -> None:
        slow = self._before_collect()
        if self._timestamps is None:
            self._timestamps = [None] * len(self._batch)
        self._timestamps.append(int(timestamp))
        self._batch.append(value)
        self._after_collect(slow)

    def emit_watermark(self, watermark: Any) -> None:
        """Flink's ``SourceContext.emitWatermark``: after the records collected so far."""
        self.emit_pending()
        if self._watermarks is not None:
            ts = watermark.get_timestamp() if hasattr(watermark, "get_timestamp") else watermark
            self._watermarks.emit_watermark(int(ts))

    def mark_as_temporarily_idle(self) -> None:
        self.emit_pending()
        if self._watermarks is not None:
            self._watermarks.emit_watermark_status(True)

    def emit_pending(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            timestamps, self._timestamps = self._timestamps, None
            self._output(batch, timestamps)

    def close(self) -> None:
        self.emit_pending()


def _stamps_records(strategy: Any) -> bool:
    """Whether ``from_source``'s strategy gives records event time or watermarks."""
    if strategy is None:
        return False
    return not (
        getattr(strategy, "kind", None) == "no_watermarks"
        and getattr(strategy, "timestamp_assigner", None) is None
        and getattr(strategy, "idle_timeout_ms", None) is None
    )


def _restored_position_or_splits(
    restored: RestoredSourceState | None, index: int, parallelism: int
) -> tuple[Any, list[Any] | None]:
    """``(opaque position, splits)`` this subtask's reader restores: the splits it wrote,
    or at another parallelism its share of every old subtask's; ``(None, None)`` for a
    fresh start."""
    if restored is None:
        return None, None
    if restored.split_lists or restored.rescaled:
        # Our own checkpoint files, checksummed before they get here.
        lists = [pickle.loads(blob) for blob in restored.split_lists]
        if restored.rescaled:
            return None, assign_splits(lists, index, parallelism)
        return None, [split for splits in lists for split in splits]
    if restored.position is None:
        return None, None
    return pickle.loads(restored.position), None


class SourceOperator(StreamOperator):
    """``emit(batch)`` pushes a batch the reader or source function produced into the
    chain, stamped by ``from_source``'s watermark strategy when it has one."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.source = setup.payload.get("source")
        self.source_function = setup.payload.get("source_function")
        self.reader: SourceReader | None = None
        self.emit: Collect = discard
        self.emitter: WatermarkEmitter | SplitWatermarks | None = None

    def open(self, output: Output) -> None:
        super().open(output)
        if self.source_function is not None:
            open_function(self.source_function, self.setup.runtime_context)
        else:
            index, parallelism = self.setup.subtask_index, self.setup.parallelism
            ctx = _ReaderContext(index, parallelism)
            position, splits = _restored_position_or_splits(
                self.setup.restored_source_state, index, parallelism
            )
            self.reader = create_reader(self.source, ctx, position, splits)  # type: ignore[arg-type]
        collect = output.collect
        # A reader whose records carry their own timestamps (Kafka's) hands its batches
        # over without them (``emit(batch, None)``); they are fetched from it here.
        own_timestamps = (
            self.reader.current_timestamps
            if isinstance(self.reader, TimestampedSourceReader)
            else None
        )
        if own_timestamps is None:
            self.emit = collect
        else:

            def collect_own(batch: list[Any], _: Timestamps) -> None:
                collect(batch, own_timestamps())

            self.emit = collect_own
        strategy = self.setup.payload.get("watermark_strategy")
        if _stamps_records(strategy):
            timing: dict[str, Any] = {
                "clock_ms": self.setup.clock_ms,
                "processing_timers": self.setup.processing_timers,
                "interval_ms": auto_watermark_interval(self.setup),
            }
            reader = self.reader
            emitter: WatermarkEmitter | SplitWatermarks
            if isinstance(reader, SplitSourceReader):
                emitter = SplitWatermarks(strategy, reader, output, **timing)
            else:
                emitter = WatermarkEmitter(strategy, output, **timing)
            self.emitter = emitter
            stamp = emitter.process

            def emit(batch: list[Any], timestamps: Timestamps) -> None:
                if own_timestamps is not None:
                    timestamps = own_timestamps()
                stamp(batch, timestamps, collect)

            self.emit = emit
            emitter.start()
        stamps_of = getattr(self.reader, "timestamps_of_last_batch", None)
        if callable(stamps_of):
            # A reader that gives its records back their timestamps (a cached stream's).
            stamped = self.emit

            def emit_with_timestamps(batch: list[Any], timestamps: Timestamps) -> None:
                stamped(batch, stamps_of() if timestamps is None else timestamps)

            self.emit = emit_with_timestamps

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if self.emitter is not None:
            self.emitter.before_barrier()

    def finish(self) -> None:
        """End of input: event time is over, so every timer and window downstream fires."""
        self.advance_to_end_of_event_time()

    def advance_to_end_of_event_time(self) -> None:
        """Emit MAX_WATERMARK (at the end of input, or for a stop with ``--drain``); later
        watermarks cannot pass it."""
        if self.emitter is not None:
            self.emitter.end_of_input()
        elif self.current_watermark < MAX_WATERMARK:
            self.current_watermark = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)

    def cancel_function(self) -> None:
        """Called from the cancelling thread, as Flink calls ``SourceFunction.cancel``."""
        fn = self.source_function
        if fn is not None and hasattr(fn, "cancel"):
            fn.cancel()

    def close(self) -> None:
        if self.emitter is not None:
            self.emitter.close()
        if self.reader is not None:
            reader, self.reader = self.reader, None
            reader.close()
        if self.source_function is not None:
            close_function(self.source_function)
