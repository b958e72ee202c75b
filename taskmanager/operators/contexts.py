"""Contexts user functions receive: ProcessFunction.Context, its TimerService, sink context."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.errors import WeirError

# Flink's watermark before any watermark arrived (Long.MIN_VALUE).
MIN_WATERMARK = -(1 << 63)


class TimersNotSupportedError(WeirError, NotImplementedError):
    """Registering timers is not available yet."""


class TimerService:
    """Time of the operator; timers are registered through it (not yet supported)."""

    __slots__ = ("_clock_ms", "_keyed", "watermark")

    def __init__(self, clock_ms: Callable[[], int], *, keyed: bool) -> None:
        self._clock_ms = clock_ms
        self._keyed = keyed
        self.watermark = MIN_WATERMARK

    def current_processing_time(self) -> int:
        return self._clock_ms()

    def current_watermark(self) -> int:
        return self.watermark

    def _unsupported(self, what: str) -> TimersNotSupportedError:
        if not self._keyed:
            msg = f"{what}: setting timers is only supported on a keyed stream; call key_by() first"
        else:
            msg = (
                f"{what}: timers are not supported by this version of Weir yet; "
                "keep state and act on the next record instead"
            )
        return TimersNotSupportedError(msg)

    def register_processing_time_timer(self, timestamp: int) -> None:
        what = "register_processing_time_timer"
        raise self._unsupported(what)

    def register_event_time_timer(self, timestamp: int) -> None:
        what = "register_event_time_timer"
        raise self._unsupported(what)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        what = "delete_processing_time_timer"
        raise self._unsupported(what)

    def delete_event_time_timer(self, timestamp: int) -> None:
        what = "delete_event_time_timer"
        raise self._unsupported(what)


class ProcessContext:
    """``ProcessFunction.Context``: the element's timestamp and the timer service."""

    __slots__ = ("_timer_service", "current_timestamp")

    def __init__(self, timer_service: TimerService) -> None:
        self._timer_service = timer_service
        self.current_timestamp: int | None = None

    def timestamp(self) -> int | None:
        """The element's timestamp; ``None`` without event time."""
        return self.current_timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service

    def output(self, output_tag: Any, value: Any) -> None:
        msg = "side outputs (ctx.output) are not supported by this version of Weir yet"
        raise WeirError(msg)


class KeyedProcessContext(ProcessContext):
    """``KeyedProcessFunction.Context``: adds the key of the element being processed."""

    __slots__ = ("current_key",)

    def __init__(self, timer_service: TimerService) -> None:
        super().__init__(timer_service)
        self.current_key: Any = None

    def get_current_key(self) -> Any:
        return self.current_key


class SinkContext:
    """``SinkFunction.Context``."""

    __slots__ = ("_timer_service",)

    def __init__(self, timer_service: TimerService) -> None:
        self._timer_service = timer_service

    def current_processing_time(self) -> int:
        return self._timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._timer_service.current_watermark()

    def timestamp(self) -> int | None:
        return None
