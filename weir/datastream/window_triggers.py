"""Triggers: when a window's pane is evaluated (mirrors the triggers of
``pyflink.datastream.window``, which re-exports them from ``weir.datastream.window``).

A trigger is called by the window operator on the task thread, once per element added
to a pane and once per timer it registered; it keeps no state of its own between calls
(one instance serves every key and window), only state reached through its context.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeVar, cast

from weir.common.typeinfo import Types
from weir.core.windowing import CountWindow, GlobalWindow, TimeWindow, TriggerResult, Window
from weir.datastream.functions import ReduceFunction
from weir.datastream.state import ReducingState, ReducingStateDescriptor, State, StateDescriptor

__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "Trigger",
    "TriggerResult",
]


def _interval_ms(interval: Any, what: str) -> int:
    to_ms = getattr(interval, "to_milliseconds", None)
    if to_ms is None:
        msg = f"{what}.of() needs a Time or Duration interval; got {interval!r}"
        raise TypeError(msg)
    millis = int(to_ms())
    if millis <= 0:
        msg = f"{what}.of() needs a positive interval; got {millis} ms"
        raise ValueError(msg)
    return millis


T = TypeVar("T")
W = TypeVar("W")


class Trigger(abc.ABC, Generic[T, W]):
    """Decides when a pane (the elements of one key in one window) is evaluated.

    With a merging assigner (session windows) ``can_merge()`` must return True and
    ``on_merge`` must be implemented. State lives in ``ctx.get_partitioned_state``, scoped to
    the key and window of the call::

        >>> class EveryThird(Trigger):
        ...     def on_element(self, element, timestamp, window, ctx):
        ...         count = ctx.get_partitioned_state(ReducingStateDescriptor(
        ...             "n", lambda a, b: a + b, Types.LONG()))
        ...         count.add(1)
        ...         return TriggerResult.FIRE if count.get() % 3 == 0 else TriggerResult.CONTINUE
        ...     ...
    """

    class TriggerContext(abc.ABC):
        """What a trigger method may use: clocks, timers and per-window state."""

        @abc.abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abc.abstractmethod
        def get_metric_group(self) -> Any: ...

        @abc.abstractmethod
        def get_current_watermark(self) -> int: ...

        @abc.abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            """``on_processing_time`` is called once the clock passes ``time``."""

        @abc.abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            """``on_event_time`` is called once the watermark passes ``time``."""

        @abc.abstractmethod
        def delete_processing_time_timer(self, time: int) -> None: ...

        @abc.abstractmethod
        def delete_event_time_timer(self, time: int) -> None: ...

        @abc.abstractmethod
        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            """The state of ``state_descriptor`` for the current key and window."""

    class OnMergeContext(TriggerContext):
        """The context of ``on_merge``: can also merge the merged windows' state."""

        @abc.abstractmethod
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None: ...

    @abc.abstractmethod
    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        """Called for every element added to a pane."""

    @abc.abstractmethod
    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        """Called when a processing-time timer this trigger registered fires."""

    @abc.abstractmethod
    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        """Called when an event-time timer this trigger registered fires."""

    def can_merge(self) -> bool:
        """True if this trigger supports merging windows (then implement ``on_merge``)."""
        return False

    @abc.abstractmethod
    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        """Called when windows were merged into ``window``."""

    @abc.abstractmethod
    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        """Delete the timers and state this trigger holds for ``window`` (it is purged)."""


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the end of the window."""

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        max_timestamp = window.max_timestamp()
        if max_timestamp > ctx.get_current_watermark():
            ctx.register_event_time_timer(max_timestamp)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()


class ProcessingTimeTrigger(Trigger):
    """Fires once the clock passes the end of the window."""

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        max_timestamp = window.max_timestamp()
        if max_timestamp > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(max_timestamp)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()


class Min(ReduceFunction):
    def reduce(self, value1: Any, value2: Any) -> Any:
        return min(value1, value2)


def _fire_time_descriptor() -> ReducingStateDescriptor:
    return ReducingStateDescriptor("fire-time", Min(), Types.LONG())


class _ContinuousTrigger(Trigger):
    """Fires every ``interval`` within the window; the next firing time is kept in
    per-window state so that it survives merges and is cleared with the window. The
    subclasses say which clock the timers use."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.state_desc = _fire_time_descriptor()

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _delete(self, ctx: Trigger.TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _fire_state(self, ctx: Trigger.TriggerContext) -> ReducingState:
        return cast(ReducingState, ctx.get_partitioned_state(self.state_desc))

    def _fire_if_due(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        fire_timestamp = self._fire_state(ctx)
        if fire_timestamp.get() == time:
            fire_timestamp.clear()
            self._register_next_fire_timestamp(time, window, ctx, fire_timestamp)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = self._fire_state(ctx).get()
        if next_fire is not None:
            self._register(ctx, next_fire)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        fire_timestamp = self._fire_state(ctx)
        timestamp = fire_timestamp.get()
        if timestamp is not None:
            self._delete(ctx, timestamp)
            fire_timestamp.clear()

    def can_merge(self) -> bool:
        return True

    def _register_next_fire_timestamp(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext, state: ReducingState
    ) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        state.add(next_fire)
        self._register(ctx, next_fire)


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of event time within the window, and at its end::

    >>> windowed.trigger(ContinuousEventTimeTrigger.of(Time.seconds(1)))
    """

    @staticmethod
    def of(interval: Any) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(_interval_ms(interval, "ContinuousEventTimeTrigger"))

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_timestamp = self._fire_state(ctx)
        if fire_timestamp.get() is None:
            self._register_next_fire_timestamp(
                timestamp - (timestamp % self.interval), window, ctx, fire_timestamp
            )
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return self._fire_if_due(time, window, ctx)


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of processing time within the window."""

    @staticmethod
    def of(interval: Any) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(
            _interval_ms(interval, "ContinuousProcessingTimeTrigger")
        )

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: Trigger.TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        fire_timestamp = self._fire_state(ctx)
        now = ctx.get_current_processing_time()
        if fire_timestamp.get() is None:
            self._register_next_fire_timestamp(
                now - (now % self.interval), window, ctx, fire_timestamp
            )
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._fire_if_due(time, window, ctx)

    def on_event_time(
        self, time: int, window: TimeWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE


class PurgingTrigger(Trigger):
    """Turns ``nested_trigger``'s FIRE into FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(
        self, time: int, window: Window, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)


def _add(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger):
    """Fires once a pane holds ``window_size`` elements (then counts again from zero)."""

    def __init__(self, window_size: int) -> None:
        if window_size <= 0:
            msg = f"CountTrigger needs a positive count; got {window_size}"
            raise ValueError(msg)
        self._window_size = window_size
        self._count_state_descriptor = ReducingStateDescriptor("count", _add, Types.LONG())

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def on_element(
        self, element: Any, timestamp: int, window: CountWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        count = cast(ReducingState, ctx.get_partitioned_state(self._count_state_descriptor))
        count.add(1)
        if count.get() >= self._window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: CountWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: CountWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: CountWindow, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._count_state_descriptor)

    def clear(self, window: CountWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.get_partitioned_state(self._count_state_descriptor).clear()


class NeverTrigger(Trigger):
    """Never fires: the default trigger of GlobalWindows."""

    def on_element(
        self, element: Any, timestamp: int, window: GlobalWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: GlobalWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(
        self, time: int, window: GlobalWindow, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_merge(self, window: GlobalWindow, ctx: Trigger.OnMergeContext) -> None:
        pass

    def clear(self, window: GlobalWindow, ctx: Trigger.TriggerContext) -> None:
        pass
