"""Windows, window assigners and triggers (mirrors ``pyflink.datastream.window``).

An assigner puts each element into zero or more windows; a trigger decides when a
window's pane (its elements for one key) is evaluated::

    >>> ds.key_by(lambda x: x[0]) \\
    ...     .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
    ...     .reduce(lambda a, b: (a[0], a[1] + b[1]))

Sizes, slides, offsets and gaps are ``Time`` or ``Duration`` values (PyFlink 2.3 takes
``Time``; both carry ``to_milliseconds()``).
"""

from __future__ import annotations

import abc
import math
import struct
from collections.abc import Collection, Iterable
from typing import Any, BinaryIO, Generic, TypeVar

from weir.common.typeinfo import Types
from weir.core.windowing import (
    MAX_LONG_VALUE,
    MIN_LONG_VALUE,
    CountWindow,
    GlobalWindow,
    MissingTimestampError,
    TimeWindow,
    TriggerResult,
    Window,
)
from weir.datastream.state import ValueStateDescriptor
from weir.datastream.window_triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)

__all__ = [
    "MAX_LONG_VALUE",
    "MIN_LONG_VALUE",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "CountWindowSerializer",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "GlobalWindow",
    "GlobalWindowSerializer",
    "GlobalWindows",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeWindow",
    "TimeWindowSerializer",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
]


def _ms(value: Any, what: str) -> int:
    """Milliseconds of a ``Time`` or ``Duration``."""
    to_ms = getattr(value, "to_milliseconds", None)
    if to_ms is None:
        msg = f"{what} must be a Time or Duration (e.g. Time.seconds(10)); got {value!r}"
        raise TypeError(msg)
    return int(to_ms())


def _missing_timestamp(assigner: WindowAssigner) -> MissingTimestampError:
    msg = (
        f"{assigner!r} got a record without a timestamp (event-time windows need one); "
        "call data_stream.assign_timestamps_and_watermarks(...) before the window, or use "
        "a processing-time window"
    )
    return MissingTimestampError(msg)


T = TypeVar("T")
W = TypeVar("W")
W2 = TypeVar("W2")


class TimeWindowSerializer:
    """Writes a ``TimeWindow`` as its start and end (big-endian longs), as PyFlink's.

    Weir keeps windows as Python objects and pickles them with its state; assigners
    name their serializer (``get_window_serializer``) for PyFlink's sake."""

    def serialize(self, element: TimeWindow, stream: BinaryIO) -> None:
        stream.write(struct.pack(">qq", element.start, element.end))

    def deserialize(self, stream: BinaryIO) -> TimeWindow:
        start, end = struct.unpack(">qq", stream.read(16))
        return TimeWindow(start, end)


class CountWindowSerializer:
    """Writes a ``CountWindow`` as its id (a big-endian long), as PyFlink's."""

    def serialize(self, element: CountWindow, stream: BinaryIO) -> None:
        stream.write(struct.pack(">q", element.id))

    def deserialize(self, stream: BinaryIO) -> CountWindow:
        (window_id,) = struct.unpack(">q", stream.read(8))
        return CountWindow(window_id)


class GlobalWindowSerializer:
    """Writes the ``GlobalWindow`` as one zero byte, as PyFlink's."""

    def serialize(self, element: GlobalWindow, stream: BinaryIO) -> None:
        stream.write(b"\x00")

    def deserialize(self, stream: BinaryIO) -> GlobalWindow:
        stream.read(1)
        return GlobalWindow.get()


class WindowAssigner(abc.ABC, Generic[T, W]):
    """Assigns zero or more windows to each element."""

    class WindowAssignerContext(abc.ABC):
        """Lets an assigner read the clock and the runtime context."""

        @abc.abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abc.abstractmethod
        def get_runtime_context(self) -> Any: ...

    @abc.abstractmethod
    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        """The windows ``element`` (with ``timestamp``) belongs to."""

    @abc.abstractmethod
    def get_default_trigger(self, env: Any) -> Trigger:
        """The trigger used unless ``WindowedStream.trigger()`` sets another."""

    @abc.abstractmethod
    def is_event_time(self) -> bool:
        """True if elements are assigned by their timestamps, False by the clock."""

    def get_window_serializer(self) -> Any:
        """The serializer of this assigner's windows (PyFlink requires one; Weir
        stores windows as they are, so an assigner need not override this)."""
        return TimeWindowSerializer()


class MergingWindowAssigner(WindowAssigner):
    """An assigner whose windows may merge (sessions)."""

    class MergeCallback(abc.ABC, Generic[W2]):
        @abc.abstractmethod
        def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
            """The windows ``to_be_merged`` become ``merge_result``."""

    @abc.abstractmethod
    def merge_windows(
        self, windows: Iterable[Any], callback: MergingWindowAssigner.MergeCallback
    ) -> None:
        """Call ``callback.merge`` for each group of ``windows`` that should merge."""


