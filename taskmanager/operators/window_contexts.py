"""The contexts the window operator hands to user code: the trigger's context, the
process window function's context and the assigner's context.

One instance of each per operator, re-pointed at the current window before each call
(the backend's current key is already the record's or the timer's). They are only valid
during the call they are passed to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from weir.taskmanager.operators.window_state import (
    MergingWindowStateStore,
    PerWindowStateStore,
    merge_window_state,
    window_state,
)

if TYPE_CHECKING:
    from weir.taskmanager.operators.timers import InternalTimerService
    from weir.taskmanager.operators.window import WindowOperator


class WindowTriggerContext:
    """``Trigger.TriggerContext`` and ``Trigger.OnMergeContext``: timers and state of the
    current key in ``window``."""

    __slots__ = ("_op", "merged_windows", "window")

    def __init__(self, op: WindowOperator) -> None:
        self._op = op
        self.window: Any = None
        self.merged_windows: Any = None

    def get_current_processing_time(self) -> int:
        return self._op.timers.current_processing_time()

    def get_metric_group(self) -> Any:
        getter = getattr(self._op.setup.runtime_context, "get_metrics_group", None)
        return getter() if getter is not None else None

    def get_current_watermark(self) -> int:
        return self._op.timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._op.timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._op.timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._op.timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._op.timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        return window_state(self._op.backend, state_descriptor, self.window)

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        if self.merged_windows:
            merge_window_state(self._op.backend, state_descriptor, self.window, self.merged_windows)


class WindowProcessContext:
    """What the internal window functions get as their context: clocks, the window's own
    state (``window_state()``) and the key's (``global_state()``)."""

    __slots__ = ("_op", "_window_state", "namespace", "window")

    def __init__(self, op: WindowOperator) -> None:
        self._op = op
        self.window: Any = None
        self.namespace: Any = None
        """The window as named in state (a fast-path window is named by its start)."""
        self._window_state: PerWindowStateStore | MergingWindowStateStore = (
            MergingWindowStateStore() if op.merging else PerWindowStateStore(op.backend)
        )

    def current_processing_time(self) -> int:
        return self._op.timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._op.timers.current_watermark

    def window_state(self) -> Any:
        store = self._window_state
        store.namespace = self.namespace
        return store

    def global_state(self) -> Any:
        return self._op.setup.runtime_context


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
