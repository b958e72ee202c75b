"""The window operator's fast paths: aligned tumbling and sliding time windows with their
default trigger (the payload's ``fast_path``).

The windows and the trigger's timers are computed inline, and a window is named by its
start (an ``int``) in state and timers; a ``TimeWindow`` is built only for a window
function that needs one.

Event-time windows without allowed lateness register no timers at all: such a window
fires exactly when it is cleaned up, so the windows themselves are the pending timers.
Their contents are kept window by window (``AlignedWindowIndex``: ``{start: {key:
contents}}``, a heap of the starts) rather than key by key: a record touches one dict per
window, and a window that fires is one dict popped and read out. A checkpoint sees them
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

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from weir.core.columnar import ColumnBatch, batch_column, key_column
from weir.core.windowing import MAX_LONG_VALUE, TimeWindow
from weir.taskmanager.operators.base import Timestamps
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.operators.window_results import WindowResults
from weir.taskmanager.operators.window_state import MISSING
from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable

if TYPE_CHECKING:
    from weir.taskmanager.operators.window_blocks import BlockWindowIndex
    from weir.taskmanager.operators.window_columns import ColumnWindow

Late = tuple[list[Any], list[int | None]]
"""Records that fell only into windows already gone, and their timestamps."""

Columns = tuple[str, int | str | None, int | str]
"""A built-in aggregate over columns: ``(kind, value field, key field)``."""

Contents: TypeAlias = "dict[Any, Any] | ColumnWindow"
"""One window's contents for all its keys: ``{key: contents}``, or a built-in's
accumulators as columns (only batches of columns make those, so numpy is imported
where they are made)."""


@dataclass(frozen=True, slots=True)
class AlignedWindows:
    """Aligned windows of ``size`` ms every ``slide`` ms from ``offset`` (tumbling when
    ``size == slide``), in event time or processing time."""

    size: int
    slide: int
    offset: int
    event_time: bool

    @classmethod
    def of(cls, fast_path: dict[str, Any]) -> AlignedWindows:
        """From the payload's ``fast_path``."""
        return cls(
            fast_path["size"], fast_path["slide"], fast_path["offset"], fast_path["event_time"]
        )


