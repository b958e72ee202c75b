"""Watermarks per source split (Flink's ``WatermarkOutputMultiplexer``).

A reader that reads several splits at once (partitions of a log, say) interleaves
their records, and each split's event time advances on its own. One watermark
generator over the interleaved stream would follow the split that runs ahead, and
the records of the others would arrive late. ``SplitWatermarks`` runs one
``WatermarkEmitter`` (timestamp assigner and generator) per split instead, and the
source's watermark is the minimum over the splits that are not idle. It only
advances; when every split is idle the source is idle. A split the reader no longer
holds (finished) stops counting, so the watermark may move on to the others'.

It serves readers that implement ``weir.core.source.SplitSourceReader``. The reader
names the split of each batch it returns and the splits it holds; a new split counts
from the moment the reader lists it (at Long.MIN_VALUE until its generator emits), so
a split that has not produced anything yet holds the watermark back, as in Flink.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.source import SplitSourceReader
from weir.taskmanager.operators.base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    Collect,
    Output,
    Timestamps,
)
from weir.taskmanager.operators.timers import ProcessingTimeService
from weir.taskmanager.operators.watermarks import PeriodicEmission, WatermarkEmitter


class _SplitState:
    """One split's emitter and the last watermark and idleness it reported."""

    __slots__ = ("emitter", "idle", "watermark")
    emitter: WatermarkEmitter  # set right after, as it reports into this state

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        self.idle = False


class SplitWatermarks(PeriodicEmission):
    """The watermarks of one source reader's splits, combined (see the module docstring).

    ``process(batch, timestamps, collect)`` stamps a batch of the reader's current split;
    the periodic emission of every split's generator runs on the task thread every
    ``interval_ms`` through ``processing_timers``."""

    def __init__(
        self,
        strategy: Any,
        reader: SplitSourceReader,
        output: Output,
        *,
        clock_ms: Callable[[], int],
        processing_timers: ProcessingTimeService | None,
        interval_ms: int,
    ) -> None:
        self._strategy = strategy
        self._reader = reader
        self._output = output
        self._clock_ms = clock_ms
        self._processing_timers = processing_timers
        self._interval_ms = interval_ms
        self._splits: dict[str, _SplitState] = {}
        self.current_watermark = MIN_WATERMARK
        self.idle = False
        self._closed = False

    @property
    def split_ids(self) -> list[str]:
        """The splits counted now, in the order they were first listed."""
        return list(self._splits)

    def periodic_emit(self) -> None:
        """Ask every split's generator for its watermark (every auto-watermark interval)."""
        self._sync_splits()
        for state in list(self._splits.values()):
            state.emitter.periodic_emit()

    def before_barrier(self) -> None:
        """A checkpoint barrier is about to be sent on (``WatermarkEmitter.before_barrier``)."""
        if self._closed:
            return
        self._sync_splits()
        for state in list(self._splits.values()):
            state.emitter.before_barrier()

    # --- splits --------------------------------------------------------------------------

    def _add(self, split_id: str) -> _SplitState:
        state = _SplitState()

        def emit_watermark(watermark: int) -> None:
            state.watermark = watermark
            self._combine()

        def emit_watermark_status(idle: bool) -> None:
            state.idle = idle
            self._combine()

        state.emitter = WatermarkEmitter(
            self._strategy,
            Output(emit_watermark=emit_watermark, emit_watermark_status=emit_watermark_status),
            clock_ms=self._clock_ms,
            processing_timers=None,
            interval_ms=0,
        )
        self._splits[split_id] = state
        return state

    def _sync_splits(self) -> None:
        """Count the splits the reader holds now: new ones join, finished ones leave."""
        held = list(self._reader.split_ids())
        held_set = set(held)
        gone = [s for s in self._splits if s not in held_set]
        for split_id in gone:
            state = self._splits.pop(split_id)
            state.emitter.close()
        for split_id in held:
            if split_id not in self._splits:
                self._add(split_id)
        if gone:
            self._combine()

    # --- records ---------------------------------------------------------------------------

    def process(self, batch: list[Any], timestamps: Timestamps, collect: Collect) -> None:
        split_id = self._reader.current_split_id()
        state = self._splits.get(split_id)
        if state is None:
            self._sync_splits()
            # A reader may name a split before it lists it; it counts from now on.
            state = self._splits.get(split_id) or self._add(split_id)
        state.emitter.process(batch, timestamps, collect)

    def _combine(self) -> None:
        """Forward the minimum over the active splits when it advances, and the source's
        idleness when it changes (every split idle)."""
        if not self._splits or self._closed:
            return
        active = [s.watermark for s in self._splits.values() if not s.idle]
        if not active:
            if not self.idle:
                self.idle = True
                self._output.emit_watermark_status(True)
            return
        if self.idle:
            self.idle = False
            self._output.emit_watermark_status(False)
        low = min(active)
        if low > self.current_watermark:
            self.current_watermark = low
            self._output.emit_watermark(low)

    def end_of_input(self) -> None:
        """Bounded input ended: event time is over (Long.MAX_VALUE), as in Flink."""
        self.close()
        if self.idle:
            self.idle = False
            self._output.emit_watermark_status(False)
        if self.current_watermark < MAX_WATERMARK:
            self.current_watermark = MAX_WATERMARK
            self._output.emit_watermark(MAX_WATERMARK)

    def close(self) -> None:
        self._closed = True
        for state in self._splits.values():
            state.emitter.close()