class SessionWindowTimeGapExtractor(abc.ABC):
    """Extracts the session gap (ms) from an element, for dynamic session windows."""

    @abc.abstractmethod
    def extract(self, element: Any) -> int: ...


# -- time windows ------------------------------------------------------------------------


class TumblingEventTimeWindows(WindowAssigner):
    """Non-overlapping windows of ``size`` by element timestamp::

    >>> TumblingEventTimeWindows.of(Time.minutes(1))
    """

    def __init__(self, size: int, offset: int) -> None:
        if abs(offset) >= size:
            msg = (
                "TumblingEventTimeWindows parameters must satisfy abs(offset) < size; "
                f"got size={size} ms, offset={offset} ms"
            )
            raise ValueError(msg)
        self._size = size
        self._offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingEventTimeWindows:
        """Windows of ``size`` whose starts are shifted by ``offset`` (e.g.
        ``of(Time.days(1), Time.hours(-8))`` for days starting at 00:00 UTC+08:00)."""
        return TumblingEventTimeWindows(
            _ms(size, "size"), 0 if offset is None else _ms(offset, "offset")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        if timestamp is None or timestamp <= MIN_LONG_VALUE:
            raise _missing_timestamp(self)
        start = TimeWindow.get_window_start_with_offset(timestamp, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_default_trigger(self, env: Any) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TumblingEventTimeWindows({self._size}, {self._offset})"


class TumblingProcessingTimeWindows(WindowAssigner):
    """Non-overlapping windows of ``size`` by the clock of the machine processing them."""

    def __init__(self, size: int, offset: int) -> None:
        if abs(offset) >= size:
            msg = (
                "TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size; "
                f"got size={size} ms, offset={offset} ms"
            )
            raise ValueError(msg)
        self._size = size
        self._offset = offset

    @staticmethod
    def of(size: Any, offset: Any = None) -> TumblingProcessingTimeWindows:
        return TumblingProcessingTimeWindows(
            _ms(size, "size"), 0 if offset is None else _ms(offset, "offset")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        start = TimeWindow.get_window_start_with_offset(now, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_default_trigger(self, env: Any) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"TumblingProcessingTimeWindows({self._size}, {self._offset})"


def _check_sliding(name: str, size: int, slide: int, offset: int) -> None:
    if abs(offset) >= slide or size <= 0:
        msg = (
            f"{name} parameters must satisfy abs(offset) < slide and size > 0; got "
            f"size={size} ms, slide={slide} ms, offset={offset} ms"
        )
        raise ValueError(msg)


class SlidingEventTimeWindows(WindowAssigner):
    """Windows of ``size`` every ``slide`` by element timestamp (they overlap when
    slide < size)::

        >>> SlidingEventTimeWindows.of(Time.minutes(1), Time.seconds(10))
    """

    def __init__(self, size: int, slide: int, offset: int) -> None:
        _check_sliding("SlidingEventTimeWindows", size, slide, offset)
        self._size = size
        self._slide = slide
        self._offset = offset
        self._pane_size = math.gcd(size, slide)

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingEventTimeWindows:
        return SlidingEventTimeWindows(
            _ms(size, "size"), _ms(slide, "slide"), 0 if offset is None else _ms(offset, "offset")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        if timestamp is None or timestamp <= MIN_LONG_VALUE:
            raise _missing_timestamp(self)
        last_start = TimeWindow.get_window_start_with_offset(timestamp, self._offset, self._slide)
        return [
            TimeWindow(start, start + self._size)
            for start in range(last_start, timestamp - self._size, -self._slide)
        ]

    def get_default_trigger(self, env: Any) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SlidingEventTimeWindows({self._size}, {self._slide}, {self._offset})"


class SlidingProcessingTimeWindows(WindowAssigner):
    """Windows of ``size`` every ``slide`` by the clock of the machine processing them."""

    def __init__(self, size: int, slide: int, offset: int) -> None:
        _check_sliding("SlidingProcessingTimeWindows", size, slide, offset)
        self._size = size
        self._slide = slide
        self._offset = offset
        self._pane_size = math.gcd(size, slide)

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> SlidingProcessingTimeWindows:
        return SlidingProcessingTimeWindows(
            _ms(size, "size"), _ms(slide, "slide"), 0 if offset is None else _ms(offset, "offset")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        last_start = TimeWindow.get_window_start_with_offset(now, self._offset, self._slide)
        return [
            TimeWindow(start, start + self._size)
            for start in range(last_start, now - self._size, -self._slide)
        ]

    def get_default_trigger(self, env: Any) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SlidingProcessingTimeWindows({self._size}, {self._slide}, {self._offset})"


# -- session windows ---------------------------------------------------------------------


def _check_gap(name: str, gap: int) -> None:
    if gap <= 0:
        msg = f"{name} parameters must satisfy 0 < size; got a gap of {gap} ms"
        raise ValueError(msg)


def _dynamic_gap(extractor: SessionWindowTimeGapExtractor, element: Any) -> int:
    gap = extractor.extract(element)
    if gap <= 0:
        msg = (
            f"Dynamic session time gap must satisfy 0 < gap; {extractor!r} returned {gap} "
            f"for {element!r}"
        )
        raise ValueError(msg)
    return gap


class _SessionWindows(MergingWindowAssigner):
    """Sessions: each element opens ``[start, start + gap)``, start being its timestamp
    (event time) or the current processing time, and overlapping windows merge. The gap
    is fixed, or computed per element by an extractor (dynamic gaps)."""

    event_time = True

    def __init__(
        self, session_gap: int = 0, extractor: SessionWindowTimeGapExtractor | None = None
    ) -> None:
        if extractor is None:
            _check_gap(type(self).__name__, session_gap)
        self._session_gap = session_gap
        self._extractor = extractor

    def merge_windows(self, windows: Iterable[TimeWindow], callback: Any) -> None:
        TimeWindow.merge_windows(windows, callback)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[TimeWindow]:
        if not self.event_time:
            start = context.get_current_processing_time()
        elif timestamp is None:
            raise _missing_timestamp(self)
        else:
            start = timestamp
        if self._extractor is not None:
            self._session_gap = _dynamic_gap(self._extractor, element)
        return [TimeWindow(start, start + self._session_gap)]

    def get_default_trigger(self, env: Any) -> Trigger:
        return EventTimeTrigger() if self.event_time else ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return self.event_time

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._session_gap})"


class EventTimeSessionWindows(_SessionWindows):
    """Sessions by element timestamp: a window closes after ``gap`` without elements::

    >>> EventTimeSessionWindows.with_gap(Time.minutes(1))
    """

    @staticmethod
    def with_gap(size: Any) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(_ms(size, "session gap"))

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)


class ProcessingTimeSessionWindows(_SessionWindows):
    """Sessions by the clock of the machine processing the elements."""

    event_time = False

    @staticmethod
    def with_gap(size: Any) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(_ms(size, "session gap"))

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)


class DynamicEventTimeSessionWindows(_SessionWindows):
    """Event-time sessions whose gap the extractor computes per element."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(0, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)


class DynamicProcessingTimeSessionWindows(_SessionWindows):
    """Processing-time sessions whose gap the extractor computes per element."""

    event_time = False

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(0, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(
        extractor: SessionWindowTimeGapExtractor,
    ) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)


# -- global and count windows ------------------------------------------------------------


class GlobalWindows(WindowAssigner):
    """Puts every element in the one GlobalWindow; it fires only by a custom trigger."""

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[GlobalWindow]:
        return [GlobalWindow.get()]

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def get_default_trigger(self, env: Any) -> Trigger:
        return NeverTrigger()

    def get_window_serializer(self) -> GlobalWindowSerializer:
        return GlobalWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


def _check_count(name: str, value: int) -> None:
    if value <= 0:
        msg = f"{name} must be a positive number of elements; got {value}"
        raise ValueError(msg)


class CountTumblingWindowAssigner(WindowAssigner):
    """Non-overlapping windows of ``window_size`` elements per key."""

    def __init__(self, window_size: int) -> None:
        _check_count("the count window size", window_size)
        self._window_size = window_size
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[CountWindow]:
        count_state = context.get_runtime_context().get_state(self._count_descriptor)
        current = count_state.value() or 0
        count_state.update(current + 1)
        return [CountWindow(current // self._window_size)]

    def get_default_trigger(self, env: Any) -> Trigger:
        return CountTrigger(self._window_size)

    def get_window_serializer(self) -> CountWindowSerializer:
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(WindowAssigner):
    """Windows of ``window_size`` elements every ``window_slide`` elements per key."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        _check_count("the count window size", window_size)
        _check_count("the count window slide", window_slide)
        self._window_size = window_size
        self._window_slide = window_slide
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[CountWindow]:
        count_state = context.get_runtime_context().get_state(self._count_descriptor)
        current = count_state.value() or 0
        count_state.update(current + 1)
        last_id = current // self._window_slide
        last_start = last_id * self._window_slide
        last_end = last_start + self._window_size - 1
        windows = []
        while last_id >= 0 and last_start <= current <= last_end:
            windows.append(CountWindow(last_id))
            last_id -= 1
            last_start -= self._window_slide
            last_end -= self._window_slide
        return windows

    def get_default_trigger(self, env: Any) -> Trigger:
        return CountTrigger(self._window_size)

    def get_window_serializer(self) -> CountWindowSerializer:
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"
