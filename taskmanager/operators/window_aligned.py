"""The window operator's fast paths: aligned tumbling and sliding time windows with their
default trigger (the payload's ``fast_path``).

The windows and the trigger's timers are computed inline, and a window is named by its
start (an ``int``) in state and timers; a ``TimeWindow`` is built only for a window
function that needs one.

Event-time windows without allowed lateness register no timers at all: such a window
fires exactly when it is cleaned up, so the windows themselves are the pending timers.
Their contents are kept window by window (``{start: {key: contents}}``, a heap of the
starts) rather than key by key: a record touches one dict per window, and a window that
fires is one dict popped and read out. A checkpoint sees them key by key, as every
keyed state is stored (``snapshot_state`` fills the contents table just before the
backend captures it), and a restore turns them back.

``AlignedWindowPaths`` is a part of ``WindowOperator``; it uses the operator's state
and helpers declared below.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from weir.core.columnar import ColumnBatch, batch_column, key_column
from weir.core.windowing import MAX_LONG_VALUE, MissingTimestampError, TimeWindow
from weir.taskmanager.operators.base import Timestamps
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.operators.window_state import MISSING
from weir.taskmanager.state.backend import NamespacedTable


class AlignedWindowPaths:
    # What the window operator provides.
    fast: dict[str, Any] | None
    key: Callable[[Any], Any]
    backend: Any
    contents: NamespacedTable
    timers: InternalTimerService
    allowed_lateness: int
    window_function: Any
    _aligned: bool
    state_kind: str
    state_function: Any
    _windows: dict[int, Any]  # {start: {key: contents}} or, over columns, a ColumnWindow
    _aligned_starts: list[int]
    _columns: tuple[str, int | str | None, int | str] | None
    _out: list[Any]
    _out_ts: list[int | None]
    _add: Callable[[Any, Any], Any]
    _value_of: Callable[[Any], Any]
    _emit: Callable[[Any, Any, Any, Any, int], None]
    _flush: Callable[[], None]
    _missing_timestamp: Callable[[], MissingTimestampError]
    _dropped_late: Callable[[list[Any], list[int | None]], None]
    _clear_contents: Callable[[Any, Any], None]
    _clear_window_function: Callable[[Any, Any], None]

    def _process_fast_event_time(self, batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is None:
            raise self._missing_timestamp()
        if type(batch) is ColumnBatch:
            if self._columns is not None and self._aligned:
                if self._process_aligned_columns(batch, timestamps):
                    return
            batch = batch.records()
        spec = self.fast
        assert spec is not None
        size, slide, offset = spec["size"], spec["slide"], spec["offset"]
        tumbling = size == slide
        key, backend, contents, add = self.key, self.backend, self.contents, self._add
        lateness = self.allowed_lateness
        if self._aligned:
            self._process_aligned(batch, timestamps)
            return
        register = self.timers.register_event_time_timer
        wm = self.timers.current_watermark
        emit = self._emit
        late: list[Any] = []
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
                late.append(x)
                late_ts.append(ts)
        if late:
            self._dropped_late(late, late_ts)
        self._flush()

    def _process_aligned(self, batch: list[Any], timestamps: list[int | None]) -> None:
        """Aligned event-time windows, no lateness: a window is late once the watermark
        reached its end, and none fires on an element (EventTimeTrigger only fires on
        elements of windows already behind the watermark, which are late here)."""
        spec = self.fast
        assert spec is not None
        size, slide, offset = spec["size"], spec["slide"], spec["offset"]
        tumbling = size == slide
        key, add = self.key, self._add
        # An AggregateFunction's add is called directly, without the generic wrapper.
        aggregate = self.state_kind == "aggregating"
        create = self.state_function.create_accumulator if aggregate else None
        agg_add = self.state_function.add if aggregate else None
        windows, starts_heap = self._windows, self._aligned_starts
        for start, contents in windows.items():
            if type(contents) is not dict:  # records after columns: dicts again
                windows[start] = contents.as_dict()
        if not self.contents.is_empty():
            self.contents.clear_all()  # what the last checkpoint saw; the windows hold it all
        wm = self.timers.current_watermark
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
        if late:
            self._dropped_late(late, late_ts)
        self._flush()

    def _process_aligned_columns(self, batch: ColumnBatch, timestamps: list[int | None]) -> bool:
        """A built-in aggregate (``weir.datastream.aggregate_functions``) over a batch of
        columns, keyed by one field: window starts and lateness computed over the batch
        at once, then one dict update per record and window, with no Python call per
        record. The accumulators are exactly those the function's ``add`` builds, record
        after record. False when the batch lacks the columns (it then goes as records)."""
        import numpy as np  # noqa: PLC0415 (columnar batches only)

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
                return False
        if keys is None:
            return False
        spec = self.fast
        assert spec is not None
        size, slide, offset = spec["size"], spec["slide"], spec["offset"]
        try:  # one pass (np.asarray looks at the list twice, and `None in` once more)
            ts = np.fromiter(timestamps, dtype=np.int64, count=len(timestamps))
        except TypeError:
            raise self._missing_timestamp() from None
        last_start = ts - (ts - offset + slide) % slide
        wm = self.timers.current_watermark
        if not self.contents.is_empty():
            self.contents.clear_all()  # what the last checkpoint saw; the windows hold it all
        # Every window a record is in: the latest, then one slide earlier, while it holds
        # the record's timestamp (ts - size < start); those whose end the watermark
        # reached are gone, and a record in no live window is late.
        in_any = np.zeros(len(ts), dtype=bool)
        starts: list[Any] = []
        rows: list[Any] = []
        start = last_start
        while True:
            holds = start > ts - size
            if not holds.any():
                break
            live = holds & (start + (size - 1) > wm)
            in_any |= live
            live_rows = np.flatnonzero(live)
            starts.append(start[live_rows])
            rows.append(live_rows)
            start = start - slide
        if starts:
            self._add_columns(
                kind,
                np.concatenate(starts),
                np.concatenate(rows),
                keys,
                values,
                unordered=len(rows) > 1,
            )
        if not in_any.all():
            late = np.flatnonzero(~in_any).tolist()
            records = batch.records()
            self._dropped_late([records[i] for i in late], [timestamps[i] for i in late])
        self._flush()
        return True

    def _add_columns(
        self, kind: str, starts: Any, rows: Any, keys: Any, values: Any, *, unordered: bool
    ) -> None:
        """Add record ``rows[i]`` to window ``starts[i]`` of its key, as the built-in's
        ``add`` does record after record: the same arithmetic, and within each window
        the records in their order (``unordered``: ``rows`` are not ascending). A
        window is held as columns (``ColumnWindow``) while its keys and values are
        integers and numbers; otherwise as a dict."""
        import numpy as np  # noqa: PLC0415

        from weir.taskmanager.operators.window_columns import ColumnWindow  # noqa: PLC0415

        windows = self._windows
        if not len(starts):
            return
        single = bool((starts == starts[0]).all())
        slide = self.fast["slide"]  # type: ignore[index]
        for window_start in [int(starts[0])] if single else _distinct(starts, slide):
            in_window = rows if single else rows[starts == window_start]
            if unordered:
                in_window = np.sort(in_window)
            window: Any = windows.get(window_start)
            if window is None:
                window = windows[window_start] = ColumnWindow(kind)
                heapq.heappush(self._aligned_starts, window_start)
            elif type(window) is dict:  # restored, or filled by records: columns if it can
                columns = ColumnWindow.from_dict(kind, window)
                if columns is not None:
                    window = windows[window_start] = columns
            window_keys = keys[in_window]
            window_values = None if values is None else values[in_window]
            if type(window) is ColumnWindow:
                if window.add(window_keys, window_values):
                    continue
                window = windows[window_start] = window.as_dict()
            _add_to_dict(kind, window, window_keys, window_values)

    def _fire_aligned(self, watermark: int) -> None:
        """Fire and drop every window whose end the watermark reached."""
        starts_heap, windows = self._aligned_starts, self._windows
        size = self.fast["size"]  # type: ignore[index]
        function = self.window_function
        out, out_ts = self._out, self._out_ts
        value_of = self._value_of
        while starts_heap and starts_heap[0] + size - 1 <= watermark:
            start = heapq.heappop(starts_heap)
            contents = windows.pop(start)
            max_ts = start + size - 1
            if type(contents) is not dict:  # a ColumnWindow
                if function is None:  # one pass over the window's arrays
                    results = contents.results()
                    out.extend(results)
                    out_ts.extend([max_ts] * len(results))
                    continue
                contents = contents.as_dict()
            if function is None:
                results = list(map(value_of, contents.values()))
                if self.state_kind != "list":  # None contents fire nothing (PyFlink)
                    results = [r for r in results if r is not None]
                out.extend(results)
                out_ts.extend([max_ts] * len(results))
                continue
            window = TimeWindow(start, start + size)
            backend = self.backend
            for k, acc in contents.items():
                backend.current_key = k
                self._emit(k, window, start, acc, max_ts)
                self._clear_window_function(window, start)

    def _contents_for_snapshot(self) -> None:
        """Fill the contents table key by key (``{key: {start: contents}}``), as a
        checkpoint stores it."""
        by_key = self.contents
        by_key.clear_all()
        for start, contents in self._windows.items():
            # A ColumnWindow gives its accumulators as the built-in's add makes them.
            by_key.put_namespace(start, contents if type(contents) is dict else contents.as_dict())

    def _restore_windows(self) -> None:
        """The windows of restored contents (the table, key by key, is emptied)."""
        windows = self._windows
        for k, start, acc in self.contents.entries():
            contents = windows.get(start)
            if contents is None:
                contents = windows[start] = {}
            contents[k] = acc
        self.contents.clear_all()
        self._aligned_starts = list(windows)
        heapq.heapify(self._aligned_starts)

    def _process_fast_processing_time(self, batch: list[Any], timestamps: Timestamps) -> None:
        spec = self.fast
        assert spec is not None
        size, slide, offset = spec["size"], spec["slide"], spec["offset"]
        # One clock reading per batch: its records arrive at the same instant.
        now = self.timers.current_processing_time()
        last_start = now - (now - offset + slide) % slide
        starts = [last_start] if size == slide else list(range(last_start, now - size, -slide))
        key, backend, contents, add = self.key, self.backend, self.contents, self._add
        register = self.timers.register_processing_time_timer
        for x in batch:
            k = key(x)
            backend.current_key = k
            for start in starts:
                contents.put(k, start, add(contents.get(k, start, MISSING), x))
                register(start, start + size - 1)  # ProcessingTimeTrigger: CONTINUE
        self._flush()

    def _on_event_time_fast(self, timestamp: int, key: Any, start: int) -> None:
        size = self.fast["size"]  # type: ignore[index]
        max_ts = start + size - 1
        if timestamp == max_ts:  # EventTimeTrigger.on_event_time: FIRE
            acc = self.contents.get(key, start, MISSING)
            if acc is not MISSING:
                self._emit(key, TimeWindow(start, start + size), start, acc, timestamp)
        if timestamp == min(max_ts + self.allowed_lateness, MAX_LONG_VALUE):
            self._clear_contents(key, start)
            if self.window_function is not None:
                self._clear_window_function(TimeWindow(start, start + size), start)

    def _on_processing_time_fast(self, timestamp: int, key: Any, start: int) -> None:
        size = self.fast["size"]  # type: ignore[index]
        acc = self.contents.get(key, start, MISSING)
        if acc is not MISSING:  # ProcessingTimeTrigger.on_processing_time: FIRE
            self._emit(key, TimeWindow(start, start + size), start, acc, timestamp)
        if timestamp == start + size - 1:
            self._clear_contents(key, start)
            if self.window_function is not None:
                self._clear_window_function(TimeWindow(start, start + size), start)


def _distinct(starts: Any, slide: int) -> list[int]:
    """The distinct window starts of ``starts`` (all one window offset apart by multiples
    of ``slide``), ascending: counted by window when they span few, else sorted."""
    import numpy as np  # noqa: PLC0415

    low = int(starts.min())
    index = (starts - low) // slide
    if int(index.max()) < 1 << 12:
        return (np.flatnonzero(np.bincount(index)) * slide + low).tolist()  # type: ignore[no-any-return]
    return np.unique(starts).tolist()  # type: ignore[no-any-return]


def _add_to_dict(kind: str, window: dict[Any, Any], keys: Any, values: Any) -> None:
    """Add records with ``keys`` and ``values`` to ``window`` (``{key: accumulator}``), one
    by one, as the built-in ``kind``'s ``add`` does."""
    get = window.get
    ks = keys.tolist()
    if kind == "count":
        for k in ks:
            window[k] = get(k, 0) + 1
        return
    vs = values.tolist()
    if kind == "sum":
        for k, v in zip(ks, vs, strict=True):
            window[k] = get(k, 0) + v
    elif kind == "min":
        for k, v in zip(ks, vs, strict=True):
            acc = get(k)
            window[k] = v if acc is None or v < acc else acc
    elif kind == "max":
        for k, v in zip(ks, vs, strict=True):
            acc = get(k)
            window[k] = v if acc is None or v > acc else acc
    else:  # avg: (sum, count)
        for k, v in zip(ks, vs, strict=True):
            total, count = get(k, (0, 0))
            window[k] = (total + v, count + 1)
