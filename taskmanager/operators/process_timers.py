"""The timers of a KeyedProcessFunction or KeyedCoProcessFunction: ``on_timer`` fired by
the operator's ``InternalTimerService``, its results emitted as one batch.

Results carry their timer's timestamp for event time and none for processing time, as
Flink's keyed process operators emit them. Event-time results go out before the
watermark that fired them is forwarded; processing-time ones when their wake-up ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.time_domain import TimeDomain
from weir.taskmanager.operators.base import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    Collect,
    StreamOperator,
)
from weir.taskmanager.operators.contexts import KeyedProcessContext, TimerService
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.state.backend import KeyedStateBackend


class TimerEmitter:
    """Collects what ``on_timer`` calls return while timers fire, and emits it as one
    batch."""

    __slots__ = ("_out", "_ts", "_with_ts")

    def __init__(self) -> None:
        self._out: list[Any] = []
        self._ts: list[int | None] = []
        self._with_ts = False

    def add(self, results: Any, timestamp: int | None) -> None:
        if results is None:
            return
        out = self._out
        n = len(out)
        out.extend(results)
        if len(out) > n:
            self._ts.extend([timestamp] * (len(out) - n))
            if timestamp is not None:
                self._with_ts = True

    def emit(self, output: Collect) -> None:
        if self._out:
            out, ts, with_ts = self._out, self._ts, self._with_ts
            self._out, self._ts, self._with_ts = [], [], False
            output(out, ts if with_ts else None)


class ProcessFunctionTimers:
    """``ctx.timer_service()`` of a keyed process function and the firing of its
    ``on_timer`` (the ``Triggerable`` of its ``InternalTimerService``)."""

    def __init__(
        self,
        owner: StreamOperator,
        function: Any,
        backend: KeyedStateBackend,
        collect: Collect,
        on_timer_context: Callable[[TimerService], KeyedProcessContext] | None = None,
    ) -> None:
        """``on_timer_context(timer_service)`` builds the context ``on_timer`` gets, when it
        offers more than a KeyedProcessContext (the broadcast state)."""
        setup = owner.setup
        self.service = InternalTimerService(backend, self, setup.processing_timers, setup.clock_ms)
        self.timer_service = TimerService(setup.clock_ms, timers=self.service, owner=owner)
        self._ctx = (
            KeyedProcessContext(self.timer_service, owner.output)
            if on_timer_context is None
            else on_timer_context(self.timer_service)
        )
        self._on_timer = getattr(function, "on_timer", None)
        self._fired = TimerEmitter()
        self._collect = collect

    def _fire(self, timestamp: int, key: Any, domain: TimeDomain) -> None:
        on_timer = self._on_timer
        if on_timer is None:
            return
        ctx = self._ctx
        ctx.current_key = key
        ctx.current_timestamp = timestamp
        ctx.current_time_domain = domain
        self._fired.add(
            on_timer(timestamp, ctx), timestamp if domain is TimeDomain.EVENT_TIME else None
        )

    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fire(timestamp, key, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fire(timestamp, key, TimeDomain.PROCESSING_TIME)
        self._fired.emit(self._collect)

    def advance_watermark(self, watermark: int) -> None:
        self.service.advance_watermark(watermark)
        self._fired.emit(self._collect)


class FiresProcessFunctionTimers(StreamOperator):
    """An operator whose keyed process function may have timers (``user_timers``)."""

    user_timers: ProcessFunctionTimers | None = None

    @property
    def timers(self) -> InternalTimerService | None:
        return None if self.user_timers is None else self.user_timers.service

    def advance_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        if self.user_timers is not None:
            self.user_timers.advance_watermark(watermark)
        self.output.emit_watermark(watermark)

    def end_key(self) -> None:
        """BATCH, sorted input: the key's timers fire now, event time first, then
        processing time, as Flink's batch timer service fires them when the key changes
        (no watermark goes downstream); then the key's state is dropped. While they fire,
        the watermark reads as the end of time, and before the next key's first record as
        the start of it again, as in Flink."""
        timers = self.user_timers
        if timers is not None:
            watermark = self.current_watermark
            self.current_watermark = MAX_WATERMARK
            try:
                timers.advance_watermark(MAX_WATERMARK)
                timers.service.fire_processing_timers(MAX_WATERMARK)
            finally:
                self.current_watermark = watermark
                timers.service.current_watermark = MIN_WATERMARK
        backend = self.setup.keyed_state_backend
        if backend is not None:
            backend.clear_key(backend.current_key)
