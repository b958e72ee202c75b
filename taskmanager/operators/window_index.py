"""Aligned tumbling and sliding windows (``AlignedWindows``) and their contents kept
window by window (``AlignedWindowIndex``), for the window operator's fast paths
(``weir.taskmanager.operators.window_aligned``).

The index holds ``{start: {key: contents}}`` and a heap of the starts rather than the
contents key by key: a record touches one dict per window, and a window that fires is
one dict popped and read out. It serves event-time windows without allowed lateness
(whose windows are their own timers) and a built-in aggregate's processing-time
windows. A built-in aggregate's window filled from batches of columns is held as arrays
instead of a dict (``weir.taskmanager.operators.window_columns``). A checkpoint sees the
windows key by key (``snapshot`` fills the contents table just before the backend
captures it; a hashmap backend takes a built-in's arrays as Arrow column blocks), and a
restore turns them back. No I/O, no timers, no output.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from weir.core.columnar import ColumnBatch, batch_column, key_column
from weir.taskmanager.operators.base import Timestamps
from weir.taskmanager.operators.window_state import MISSING
from weir.taskmanager.state.backend import NamespacedTable

if TYPE_CHECKING:
    from weir.taskmanager.operators.window_columns import ColumnWindow

__all__ = ["AlignedWindowIndex", "AlignedWindows", "Columns", "Contents", "Late"]

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
