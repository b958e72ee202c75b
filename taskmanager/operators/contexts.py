"""Contexts user functions receive: ProcessFunction.Context, its TimerService, sink context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from weir.core.errors import WeirError
from weir.taskmanager.operators.base import DISCARDING_OUTPUT, MIN_WATERMARK, Output
from weir.taskmanager.operators.timers import InternalTimerService

__all__ = [
    "MIN_WATERMARK",
    "KeyedProcessContext",
    "ProcessContext",
    "SinkContext",
    "TimerService",
    "TimersNotSupportedError",
]

# PyFlink's TimeDomain values (pyflink.datastream.TimeDomain), by name.
EVENT_TIME = "EVENT_TIME"
PROCESSING_TIME = "PROCESSING_TIME"


class TimersNotSupportedError(WeirError, NotImplementedError):
    """Timers were used where there are none (an operator that is not keyed)."""


class TimerService:
    """``ctx.timer_service()``: the operator's clocks and, on a keyed stream, its timers
    (bound to the key of the record or timer being processed)."""

    __slots__ = ("_clock_ms", "_no_timers", "_owner", "_timers")

    def __init__(
        self,
        clock_ms: Callable[[], int],
        *,
        timers: InternalTimerService | None = None,
        owner: Any = None,
        no_timers: str = "setting timers is only supported on a keyed stream; call "
        "key_by() first and use a KeyedProcessFunction",
    ) -> None:
        self._clock_ms = clock_ms
        self._timers = timers
        self._owner = owner
        """Anything with a ``current_watermark`` attribute (the operator)."""
        self._no_timers = no_timers
        """Why there are no timers here (without ``timers``), for the error."""

    def current_processing_time(self) -> int:
        return self._clock_ms()

    def current_watermark(self) -> int:
        owner = self._owner
        return MIN_WATERMARK if owner is None else owner.current_watermark  # type: ignore[no-any-return]

    def _service(self, what: str) -> InternalTimerService:
        if self._timers is None:
            msg = f"{what}: {self._no_timers}"
            raise TimersNotSupportedError(msg)
        return self._timers

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._service("register_processing_time_timer").register_processing_time_timer(
            None, int(timestamp)
        )

    def register_event_time_timer(self, timestamp: int) -> None:
        self._service("register_event_time_timer").register_event_time_timer(None, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._service("delete_processing_time_timer").delete_processing_time_timer(
            None, int(timestamp)
        )

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._service("delete_event_time_timer").delete_event_time_timer(None, int(timestamp))


class ProcessContext:
    """``ProcessFunction.Context``: the element's timestamp, the timer service and side
    outputs (``output(tag, value)``)."""

    __slots__ = ("_output", "_timer_service", "current_timestamp")

    def __init__(self, timer_service: TimerService, output: Output = DISCARDING_OUTPUT) -> None:
        self._timer_service = timer_service
        self._output = output
        self.current_timestamp: int | None = None

    def timestamp(self) -> int:
        """The element's timestamp; Long.MIN_VALUE when it has none, as in PyFlink."""
        ts = self.current_timestamp
        return MIN_WATERMARK if ts is None else ts

    def timer_service(self) -> TimerService:
        return self._timer_service

    def current_processing_time(self) -> int:
        """As ``timer_service().current_processing_time()`` (the broadcast contexts'
        ``BaseContext`` has it)."""
        return self._timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._timer_service.current_watermark()

    def output(self, output_tag: Any, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag`` (with the element's timestamp)."""
        tag_id = getattr(output_tag, "tag_id", None)
        if not isinstance(tag_id, str):
            msg = f"ctx.output() needs an OutputTag as its first argument; got {output_tag!r}"
            raise TypeError(msg)
        ts = self.current_timestamp
        self._output.side_output(tag_id)([value], None if ts is None else [ts])


class KeyedProcessContext(ProcessContext):
    """``KeyedProcessFunction.Context`` and ``OnTimerContext``: adds the current key and,
    in ``on_timer``, the time domain of the firing timer."""

    __slots__ = ("current_key", "current_time_domain")

    def __init__(self, timer_service: TimerService, output: Output = DISCARDING_OUTPUT) -> None:
        super().__init__(timer_service, output)
        self.current_key: Any = None
        self.current_time_domain: Any = None

    def get_current_key(self) -> Any:
        return self.current_key

    def time_domain(self) -> Any:
        return self.current_time_domain


class SinkContext:
    """``SinkFunction.Context``. For ``invoke_batch``, ``batch_timestamps`` holds the
    timestamps of the batch's records, in their order (None when they have none)."""

    __slots__ = ("_batch_timestamps", "_timer_service", "current_timestamp")

    def __init__(self, timer_service: TimerService) -> None:
        self._timer_service = timer_service
        self.current_timestamp: int | None = None
        self._batch_timestamps: Any = None

    @property
    def batch_timestamps(self) -> Sequence[int | None] | None:
        # A batch of columns carries them as an array: a list is made only when asked for.
        stamps = self._batch_timestamps
        if stamps is not None and type(stamps) is not list:
            stamps = self._batch_timestamps = stamps.tolist()
        return stamps  # type: ignore[no-any-return]

    @batch_timestamps.setter
    def batch_timestamps(self, timestamps: Any) -> None:
        self._batch_timestamps = timestamps

    def current_processing_time(self) -> int:
        return self._timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._timer_service.current_watermark()

    def timestamp(self) -> int | None:
        return self.current_timestamp
