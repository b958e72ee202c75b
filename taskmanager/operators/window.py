"""The window operator (Flink's ``WindowOperator``): keyed windows, triggers, lateness.

Each record is assigned to windows, added to each window's contents (a reduced value,
an accumulator, or the list of elements) and shown to the trigger; the trigger's FIRE
runs the window function on the contents, its PURGE drops them. A cleanup timer at
``max_timestamp + allowed_lateness`` (event time) or ``max_timestamp`` (processing time)
drops each window with its trigger and per-window state. Results carry
``window.max_timestamp()`` as their timestamp. Records that fall only into windows that
were already cleaned up are late: they go to the late-data side output if one is set
and are dropped (and counted) otherwise. At the end of input nothing more fires: event
time windows have fired through the final watermark, processing-time windows that are
still open are dropped, as in Flink.

Two paths produce exactly the same results. The general one calls the assigner and the
trigger for every record, through a trigger context, and handles merging (session)
windows through a merging window set. The fast one serves aligned tumbling and sliding
time windows with their default trigger: an ``AlignedWindowPaths``
(``weir.taskmanager.operators.window_aligned``) the operator makes when it opens, and
calls for its input, watermarks, timers and checkpoints. Both emit what fires through
one ``WindowResults`` (``weir.taskmanager.operators.window_results``). The fast path
names a window by its start, the general one by its ``TimeWindow``: a restore renames
what the other path wrote (``weir.taskmanager.operators.window_namespaces``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from weir.core.field_access import field_of
from weir.core.windowing import (
    MAX_LONG_VALUE,
    MissingTimestampError,
    WindowMergeError,
)
from weir.taskmanager.operators.base import (
    MIN_WATERMARK,
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
)
from weir.taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    user_method,
)
from weir.taskmanager.operators.timers import (
    EVENT_TIMERS,
    PROCESSING_TIMERS,
    InternalTimerService,
)
from weir.taskmanager.operators.window_aligned import AlignedWindowPaths
from weir.taskmanager.operators.window_contexts import (
    WindowAssignerContext,
    WindowProcessContext,
    WindowTriggerContext,
)
from weir.taskmanager.operators.window_index import AlignedWindows
from weir.taskmanager.operators.window_namespaces import (
    aligned_size,
    rename_timers,
    rename_windows,
    time_restored_windows,
)
from weir.taskmanager.operators.window_results import WindowResults
from weir.taskmanager.operators.window_state import (
    CONTENTS,
    MERGING,
    MISSING,
    add_window,
    merge_namespaces,
    merger,
)
from weir.taskmanager.state.backend import NamespacedTable


class _FlushingProcessingTime:
    """Wraps the task's processing-time service so that the results of the timers one
    wake-up fires leave as one batch."""

    def __init__(self, service: Any, flush: Callable[[], None]) -> None:
        self._service = service
        self._flush = flush

    def schedule(self, timestamp_ms: int, callback: Callable[[], None]) -> None:
        flush = self._flush

        def fire_then_flush() -> None:
            callback()
            flush()

        self._service.schedule(timestamp_ms, fire_then_flush)


class WindowOperator(StreamOperator):
    """Keyed windows; see the module docstring and ``weir.core.job_graph`` for the payload."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        p = setup.payload
        selectors = p.get("key_selectors") or ()
        if not selectors or selectors[0] is None or setup.keyed_state_backend is None:
            msg = (
                f"operator {self.name!r}: windows run on a KeyedStream; call key_by() "
                "before window(), or use window_all()"
            )
            raise ValueError(msg)
        self.key = key_selector(selectors[0])
        self.backend = setup.keyed_state_backend
        self.assigner = p["assigner"]
        self.trigger = p["trigger"]
        self.allowed_lateness: int = p.get("allowed_lateness", 0)
        self.late_data_tag: str | None = p.get("late_data_tag")
        self.state_kind: str = p["window_state"]
        self.state_function: Any = p.get("state_function")
        self.window_function: Any = p.get("window_function")
        self.fast: dict[str, Any] | None = p.get("fast_path")
        self.event_time: bool = self.assigner.is_event_time()
        self.merging = hasattr(self.assigner, "merge_windows")
        self.num_late_records_dropped = 0

    # -- lifecycle ---------------------------------------------------------------------
    def open(self, output: Output) -> None:
        self.output = output
        setup = self.setup
        backend = self.backend
        context = setup.runtime_context
        processing = setup.processing_timers
        if processing is not None:
            processing = _FlushingProcessingTime(processing, self._flush)
        # What the timers call back; the aligned paths, built on the timer service, put
        # their own callbacks in once they exist.
        triggerable = SimpleNamespace(
            on_event_time=self._on_event_time, on_processing_time=self._on_processing_time
        )
        # Restored windows as this path names them (a job may have changed path).
        aligned_size_ms = aligned_size(self.assigner)
        if aligned_size_ms is not None:
            general = self.fast is None
            for table in (EVENT_TIMERS, PROCESSING_TIMERS):
                rename_timers(
                    backend.get_namespaced_table(table), aligned_size_ms, as_time_windows=general
                )
            if not general:
                rename_windows(
                    backend.get_namespaced_table(CONTENTS), aligned_size_ms, as_time_windows=False
                )
        self.timers = InternalTimerService(backend, triggerable, processing, setup.clock_ms)
        self.contents: NamespacedTable = backend.get_namespaced_table(CONTENTS)
        self.merging_sets: NamespacedTable = backend.get_namespaced_table(MERGING)
        self.trigger_ctx = WindowTriggerContext(self.timers, backend, context)
        self.assigner_ctx = WindowAssignerContext(self.timers, context)
        open_function(self.state_function, context)
        if self.window_function is not None:
            open_function(self.window_function, context)
        self._add = self._accumulator()
        self._results = WindowResults(
            # A ProcessWindowFunction may ``yield output_tag, value`` as PyFlink's do.
            output.routing_tagged_results(),
            self._result_of_contents(),
            self.window_function,
            WindowProcessContext(
                self.timers,
                backend,
                context,
                merging=self.merging,
                rename_window_state=(
                    functools.partial(
                        rename_windows, size=aligned_size_ms, as_time_windows=self.fast is None
                    )
                    if aligned_size_ms is not None
                    else None
                ),
            ),
            contents_may_be_none=self.state_kind != "list",
            # A built-in's results over columns go on as a column where nothing reads
            # them one by one here (no window function, no side output to route to).
            result_spec=(
                setup.payload.get("result_spec")
                if self.window_function is None and self.late_data_tag is None
                else None
            ),
        )
        self._late = output.side_output(self.late_data_tag) if self.late_data_tag else None
        self._aligned: AlignedWindowPaths | None = None
        if self.fast is not None:
            # A built-in aggregate keyed by one field adds batches of columns as they come.
            builtin = getattr(self.state_function, "builtin", None)
            key_field = field_of(self.key)
            aggregating = self.state_kind == "aggregating"
            self._aligned = AlignedWindowPaths(
                AlignedWindows.of(self.fast),
                key=self.key,
                backend=backend,
                contents=self.contents,
                timers=self.timers,
                allowed_lateness=self.allowed_lateness,
                add=self._add,
                aggregate=self.state_function if aggregating else None,
                columns=(
                    (builtin[0], builtin[1], key_field)
                    if aggregating and isinstance(builtin, tuple) and key_field is not None
                    else None
                ),
                results=self._results,
                dropped_late=self._dropped_late,
                missing_timestamp=self._missing_timestamp,
            )
            self.process = self._aligned.process
            triggerable.on_event_time = self._aligned.on_event_time
            triggerable.on_processing_time = self._aligned.on_processing_time
        else:
            self.process = self._process
        self.columnar = self._aligned is not None and self._aligned.columnar
        if self._aligned is None or not self._aligned.indexed:
            # Windows a snapshot held as column blocks (hashmap) or an incremental one in
            # RocksDB blocks, into the table they live in here.
            backend.unblock_table(CONTENTS)
            blocks = self.contents.take_columns()
            if blocks:
                from weir.taskmanager.operators.window_column_snapshots import (  # noqa: PLC0415
                    put_blocks_as_entries,
                )

                put_blocks_as_entries(self.contents, blocks)
        if self._aligned is not None:
            self._aligned.time_restored_windows()
        elif aligned_size_ms is not None:
            rename_windows(self.contents, aligned_size_ms, as_time_windows=True)
            time_restored_windows(
                self.contents,
                backend,
                self.timers,
                event_time=self.event_time,
                allowed_lateness=self.allowed_lateness,
            )

    def snapshot_state(self, checkpoint_id: int) -> None:
        if self._aligned is not None:
            self._aligned.snapshot_state()

    def close(self) -> None:
        if self.window_function is not None:
            close_function(self.window_function)
        close_function(self.state_function)

    def advance_watermark(self, watermark: int) -> None:
        if self._aligned is not None:
            self._aligned.advance_watermark(watermark)
        self.timers.advance_watermark(watermark)
        self.current_watermark = watermark
        self._flush()
        self.output.emit_watermark(watermark)

    def _flush(self) -> None:
        self._results.flush()

    # -- contents --------------------------------------------------------------------------
    def _accumulator(self) -> Callable[[Any, Any], Any]:
        """``add(accumulator_or_MISSING, element) -> accumulator``."""
        kind, function = self.state_kind, self.state_function
        if kind == "reducing":
            reduce = user_method(function, "reduce", self.name)

            def add_reduce(acc: Any, x: Any) -> Any:
                return x if acc is MISSING else reduce(acc, x)

            return add_reduce
        if kind == "aggregating":
            create, agg_add = function.create_accumulator, function.add

            def add_aggregate(acc: Any, x: Any) -> Any:
                return agg_add(x, create() if acc is MISSING else acc)

            return add_aggregate

        def add_to_list(acc: Any, x: Any) -> Any:
            if acc is MISSING:
                return [x]
            acc.append(x)
            return acc

        return add_to_list

    def _result_of_contents(self) -> Callable[[Any], Any]:
        if self.state_kind == "aggregating":
            return self.state_function.get_result  # type: ignore[no-any-return]
        if self.state_kind == "list":
            return list
        return _identity

    def _clear_contents(self, key: Any, namespace: Any) -> None:
        self.contents.remove(key, namespace)

    def _dropped_late(self, records: list[Any], timestamps: list[int | None]) -> None:
        if self._late is not None:
            self._late(records, timestamps)
        else:
            self.num_late_records_dropped += len(records)

    def _missing_timestamp(self) -> MissingTimestampError:
        msg = (
            f"operator {self.name!r}: {self.assigner!r} got a record without a timestamp "
            "(event-time windows need one); call assign_timestamps_and_watermarks(...) "
            "before the window, or use a processing-time window"
        )
        return MissingTimestampError(msg)

    # -- lateness and cleanup (Flink's WindowOperator) ------------------------------------
    def cleanup_time(self, window: Any) -> int:
        if self.event_time:
            return min(window.max_timestamp() + self.allowed_lateness, MAX_LONG_VALUE)
        return window.max_timestamp()  # type: ignore[no-any-return]

    def is_window_late(self, window: Any) -> bool:
        return self.event_time and self.cleanup_time(window) <= self.timers.current_watermark

    def _register_cleanup_timer(self, window: Any) -> None:
        time = self.cleanup_time(window)
        if time == MAX_LONG_VALUE:
            return
        if self.event_time:
            self.timers.register_event_time_timer(window, time)
        else:
            self.timers.register_processing_time_timer(window, time)

    def _delete_cleanup_timer(self, window: Any) -> None:
        time = self.cleanup_time(window)
        if time == MAX_LONG_VALUE:
            return
        if self.event_time:
            self.timers.delete_event_time_timer(window, time)
        else:
            self.timers.delete_processing_time_timer(window, time)

    # -- the general path ----------------------------------------------------------------
    def _process(self, batch: list[Any], timestamps: Timestamps) -> None:
        key, backend, assign = self.key, self.backend, self.assigner.assign_windows
        actx, contents, add = self.assigner_ctx, self.contents, self._add
        event_time, lateness = self.event_time, self.allowed_lateness
        for i, x in enumerate(batch):
            ts = None if timestamps is None else timestamps[i]
            if event_time and ts is None:
                raise self._missing_timestamp()
            # What assigners, triggers and results see of a record without a timestamp.
            stamp = MIN_WATERMARK if ts is None else ts
            k = key(x)
            backend.current_key = k
            windows = assign(x, stamp, actx)
            mapping = None
            if self.merging:
                mapping = self.merging_sets.get(k, None)
                if mapping is None:
                    mapping = {}
            skipped = True
            for window in windows:
                if mapping is not None:
                    actual = add_window(self.assigner, mapping, window, self._merge_function(k))
                    if self.is_window_late(actual):
                        del mapping[actual]
                        continue
                    state_window = mapping[actual]
                else:
                    if self.is_window_late(window):
                        continue
                    actual = state_window = window
                skipped = False
                acc = add(contents.get(k, state_window, MISSING), x)
                contents.put(k, state_window, acc)
                ctx = self.trigger_ctx
                ctx.window, ctx.merged_windows = actual, None
                result = self.trigger.on_element(x, stamp, actual, ctx)
                if result.is_fire():
                    self._results.emit(k, actual, state_window, acc, stamp)
                if result.is_purge():
                    self._clear_contents(k, state_window)
                self._register_cleanup_timer(actual)
            if mapping is not None:
                self._persist(k, mapping)
            if skipped and event_time and ts + lateness <= self.timers.current_watermark:  # type: ignore[operator]
                self._dropped_late([x], [ts])
        self._flush()

    def _persist(self, key: Any, mapping: dict[Any, Any]) -> None:
        if mapping:
            self.merging_sets.put(key, None, mapping)
        else:
            self.merging_sets.remove(key, None)

    def _merge_function(self, key: Any) -> Callable[[Any, Any, Any, list[Any]], None]:
        def merge(
            merge_result: Any,
            merged_windows: Any,
            state_window_result: Any,
            merged_state_windows: list[Any],
        ) -> None:
            timers = self.timers
            if self.event_time:
                if merge_result.max_timestamp() + self.allowed_lateness <= timers.current_watermark:
                    msg = (
                        "The end timestamp of an event-time window cannot become earlier "
                        f"than the current watermark by merging. Current watermark: "
                        f"{timers.current_watermark} window: {merge_result}"
                    )
                    raise WindowMergeError(msg)
            else:
                now = timers.current_processing_time()
                if merge_result.max_timestamp() <= now:
                    msg = (
                        "The end timestamp of a processing-time window cannot become earlier "
                        f"than the current processing time by merging. Current processing "
                        f"time: {now} window: {merge_result}"
                    )
                    raise WindowMergeError(msg)
            ctx = self.trigger_ctx
            ctx.window, ctx.merged_windows = merge_result, merged_windows
            self.trigger.on_merge(merge_result, ctx)
            ctx.merged_windows = None
            for m in merged_windows:
                ctx.window = m
                self.trigger.clear(m, ctx)
                self._delete_cleanup_timer(m)
            merge_namespaces(
                self.contents,
                key,
                state_window_result,
                merged_state_windows,
                merger(self.state_kind, self.state_function),
            )

        return merge

    def _on_timer(self, timestamp: int, key: Any, window: Any, event_time: bool) -> None:
        mapping = None
        if self.merging:
            mapping = self.merging_sets.get(key, None)
            state_window = None if mapping is None else mapping.get(window)
            if state_window is None:
                return  # a trigger left a timer behind for a window already gone
        else:
            state_window = window
        ctx = self.trigger_ctx
        ctx.window, ctx.merged_windows = window, None
        if event_time:
            result = self.trigger.on_event_time(timestamp, window, ctx)
        else:
            result = self.trigger.on_processing_time(timestamp, window, ctx)
        if result.is_fire():
            acc = self.contents.get(key, state_window, MISSING)
            if acc is not MISSING:
                self._results.emit(key, window, state_window, acc, timestamp)
        if result.is_purge():
            self._clear_contents(key, state_window)
        if self.event_time == event_time and timestamp == self.cleanup_time(window):
            self._clear_contents(key, state_window)
            ctx.window = window
            self.trigger.clear(window, ctx)
            self._results.clear(window, window)
            if mapping is not None:
                mapping.pop(window, None)
        if mapping is not None:
            self._persist(key, mapping)

    def _on_event_time(self, timestamp: int, key: Any, window: Any) -> None:
        self._on_timer(timestamp, key, window, True)

    def _on_processing_time(self, timestamp: int, key: Any, window: Any) -> None:
        self._on_timer(timestamp, key, window, False)


def _identity(value: Any) -> Any:
    return value
