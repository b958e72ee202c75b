"""The window operator's fast paths: aligned tumbling and sliding time windows with their
default trigger (the payload's ``fast_path``).

The windows and the trigger's timers are computed inline, and a window is named by its
start (an ``int``) in state and timers; a ``TimeWindow`` is built only for a window
function that needs one.

Event-time windows without allowed lateness register no timers at all: such a window
fires exactly when it is cleaned up, so the windows themselves are the pending timers.
Their contents are kept window by window (``AlignedWindowIndex``, in
``weir.taskmanager.operators.window_index``) rather than key by key. A checkpoint sees them
key by key, as every keyed state is stored (``snapshot_state`` fills the contents table
just before the backend captures it), and a restore turns them back. A built-in
aggregate's window filled from batches of columns is held as arrays instead of a dict
(``weir.taskmanager.operators.window_columns``); it reads out as the same dict, and a
checkpoint on the hashmap backend stores it as Arrow column blocks per key group
(``weir.taskmanager.operators.window_column_snapshots``), which a restore makes arrays
again, or dicts for an operator that adds record by record. On the rocksdb backend such a
built-in aggregate's windows are kept in RocksDB in columnar blocks instead
(``BlockWindowIndex``, ``weir.taskmanager.operators.window_blocks``), behind the same
calls.

Processing-time windows of such a built-in aggregate are kept in the same index (or
blocks): every record of a batch handled at time ``now`` is in the windows that hold
``now``, so a batch is added as if each record had the timestamp ``now``, one group-by
per window. Where the per-record path registers a processing-time timer per key and
window (Flink's ``ProcessingTimeTrigger``), the index keeps none: the timer service
wakes up at the end of the earliest window (``InternalTimerService.wake_at``), and the
windows it reached fire then, each key's result once, and are dropped, as Flink fires a
processing-time window and cleans it up at its ``max_timestamp``. The watermark fires
none of them, and those still open at the end of input are dropped, as in Flink. A
restored window gets a timer either way: the index wakes for its earliest window, and
windows restored key by key without timers get theirs (``time_restored_windows``); a
window that ended while the job was down fires once the timers run.

``AlignedWindowPaths`` is what the window operator calls for such windows, on the task
thread: it is constructed with what it uses of the operator (its key selector, keyed
state, timers, how contents accumulate, and where results and late records go), holds
the index when there is one, and reads nothing else of the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from weir.core.columnar import ColumnBatch
from weir.core.windowing import MAX_LONG_VALUE, TimeWindow
from weir.taskmanager.operators.base import Timestamps
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.operators.window_index import (
    AlignedWindowIndex,
    AlignedWindows,
    Columns,
    Late,
)
from weir.taskmanager.operators.window_results import WindowResults
from weir.taskmanager.operators.window_state import MISSING
from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable

if TYPE_CHECKING:
    from weir.taskmanager.operators.window_blocks import BlockWindowIndex


class AlignedWindowPaths:
    """The fast paths; see the module docstring. ``process`` takes the operator's input
    batches; the operator calls the rest from its watermark, timers and checkpoints."""

    def __init__(
        self,
        windows: AlignedWindows,
        *,
        key: Callable[[Any], Any],
        backend: KeyedStateBackend,
        contents: NamespacedTable,
        timers: InternalTimerService,
        allowed_lateness: int,
        add: Callable[[Any, Any], Any],
        aggregate: Any,
        columns: Columns | None,
        results: WindowResults,
        dropped_late: Callable[[list[Any], list[int | None]], None],
        missing_timestamp: Callable[[], Exception],
    ) -> None:
        """``key`` selects a record's key, which becomes ``backend``'s current key for the
        per-key ``contents`` table and ``timers``. ``add(contents_or_MISSING, record)``
        accumulates a window's contents; ``aggregate``: the AggregateFunction behind it,
        if any, called directly where that is faster; ``columns``: a built-in aggregate
        that adds batches of columns (None: none). Fired windows go to ``results``, late
        records to ``dropped_late``; ``missing_timestamp`` is the error for an event-time
        record without one.

        Event-time windows without lateness on a backend that keeps its state in memory
        are kept in an ``AlignedWindowIndex`` (restored from ``contents``); those of a
        built-in aggregate on the rocksdb backend in blocks (``BlockWindowIndex``); the
        others in ``contents``, with timers. Processing-time windows of a built-in
        aggregate are kept the same way (an index or blocks) with one processing-time
        timer per window, not per key; the others in ``contents``, with timers."""
        self._size = windows.size
        self._slide = windows.slide
        self._offset = windows.offset
        self._key = key
        self._backend = backend
        self._contents = contents
        self._timers = timers
        self._allowed_lateness = allowed_lateness
        self._add = add
        self._results = results
        self._dropped_late = dropped_late
        self._missing_timestamp = missing_timestamp
        self._index: AlignedWindowIndex | BlockWindowIndex | None = None
        # Processing-time windows have no lateness (Flink cleans them up at their end).
        indexed = (windows.event_time and allowed_lateness == 0) or (
            not windows.event_time and columns is not None
        )
        if indexed and backend.in_memory:
            self._index = AlignedWindowIndex(
                windows,
                contents,
                key=key,
                add=add,
                aggregate=aggregate,
                columns=columns,
                missing_timestamp=missing_timestamp,
            )
        elif indexed and columns is not None:
            self._index = _block_index(
                windows,
                backend,
                contents,
                key=key,
                aggregate=aggregate,
                columns=columns,
                missing_timestamp=missing_timestamp,
            )
        self._event_time = windows.event_time
        self.process: Callable[[list[Any], Timestamps], None]
        if windows.event_time:
            self.process = self._process_event_time
        elif self._index is not None:
            self.process = self._process_processing_time_indexed
            # The windows are their own timers: restored per-key timers of windows the
            # index took over go, and the earliest window's end is the one to wake at.
            timers.clear_processing_time_timers()
            timers.on_operator_processing_time(self._fire_processing_time)
            self._wake_for_earliest()
        else:
            self.process = self._process_processing_time

    def time_restored_windows(self) -> None:
        """Once the restored windows are in the contents table: those kept key by key
        that have no timer (a snapshot of windows kept without timers: an index's or
        RocksDB blocks', event time without lateness, restored after the job allowed
        lateness) get the timers ``_process_event_time`` gives a window, its end and its
        cleanup. Such a window has not fired (those windows fire as they go); one that
        has a timer keeps its own, so that a window already fired within its lateness is
        not fired again. A restore that brought timers came from windows kept with them:
        nothing is looked at (every restored window of a job is kept one way)."""
        if self._index is not None:
            return
        if not self._event_time:
            self._time_restored_processing_time_windows()
            return
        if self._timers.has_event_time_timers():
            return
        size, lateness = self._size, self._allowed_lateness
        backend, timers = self._backend, self._timers
        for key, start, _ in list(self._contents.entries()):
            if not isinstance(start, int):
                continue  # not an aligned window's start
            max_ts = start + size - 1
            cleanup = min(max_ts + lateness, MAX_LONG_VALUE)
            backend.current_key = key
            if timers.has_event_time_timer(start, max_ts) or timers.has_event_time_timer(
                start, cleanup
            ):
                continue
            timers.register_event_time_timer(start, max_ts)
            if lateness:
                timers.register_event_time_timer(start, cleanup)

    def _time_restored_processing_time_windows(self) -> None:
        """``time_restored_windows`` in processing time: each restored window kept key by
        key without timers (a snapshot of windows kept with one timer per window) gets
        the timer ``_process_processing_time`` gives it, at its end, which also cleans it
        up (ProcessingTimeTrigger's, at ``max_timestamp``). A window that ended while the
        job was down fires as soon as the timers run, as a timer in the past does."""
        if self._timers.has_processing_time_timers():
            return
        size = self._size
        backend, register = self._backend, self._timers.register_processing_time_timer
        for key, start, _ in list(self._contents.entries()):
            if not isinstance(start, int):
                continue  # not an aligned window's start
            backend.current_key = key
            register(start, start + size - 1)

    @property
    def indexed(self) -> bool:
        """The windows are kept in an ``AlignedWindowIndex``, not in the contents table."""
        return self._index is not None

    @property
    def columnar(self) -> bool:
        """Batches of columns are added as columns (a built-in aggregate on the index)."""
        return self._index is not None and self._index.columnar

    def advance_watermark(self, watermark: int) -> None:
        """Before the timers: fire and drop every indexed event-time window whose end
        ``watermark`` reached."""
        index = self._index
        if index is None or not self._event_time:
            return
        self._timers.current_watermark = watermark
        self._emit_fired(index.fire(watermark))

    def _fire_processing_time(self, now: int) -> None:
        """The processing-time timers fire: every indexed window whose end ``now``
        reached fires with all its keys, then is dropped (ProcessingTimeTrigger's FIRE,
        then the cleanup at the window's ``max_timestamp``)."""
        index = self._index
        assert index is not None
        self._emit_fired(index.fire(now))
        self._wake_for_earliest()

    def _wake_for_earliest(self) -> None:
        """The timers wake up once the earliest indexed window ended (processing time)."""
        assert self._index is not None
        start = self._index.earliest_start()
        if start is not None:
            self._timers.wake_at(start + self._size - 1)

    def _emit_fired(self, fired: Iterator[tuple[int, Any]]) -> None:
        """The results of fired windows ``(start, contents)``, at each window's end."""
        size = self._size
        results = self._results
        if not results.has_window_function:
            for start, contents in fired:
                if not isinstance(contents, dict):  # one pass over the window's arrays
                    column = contents.result_column()
                    if column is not None:
                        results.emit_column(column, start + size - 1)
                    else:
                        results.emit_results(contents.results(), start + size - 1)
                else:
                    results.emit_values(contents.values(), start + size - 1)
            return
        backend = self._backend
        for start, contents in fired:
            window = TimeWindow(start, start + size)
            max_ts = start + size - 1
            by_key = contents if isinstance(contents, dict) else contents.as_dict()
            for k, acc in by_key.items():
                backend.current_key = k
                results.emit(k, window, start, acc, max_ts)
                results.clear(window, start)

    def snapshot_state(self) -> None:
        """Just before the backend captures its state: the index into the contents table."""
        if self._index is not None:
            self._index.snapshot()

    def on_event_time(self, timestamp: int, key: Any, start: int) -> None:
        """An event-time timer of window ``start`` of ``key`` (not indexed windows)."""
        size = self._size
        max_ts = start + size - 1
        if timestamp == max_ts:  # EventTimeTrigger.on_event_time: FIRE
            acc = self._contents.get(key, start, MISSING)
            if acc is not MISSING:
                self._results.emit(key, TimeWindow(start, start + size), start, acc, timestamp)
        if timestamp == min(max_ts + self._allowed_lateness, MAX_LONG_VALUE):
            self._contents.remove(key, start)
            if self._results.has_window_function:
                self._results.clear(TimeWindow(start, start + size), start)

    def on_processing_time(self, timestamp: int, key: Any, start: int) -> None:
        """A processing-time timer of window ``start`` of ``key``."""
        size = self._size
        acc = self._contents.get(key, start, MISSING)
        if acc is not MISSING:  # ProcessingTimeTrigger.on_processing_time: FIRE
            self._results.emit(key, TimeWindow(start, start + size), start, acc, timestamp)
        if timestamp == start + size - 1:
            self._contents.remove(key, start)
            if self._results.has_window_function:
                self._results.clear(TimeWindow(start, start + size), start)

    def _process_event_time(self, batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is None:
            raise self._missing_timestamp()
        index = self._index
        if index is not None:
            late: Late | None = None
            if type(batch) is ColumnBatch:
                if index.columnar:
                    late = index.add_columns(batch, timestamps, self._timers.current_watermark)
                if late is None:
                    batch = batch.records()
            if late is None:
                late = index.add(batch, timestamps, self._timers.current_watermark)
            if late[0]:
                self._dropped_late(*late)
            self._results.flush()
            return
        if type(batch) is ColumnBatch:
            batch = batch.records()
        size, slide, offset = self._size, self._slide, self._offset
        tumbling = size == slide
        key, backend, contents, add = self._key, self._backend, self._contents, self._add
        lateness = self._allowed_lateness
        register = self._timers.register_event_time_timer
        wm = self._timers.current_watermark
        emit = self._results.emit
        late_records: list[Any] = []
        late_ts: list[int | None] = []
        for x, ts in zip(batch, timestamps, strict=True):
            if ts is None:
                raise self._missing_timestamp()
            last_start = ts - (ts - offset + slide) % slide
            starts = (last_start,) if tumbling else range(last_start, ts - size, -slide)
            k = key(x)
            backend.current_key = k
            skipped = True
            for start in starts:
                max_ts = start + size - 1
                cleanup = max_ts + lateness
                if cleanup <= wm:
                    continue  # the window is gone
                skipped = False
                acc = add(contents.get(k, start, MISSING), x)
                contents.put(k, start, acc)
                if max_ts > wm:
                    register(start, max_ts)  # EventTimeTrigger.on_element: CONTINUE
                    if lateness:
                        register(start, min(cleanup, MAX_LONG_VALUE))
                else:  # EventTimeTrigger.on_element: FIRE (a late firing)
                    emit(k, TimeWindow(start, start + size), start, acc, ts)
                    register(start, min(cleanup, MAX_LONG_VALUE))
            if skipped and ts + lateness <= wm:
                late_records.append(x)
                late_ts.append(ts)
        if late_records:
            self._dropped_late(late_records, late_ts)
        self._results.flush()

    def _process_processing_time_indexed(self, batch: list[Any], timestamps: Timestamps) -> None:
        """Processing-time windows of a built-in aggregate: every record of the batch is
        in the windows that hold ``now`` (ProcessingTimeTrigger: CONTINUE), added as
        columns where it can, one group-by per window, as records otherwise. A window
        holding ``now`` ends at or after it: none is late."""
        index = self._index
        assert index is not None
        # One clock reading per batch: its records arrive at the same instant.
        now = self._timers.current_processing_time()
        added = None
        if type(batch) is ColumnBatch:
            if index.columnar:
                import numpy as np  # noqa: PLC0415 (only batches of columns come here)

                at_now = np.full(len(batch), now, dtype=np.int64)
                added = index.add_columns(batch, at_now, now - 1)
            if added is None:
                batch = batch.records()
        if added is None:
            index.add(batch, [now] * len(batch), now - 1)
        self._wake_for_earliest()
        self._results.flush()

    def _process_processing_time(self, batch: list[Any], timestamps: Timestamps) -> None:
        size, slide, offset = self._size, self._slide, self._offset
        # One clock reading per batch: its records arrive at the same instant.
        now = self._timers.current_processing_time()
        last_start = now - (now - offset + slide) % slide
        starts = [last_start] if size == slide else list(range(last_start, now - size, -slide))
        key, backend, contents, add = self._key, self._backend, self._contents, self._add
        register = self._timers.register_processing_time_timer
        for x in batch:
            k = key(x)
            backend.current_key = k
            for start in starts:
                contents.put(k, start, add(contents.get(k, start, MISSING), x))
                register(start, start + size - 1)  # ProcessingTimeTrigger: CONTINUE
        self._results.flush()


def _block_index(
    windows: AlignedWindows,
    backend: KeyedStateBackend,
    contents: NamespacedTable,
    *,
    key: Callable[[Any], Any],
    aggregate: Any,
    columns: Columns,
    missing_timestamp: Callable[[], Exception],
) -> BlockWindowIndex | None:
    """The windows of a built-in aggregate in blocks, where the backend keeps them so
    (``weir.taskmanager.operators.window_blocks``); None elsewhere."""
    from weir.taskmanager.operators.window_blocks import (  # noqa: PLC0415 (numpy, rocksdb)
        BlockWindowIndex,
        block_index_supported,
    )

    if not block_index_supported(backend, columns):
        return None
    return BlockWindowIndex(
        windows,
        backend,  # type: ignore[arg-type]
        contents,
        key=key,
        aggregate=aggregate,
        columns=columns,
        missing_timestamp=missing_timestamp,
    )