class AlignedWindowIndex:
    """The contents of aligned event-time windows without allowed lateness (or of a
    built-in aggregate's processing-time windows), window by window (see the module
    docstring); no I/O, no timers, no output."""

    def __init__(
        self,
        windows: AlignedWindows,
        table: NamespacedTable,
        *,
        key: Callable[[Any], Any],
        add: Callable[[Any, Any], Any],
        aggregate: Any,
        columns: Columns | None,
        missing_timestamp: Callable[[], Exception],
    ) -> None:
        """``table``: the operator's contents table, key by key, as a checkpoint stores
        it: the restored contents are taken out of it here, and ``snapshot`` puts them
        back. ``add(contents_or_MISSING, record)`` accumulates; ``aggregate``, an
        AggregateFunction whose ``add`` is called directly instead (None: none).
        ``columns``: batches of columns are added without records (None: as records).
        ``missing_timestamp``: the error for a record without a timestamp."""
        self._size = windows.size
        self._slide = windows.slide
        self._offset = windows.offset
        self._table = table
        self._key = key
        self._add = add
        self._aggregate = aggregate
        self._columns = columns
        self._missing_timestamp = missing_timestamp
        self._windows: dict[int, Contents] = {}
        restored: dict[int, dict[Any, Any]] = {}
        for k, start, acc in table.entries():
            contents = restored.get(start)
            if contents is None:
                contents = restored[start] = {}
            contents[k] = acc
        self._windows.update(restored)
        table.clear_all()
        blocks = table.take_columns()
        if blocks:  # windows a snapshot held as columns: as columns again, or as dicts
            self._restore_blocks(blocks)
        # The next snapshot's column blocks are in the table until the windows change.
        self._columns_put = False
        self._starts = list(self._windows)
        heapq.heapify(self._starts)
        # The keys of the last window fired as columns: what a new window's arrays span.
        self._span: tuple[int, int, int] | None = None

    def _restore_blocks(self, blocks: list[Any]) -> None:
        from weir.taskmanager.operators.window_column_snapshots import (  # noqa: PLC0415
            windows_of_blocks,
        )

        kind = None if self._columns is None else self._columns[0]
        for start, contents in windows_of_blocks(blocks, kind).items():
            known = self._windows.get(start)
            if known is not None:  # in both forms (a rescale of two subtasks): one dict
                assert isinstance(known, dict)  # restored dicts only, so far
                known.update(contents if isinstance(contents, dict) else contents.as_dict())
            else:
                self._windows[start] = contents

    @property
    def columnar(self) -> bool:
        """Batches of columns are added as columns."""
        return self._columns is not None

    def add(self, batch: list[Any], timestamps: list[int | None], watermark: int) -> Late:
        """Add each record to its windows; returns the late ones. A window is late once
        ``watermark`` reached its end, and none fires on an element (EventTimeTrigger
        only fires on elements of windows already behind the watermark, which are late
        here)."""
        size, slide, offset = self._size, self._slide, self._offset
        tumbling = size == slide
        key, add = self._key, self._add
        # An AggregateFunction's add is called directly, without the generic wrapper.
        aggregate = self._aggregate
        create = aggregate.create_accumulator if aggregate is not None else None
        agg_add = aggregate.add if aggregate is not None else None
        starts_heap = self._starts
        for start, contents in self._windows.items():
            if not isinstance(contents, dict):  # records after columns: a dict again
                self._windows[start] = contents.as_dict()
        windows = cast("dict[int, dict[Any, Any]]", self._windows)  # dicts, every one
        if not self._table.is_empty():
            self._table.clear_all()  # what the last checkpoint saw; the windows hold it all
        if self._columns_put:
            self._withdraw_columns()
        wm = watermark
        late: list[Any] = []
        late_ts: list[int | None] = []
        for x, ts in zip(batch, timestamps, strict=True):
            if ts is None:
                raise self._missing_timestamp()
            last_start = ts - (ts - offset + slide) % slide
            k = key(x)
            if tumbling:  # the loop below, unrolled: one window (10-25 % faster here)
                if last_start + size - 1 <= wm:
                    late.append(x)
                    late_ts.append(ts)
                    continue
                window = windows.get(last_start)
                if window is None:
                    window = windows[last_start] = {}
                    heapq.heappush(starts_heap, last_start)
                if agg_add is not None:
                    acc = window.get(k, MISSING)
                    window[k] = agg_add(x, create() if acc is MISSING else acc)  # type: ignore[misc]
                else:
                    window[k] = add(window.get(k, MISSING), x)
                continue
            skipped = True
            for start in range(last_start, ts - size, -slide):
                if start + size - 1 <= wm:
                    continue
                skipped = False
                window = windows.get(start)
                if window is None:
                    window = windows[start] = {}
                    heapq.heappush(starts_heap, start)
                if agg_add is not None:
                    acc = window.get(k, MISSING)
                    window[k] = agg_add(x, create() if acc is MISSING else acc)  # type: ignore[misc]
                else:
                    window[k] = add(window.get(k, MISSING), x)
            if skipped and ts <= wm:
                late.append(x)
                late_ts.append(ts)
        return late, late_ts

    def add_columns(
        self, batch: ColumnBatch, timestamps: Timestamps, watermark: int
    ) -> Late | None:
        """A built-in aggregate (``weir.datastream.aggregate_functions``) over a batch of
        columns, keyed by one field: the windows of every record computed over the batch
        at once, then each window's keys and values added to its columns
        (``ColumnWindow``), with no Python call per record. The accumulators are exactly
        those the function's ``add`` builds, record after record. Returns the late
        records; None when the batch lacks the columns (it then goes as records)."""
        from weir.taskmanager.operators.window_columns import (  # noqa: PLC0415 (numpy)
            add_to_window,
            place_in_windows,
            timestamp_array,
        )

        assert self._columns is not None
        kind, value_field, key_field = self._columns
        keys = key_column(batch, key_field)
        values = None
        if kind != "count":
            values = (
                next(iter(batch.columns.values()))
                if value_field is None and batch.spec.is_scalar
                else batch_column(batch, value_field)
            )
            if values is None:
                return None
        if keys is None:
            return None
        stamps = timestamp_array(timestamps)
        if stamps is None:
            raise self._missing_timestamp()
        if not self._table.is_empty():
            self._table.clear_all()  # what the last checkpoint saw; the windows hold it all
        if self._columns_put:
            self._withdraw_columns()
        placed = place_in_windows(stamps, self._size, self._slide, self._offset, watermark)
        windows = self._windows
        # The batch's key range, looked for once rather than once for each window.
        bounds = (
            (int(keys.min()), int(keys.max())) if keys.dtype.kind in "iu" and len(keys) else None
        )
        for start, rows in placed.windows():
            contents = windows.get(start)
            if contents is None:
                heapq.heappush(self._starts, start)
            window_values = None if values is None else values[rows]
            windows[start] = add_to_window(
                contents, kind, keys[rows], window_values, span=self._span, bounds=bounds
            )
        late = placed.late_rows()
        if not late:
            return [], []
        records = batch.records()
        return [records[i] for i in late], [int(stamps[i]) for i in late]

    def earliest_start(self) -> int | None:
        """The start of the earliest window held (None: none)."""
        return self._starts[0] if self._starts else None

    def fire(self, watermark: int) -> Iterator[tuple[int, Contents]]:
        """Pop every window whose end ``watermark`` reached, earliest first: its start and
        its contents by key (a dict, its keys in the order they came, or a
        ``ColumnWindow``, its keys ascending)."""
        starts_heap, windows = self._starts, self._windows
        size = self._size
        while starts_heap and starts_heap[0] + size - 1 <= watermark:
            start = heapq.heappop(starts_heap)
            contents = windows.pop(start)
            if self._columns is not None and not isinstance(contents, dict):
                self._span = contents.key_span() or self._span
            yield start, contents

    def snapshot(self) -> None:
        """Fill the contents table: windows held as dicts key by key (``{key: {start:
        contents}}``), windows held as columns as column blocks where the backend takes
        them (``weir.taskmanager.operators.window_column_snapshots``), else key by key
        too, the accumulators as the built-in's add makes them."""
        by_key = self._table
        by_key.clear_all()
        columns: dict[int, ColumnWindow] = {}
        for start, contents in self._windows.items():
            if isinstance(contents, dict):
                by_key.put_namespace(start, contents)
            else:
                columns[start] = contents
        blocks: list[Any] = []
        if columns:
            from weir.taskmanager.operators.window_column_snapshots import (  # noqa: PLC0415
                lend_windows,
            )

            blocks = [lend_windows(columns)]
        if by_key.put_columns(blocks):
            self._columns_put = bool(blocks)
            return
        for lent in blocks:
            lent.release()  # read key by key here instead
        for start, window in columns.items():
            by_key.put_namespace(start, window.as_dict())

    def _withdraw_columns(self) -> None:
        """The windows change: the blocks of the last snapshot go (as its entries do)."""
        self._table.put_columns([])
        self._columns_put = False


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
