"""The window operator's fast paths: aligned tumbling and sliding time windows with their
default trigger (the payload's ``fast_path``).

The windows and the trigger's timers are computed inline, and a window is named by its
start (an ``int``) in state and timers; a ``TimeWindow`` is built only for a window
function that needs one. Event-time windows without allowed lateness register no
timers at all: such a window fires exactly when it is cleaned up, so the windows in the
contents table are the pending timers, and an index of them by start (rebuilt from the
contents on restore) fires them when the watermark passes their end.

``AlignedWindowPaths`` is a part of ``WindowOperator``; it uses the operator's state
and helpers declared below.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from taskmanager.operators.base import Timestamps
from taskmanager.operators.timers import InternalTimerService
from taskmanager.operators.window_state import MISSING
from weir.core.windowing import MAX_LONG_VALUE, MissingTimestampError, TimeWindow


class AlignedWindowPaths:
    # What the window operator provides.
    fast: dict[str, Any] | None
    key: Callable[[Any], Any]
    backend: Any
    contents: dict[Any, dict[Any, Any]]
    timers: InternalTimerService
    allowed_lateness: int
    window_function: Any
    _aligned: bool
    _aligned_pending: dict[int, dict[Any, None]]
    _aligned_starts: list[int]
    _out: list[Any]
    _out_ts: list[int | None]
    _add: Callable[[Any, Any], Any]
    _value_of: Callable[[Any], Any]
    _emit: Callable[[Any, Any, Any, Any], None]
    _flush: Callable[[], None]
    _missing_timestamp: Callable[[], MissingTimestampError]
    _dropped_late: Callable[[list[Any], list[int | None]], None]
    _clear_contents: Callable[[Any, Any], None]
    _clear_window_function: Callable[[Any, Any], None]

    def _process_fast_event_time(self, batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is None:
            raise self._missing_timestamp()
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
                per = contents.get(k)
                if per is None:
                    per = contents[k] = {}
                acc = per[start] = add(per.get(start, MISSING), x)
                if max_ts > wm:
                    register(start, max_ts)  # EventTimeTrigger.on_element: CONTINUE
                    if lateness:
                        register(start, min(cleanup, MAX_LONG_VALUE))
                else:  # EventTimeTrigger.on_element: FIRE (a late firing)
                    emit(k, TimeWindow(start, start + size), start, acc)
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
        key, contents, add = self.key, self.contents, self._add
        pending, starts_heap = self._aligned_pending, self._aligned_starts
        wm = self.timers.current_watermark
        late: list[Any] = []
        late_ts: list[int | None] = []
        for x, ts in zip(batch, timestamps, strict=True):
            if ts is None:
                raise self._missing_timestamp()
            last_start = ts - (ts - offset + slide) % slide
            k = key(x)
            if tumbling:
                if last_start + size - 1 <= wm:
                    late.append(x)
                    late_ts.append(ts)
                    continue
                per = contents.get(k)
                if per is None:
                    per = contents[k] = {}
                per[last_start] = add(per.get(last_start, MISSING), x)
                keys = pending.get(last_start)
                if keys is None:
                    keys = pending[last_start] = {}
                    heapq.heappush(starts_heap, last_start)
                keys[k] = None
                continue
            skipped = True
            for start in range(last_start, ts - size, -slide):
                if start + size - 1 <= wm:
                    continue
                skipped = False
                per = contents.get(k)
                if per is None:
                    per = contents[k] = {}
                per[start] = add(per.get(start, MISSING), x)
                keys = pending.get(start)
                if keys is None:
                    keys = pending[start] = {}
                    heapq.heappush(starts_heap, start)
                keys[k] = None
            if skipped and ts <= wm:
                late.append(x)
                late_ts.append(ts)
        if late:
            self._dropped_late(late, late_ts)
        self._flush()

    def _fire_aligned(self, watermark: int) -> None:
        """Fire and drop every indexed window whose end the watermark reached."""
        starts_heap, pending = self._aligned_starts, self._aligned_pending
        size = self.fast["size"]  # type: ignore[index]
        contents, function = self.contents, self.window_function
        out, out_ts = self._out, self._out_ts
        value_of = self._value_of
        while starts_heap and starts_heap[0] + size - 1 <= watermark:
            start = heapq.heappop(starts_heap)
            keys = pending.pop(start)
            max_ts = start + size - 1
            if function is None:
                for k in keys:
                    per = contents.get(k)
                    if per is None:
                        continue
                    acc = per.pop(start, MISSING)
                    if not per:
                        del contents[k]
                    if acc is not MISSING:
                        out.append(value_of(acc))
                        out_ts.append(max_ts)
                continue
            window = TimeWindow(start, start + size)
            backend = self.backend
            for k in keys:
                backend.current_key = k
                per = contents.get(k)
                acc = MISSING if per is None else per.get(start, MISSING)
                if acc is not MISSING:
                    self._emit(k, window, start, acc)
                self._clear_contents(k, start)
                self._clear_window_function(window, start)

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
            per = contents.get(k)
            if per is None:
                per = contents[k] = {}
            for start in starts:
                per[start] = add(per.get(start, MISSING), x)
                register(start, start + size - 1)  # ProcessingTimeTrigger: CONTINUE
        self._flush()

    def _on_event_time_fast(self, timestamp: int, key: Any, start: int) -> None:
        size = self.fast["size"]  # type: ignore[index]
        max_ts = start + size - 1
        if timestamp == max_ts:  # EventTimeTrigger.on_event_time: FIRE
            per = self.contents.get(key)
            if per is not None:
                acc = per.get(start, MISSING)
                if acc is not MISSING:
                    if self.window_function is None:
                        self._out.append(self._value_of(acc))
                        self._out_ts.append(max_ts)
                    else:
                        self._emit(key, TimeWindow(start, start + size), start, acc)
        if timestamp == min(max_ts + self.allowed_lateness, MAX_LONG_VALUE):
            self._clear_contents(key, start)
            if self.window_function is not None:
                self._clear_window_function(TimeWindow(start, start + size), start)

    def _on_processing_time_fast(self, timestamp: int, key: Any, start: int) -> None:
        size = self.fast["size"]  # type: ignore[index]
        per = self.contents.get(key)
        if per is not None:  # ProcessingTimeTrigger.on_processing_time: FIRE
            acc = per.get(start, MISSING)
            if acc is not MISSING:
                self._emit(key, TimeWindow(start, start + size), start, acc)
        if timestamp == start + size - 1:
            self._clear_contents(key, start)
            if self.window_function is not None:
                self._clear_window_function(TimeWindow(start, start + size), start)
