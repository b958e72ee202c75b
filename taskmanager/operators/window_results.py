"""What fired windows produce (Flink's ``WindowOperator.emitWindowContents`` with its
``InternalWindowFunction`` and ``TimestampedCollector``): the window function, if there is
one, run on a window's contents, and the results kept with their timestamps until
``flush`` sends them on as one batch.

Both the window operator's general path and its aligned paths
(``weir.taskmanager.operators.window_aligned``) emit through one ``WindowResults``, on the
task thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.taskmanager.operators.base import Collect
from weir.taskmanager.operators.window_contexts import WindowProcessContext


class WindowResults:
    def __init__(
        self,
        collect: Collect,
        value_of: Callable[[Any], Any],
        window_function: Any,
        context: WindowProcessContext,
        *,
        contents_may_be_none: bool,
        result_spec: ColumnSpec | None = None,
    ) -> None:
        """``collect``: where ``flush`` sends the results (the operator's output, which
        routes ``(output_tag, value)`` results of a ProcessWindowFunction to their side
        output). ``value_of``: what the window function gets of a window's contents (an
        accumulator's result, the list of elements). ``window_function``: None emits that
        value itself. ``context``: the one context every call of the window function
        gets, re-pointed at its window. ``contents_may_be_none``: a reduce or an
        AggregateFunction may yield None, which fires nothing (a list never does).
        ``result_spec``: results of a built-in over columns go on as a batch of one
        column of this spec, when its dtype is theirs (None: always as values)."""
        self._collect = collect
        self._spec = result_spec
        self._columns: list[Any] = []
        self._column_stamps: list[int] = []
        self._value_of = value_of
        self._function = window_function
        self._context = context
        self._may_be_none = contents_may_be_none
        self._out: list[Any] = []
        self._out_ts: list[int | None] = []

    @property
    def has_window_function(self) -> bool:
        return self._function is not None

    def emit(self, key: Any, window: Any, namespace: Any, contents: Any, timestamp: int) -> None:
        """Run the window function on the ``contents`` of ``window`` (named ``namespace``
        in state) for ``key``, the backend's current key. The results carry ``timestamp``:
        the time of what fired the window (the element, or the timer), as PyFlink stamps
        them. Contents whose value is None fire nothing, as in PyFlink."""
        value = self._value_of(contents)
        if value is None:
            return
        if self._columns:
            self._columns_as_values()
        function = self._function
        if function is None:
            self._out.append(value)
            self._out_ts.append(timestamp)
            return
        ctx = self._context
        ctx.window = window
        ctx.namespace = namespace
        results = function.process(key, window, ctx, value)
        if results is not None:
            out, out_ts = self._out, self._out_ts
            for r in results:
                out.append(r)
                out_ts.append(timestamp)

    def emit_values(self, contents: Iterable[Any], timestamp: int) -> None:
        """The values of many windows' ``contents`` at once, without a window function."""
        results = list(map(self._value_of, contents))
        if self._may_be_none:
            results = [r for r in results if r is not None]
        self.emit_results(results, timestamp)

    def emit_results(self, results: list[Any], timestamp: int) -> None:
        """Values already made (none None), without a window function."""
        if self._columns:
            self._columns_as_values()
        self._out.extend(results)
        self._out_ts.extend([timestamp] * len(results))

    def emit_column(self, results: Any, timestamp: int) -> None:
        """Values already made as one array (none None), without a window function: kept
        as a column while the spec's dtype is theirs and no values wait before them."""
        spec = self._spec
        if (
            spec is None
            or self._out
            or (spec.numpy_dtypes is not None and spec.numpy_dtypes[0] != results.dtype.name)
        ):
            self.emit_results(results.tolist(), timestamp)
            return
        if len(results):
            self._columns.append(results)
            self._column_stamps.append(timestamp)

    def _columns_as_values(self) -> None:
        columns, stamps = self._columns, self._column_stamps
        self._columns, self._column_stamps = [], []
        for column, timestamp in zip(columns, stamps, strict=True):
            self.emit_results(column.tolist(), timestamp)

    def clear(self, window: Any, namespace: Any) -> None:
        """The window is gone: the window function clears its per-window state."""
        function = self._function
        if function is not None:
            ctx = self._context
            ctx.window = window
            ctx.namespace = namespace
            function.clear(window, ctx)

    def flush(self) -> None:
        """Send what was emitted since the last flush on, as one batch."""
        if self._columns:
            import numpy as np  # noqa: PLC0415 (columns only)

            columns, stamps = self._columns, self._column_stamps
            self._columns, self._column_stamps = [], []
            values = columns[0] if len(columns) == 1 else np.concatenate(columns)
            lengths = [len(column) for column in columns]
            timestamps = np.repeat(np.asarray(stamps, dtype=np.int64), lengths)
            assert self._spec is not None
            self._collect(ColumnBatch({"f0": values}, self._spec), timestamps)  # type: ignore[arg-type]
            return
        if self._out:
            out, ts = self._out, self._out_ts
            self._out, self._out_ts = [], []
            self._collect(out, ts)
