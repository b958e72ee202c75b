"""The contexts the window operator hands to user code: the trigger's context, the
process window function's context and the assigner's context.

One instance of each per operator, re-pointed at the current window before each call
(the backend's current key is already the record's or the timer's). They are only valid
during the call they are passed to. Each is constructed with the operator's timer
service, keyed state backend and runtime context it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.taskmanager.operators.window_state import (
    MergingWindowStateStore,
    PerWindowStateStore,
    merge_window_state,
    window_state,
)

if TYPE_CHECKING:
    from weir.taskmanager.operators.timers import InternalTimerService
    from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable


class WindowTriggerContext:
    """``Trigger.TriggerContext`` and ``Trigger.OnMergeContext``: timers and state of the
    current key in ``window``."""

    __slots__ = ("_backend", "_runtime_context", "_timers", "merged_windows", "window")

    def __init__(
        self, timers: InternalTimerService, backend: KeyedStateBackend, runtime_context: Any
    ) -> None:
        self._timers = timers
        self._backend = backend
        self._runtime_context = runtime_context
        self.window: Any = None
        self.merged_windows: Any = None

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_metric_group(self) -> Any:
        getter = getattr(self._runtime_context, "get_metrics_group", None)
        return getter() if getter is not None else None

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        return window_state(self._backend, state_descriptor, self.window)

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        if self.merged_windows:
            merge_window_state(self._backend, state_descriptor, self.window, self.merged_windows)


class WindowProcessContext:
    """What the internal window functions get as their context: clocks, the window's own
    state (``window_state()``) and the key's (``global_state()``)."""

    __slots__ = ("_runtime_context", "_timers", "_window_state", "namespace", "window")

    def __init__(
        self,
        timers: InternalTimerService,
        backend: KeyedStateBackend,
        runtime_context: Any,
        *,
        merging: bool,
        rename_window_state: Callable[[NamespacedTable], None] | None = None,
    ) -> None:
        """``merging``: the windows merge (sessions), which have no per-window state.
        ``rename_window_state``: names the restored windows of a ``window_state()`` state
        as this operator's path does (see ``PerWindowStateStore``)."""
        self._timers = timers
        self._runtime_context = runtime_context
        self.window: Any = None
        self.namespace: Any = None
        """The window as named in state (a fast-path window is named by its start)."""
        self._window_state: PerWindowStateStore | MergingWindowStateStore = (
            MergingWindowStateStore()
            if merging
            else PerWindowStateStore(backend, rename_window_state)
        )

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._timers.current_watermark

    def window_state(self) -> Any:
        store = self._window_state
        store.namespace = self.namespace
        return store

    def global_state(self) -> Any:
        return self._runtime_context


class WindowAssignerContext:
    """``WindowAssigner.WindowAssignerContext``."""

    __slots__ = ("_runtime_context", "_timers")

    def __init__(self, timers: InternalTimerService, runtime_context: Any) -> None:
        self._timers = timers
        self._runtime_context = runtime_context

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_runtime_context(self) -> Any:
        return self._runtime_context
