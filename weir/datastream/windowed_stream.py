"""``WindowedStream`` and ``AllWindowedStream`` (mirror PyFlink's, in ``data_stream``).

A windowed stream only collects settings (trigger, allowed lateness, late-data tag);
``reduce``/``aggregate``/``apply``/``process`` record one ``window`` operator whose
payload is described in ``weir.core.job_graph``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import PickledBytesTypeInfo, RowTypeInfo, TypeInformation, read_back
from weir.core.columnar import ColumnSpec
from weir.core.job_graph import OperatorKind
from weir.datastream._column_specs import column_spec
from weir.datastream.data_stream import DataStream, KeyedStream, _output_type
from weir.datastream.functions import AggregateFunction, ReduceFunction
from weir.datastream.output_tag import OutputTag
from weir.datastream.window import (
    EventTimeTrigger,
    MergingWindowAssigner,
    ProcessingTimeTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    Trigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from weir.datastream.window_functions import (
    AllWindowFunction,
    InternalIterableAllWindowFunction,
    InternalIterableProcessAllWindowFunction,
    InternalIterableProcessWindowFunction,
    InternalIterableWindowFunction,
    InternalSingleValueAllWindowFunction,
    InternalSingleValueProcessAllWindowFunction,
    InternalSingleValueProcessWindowFunction,
    InternalSingleValueWindowFunction,
    InternalWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)

__all__ = ["AllWindowedStream", "WindowedStream"]


def _null_byte_key(value: Any) -> int:
    """The one key of a ``window_all`` stream."""
    return 0


def _lateness_ms(time_ms: Any) -> int:
    millis = int(time_ms.to_milliseconds()) if hasattr(time_ms, "to_milliseconds") else time_ms
    if not isinstance(millis, int) or isinstance(millis, bool):
        msg = f"allowed_lateness() takes milliseconds (an int); got {time_ms!r}"
        raise TypeError(msg)
    if millis < 0:
        msg = f"The allowed lateness cannot be negative; got {millis} ms"
        raise ValueError(msg)
    return millis


def _result_spec(output_type: TypeInformation | None) -> ColumnSpec | None:
    """How results of single values may go on as one column (a built-in aggregate's, which
    the runtime computes as arrays): of the declared type's dtype, or of any when none is
    declared (they are pickled); None for types of several fields or no columnar form."""
    if output_type is None or isinstance(output_type, PickledBytesTypeInfo):
        return ColumnSpec()
    spec = column_spec(output_type)
    return spec if spec is not None and spec.is_scalar else None


def _fast_path(assigner: WindowAssigner, trigger: Trigger) -> dict[str, Any] | None:
    """Aligned time windows with their own default trigger: the operator then computes
    windows and timers inline instead of calling the assigner and trigger per record.
    Exact types only: a subclass may override what the shortcut reproduces."""
    kind = type(assigner)
    if kind in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        if type(trigger) is not EventTimeTrigger:
            return None
        event_time = True
    elif kind in (TumblingProcessingTimeWindows, SlidingProcessingTimeWindows):
        if type(trigger) is not ProcessingTimeTrigger:
            return None
        event_time = False
    else:
        return None
    size = assigner._size  # type: ignore[attr-defined]
    slide = getattr(assigner, "_slide", size)
    return {
        "size": size,
        "slide": slide,
        "offset": assigner._offset,  # type: ignore[attr-defined]
        "event_time": event_time,
    }


class _Windowed:
    """What WindowedStream and AllWindowedStream share."""

    _keyed_name = "Window"
    _window_function_types: tuple[type, type] = (WindowFunction, ProcessWindowFunction)

    def __init__(self, keyed_stream: KeyedStream, window_assigner: WindowAssigner) -> None:
        if not isinstance(window_assigner, WindowAssigner):
            msg = (
                f"window() needs a WindowAssigner (e.g. TumblingEventTimeWindows.of(...)); "
                f"got {window_assigner!r}"
            )
            raise TypeError(msg)
        self._keyed_stream = keyed_stream
        self._window_assigner = window_assigner
        self._allowed_lateness = 0
        self._late_data_output_tag: OutputTag | None = None
        self._window_trigger: Trigger | None = None

    def get_execution_environment(self) -> Any:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> TypeInformation:
        return read_back(self._keyed_stream._record_type() or PickledBytesTypeInfo())

    def trigger(self, trigger: Trigger) -> Any:
        """Sets the trigger that decides when windows are evaluated."""
        if not isinstance(trigger, Trigger):
            msg = f"trigger() needs a Trigger; got {trigger!r}"
            raise TypeError(msg)
        self._window_trigger = trigger
        return self

    def allowed_lateness(self, time_ms: int) -> Any:
        """Elements up to ``time_ms`` behind the watermark past a window's end still update
        it (and fire it again); later ones are dropped. Only event-time windows have
        lateness; the default is 0."""
        self._allowed_lateness = _lateness_ms(time_ms)
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Any:
        """Send elements that arrive too late for any window to the side output
        ``output_tag`` instead of dropping them."""
        if not isinstance(output_tag, OutputTag):
            msg = f"side_output_late_data() needs an OutputTag; got {output_tag!r}"
            raise TypeError(msg)
        self._late_data_output_tag = output_tag
        return self

    # -- the window functions ------------------------------------------------------------
    def _single_value(self, window_function: Any, what: str) -> InternalWindowFunction | None:
        if window_function is None:
            return None
        plain, process = self._window_function_types
        if isinstance(window_function, plain):
            return self._internal(True, False, window_function)
        if isinstance(window_function, process):
            return self._internal(True, True, window_function)
        msg = (
            f"{what}(): window_function should be a {plain.__name__} or "
            f"{process.__name__}; got {type(window_function).__name__!r}"
        )
        raise TypeError(msg)

    def _internal(self, single: bool, process: bool, function: Any) -> InternalWindowFunction:
        raise NotImplementedError

    def reduce(
        self,
        reduce_function: Callable[[Any, Any], Any] | ReduceFunction,
        window_function: Any = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Reduces each window's elements incrementally (one value kept per key and window);
        with ``window_function`` that value is handed to it when the window fires::

            >>> ds.key_by(lambda x: x[1]) \\
            ...     .window(TumblingEventTimeWindows.of(Time.seconds(5))) \\
            ...     .reduce(lambda a, b: (a[0] + b[0], b[1]))
        """
        if not isinstance(reduce_function, ReduceFunction) and not callable(reduce_function):
            msg = "The input must be a ReduceFunction or a callable function"
            raise TypeError(msg)
        internal = self._single_value(window_function, "reduce")
        if window_function is None and output_type is None:
            result_type: TypeInformation | None = self.get_input_type()
        else:
            result_type = _output_type(output_type)
        desc = type(reduce_function).__name__
        if window_function is not None:
            desc = f"{desc}, {type(window_function).__name__}"
        return self._result("reducing", reduce_function, internal, desc, result_type)

    def aggregate(
        self,
        aggregate_function: AggregateFunction,
        window_function: Any = None,
        accumulator_type: TypeInformation | list[Any] | None = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Aggregates each window's elements incrementally with ``aggregate_function``
        (``create_accumulator``/``add``/``get_result``/``merge``); with ``window_function``
        the result is handed to it when the window fires."""
        if not isinstance(aggregate_function, AggregateFunction):
            msg = (
                f"aggregate() needs an AggregateFunction; got {type(aggregate_function).__name__!r}"
            )
            raise TypeError(msg)
        internal = self._single_value(window_function, "aggregate")
        if isinstance(accumulator_type, list):
            accumulator_type = RowTypeInfo(accumulator_type)
        desc = type(aggregate_function).__name__
        if window_function is not None:
            desc = f"{desc}, {type(window_function).__name__}"
        return self._result(
            "aggregating", aggregate_function, internal, desc, _output_type(output_type)
        )

    def apply(self, window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        """Evaluates each window with ``window_function`` over all its elements (buffered
        until the window fires)."""
        plain = self._window_function_types[0]
        if not isinstance(window_function, plain):
            msg = f"apply() needs a {plain.__name__}; got {type(window_function).__name__!r}"
            raise TypeError(msg)
        return self._result(
            "list",
            None,
            self._internal(False, False, window_function),
            type(window_function).__name__,
            _output_type(output_type),
        )

    def process(
        self, process_window_function: Any, output_type: TypeInformation | None = None
    ) -> DataStream:
        """Evaluates each window with a process window function over all its elements
        (buffered until the window fires); its context gives the window, clocks and state."""
        process = self._window_function_types[1]
        if not isinstance(process_window_function, process):
            msg = (
                f"process() needs a {process.__name__}; got "
                f"{type(process_window_function).__name__!r}"
            )
            raise TypeError(msg)
        return self._result(
            "list",
            None,
            self._internal(False, True, process_window_function),
            type(process_window_function).__name__,
            _output_type(output_type),
        )

    def _result(
        self,
        state_kind: str,
        state_function: Any,
        window_function: InternalWindowFunction | None,
        func_desc: str,
        output_type: TypeInformation | None,
    ) -> DataStream:
        assigner = self._window_assigner
        trigger = self._window_trigger
        if trigger is None:
            trigger = assigner.get_default_trigger(self.get_execution_environment())
        tag = self._late_data_output_tag
        payload = {
            "assigner": assigner,
            "trigger": trigger,
            "allowed_lateness": self._allowed_lateness,
            "late_data_tag": None if tag is None else tag.tag_id,
            "window_state": state_kind,
            "state_function": state_function,
            "window_function": window_function,
            "fast_path": _fast_path(assigner, trigger),
            "key_selectors": [self._keyed_stream._key_selector],
            "result_spec": _result_spec(output_type),
        }
        out = self._keyed_stream._one_input(
            OperatorKind.WINDOW, type(assigner).__name__, payload, output_type
        )
        out._transformation.description = (
            f"{self._keyed_name}({assigner!r}, {type(trigger).__name__}, {func_desc})"
        )
        return out


class WindowedStream(_Windowed):
    """A keyed stream split into windows per key by a WindowAssigner; a Trigger decides
    when each key's window is evaluated::

        >>> ds.key_by(lambda x: x[0]) \\
        ...     .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
        ...     .process(MyProcessWindowFunction())
    """

    def _internal(self, single: bool, process: bool, function: Any) -> InternalWindowFunction:
        if single:
            return (
                InternalSingleValueProcessWindowFunction(function)
                if process
                else InternalSingleValueWindowFunction(function)
            )
        return (
            InternalIterableProcessWindowFunction(function)
            if process
            else InternalIterableWindowFunction(function)
        )


class AllWindowedStream(_Windowed):
    """A non-keyed stream split into windows. As in PyFlink, every element gets the same
    key, so the windows are evaluated in one subtask of an operator that runs at the
    default parallelism."""

    _keyed_name = "AllWindow"
    _window_function_types = (AllWindowFunction, ProcessAllWindowFunction)

    def __init__(self, data_stream: DataStream, window_assigner: WindowAssigner) -> None:
        super().__init__(data_stream.key_by(_null_byte_key), window_assigner)

    def trigger(self, trigger: Trigger) -> AllWindowedStream:
        if isinstance(self._window_assigner, MergingWindowAssigner) and not trigger.can_merge():
            msg = (
                "A merging window assigner cannot be used with a trigger that does not "
                f"support merging: {type(trigger).__name__}.can_merge() returned False; "
                "implement can_merge() and on_merge() in the trigger"
            )
            raise TypeError(msg)
        return super().trigger(trigger)  # type: ignore[no-any-return]

    def _internal(self, single: bool, process: bool, function: Any) -> InternalWindowFunction:
        if single:
            return (
                InternalSingleValueProcessAllWindowFunction(function)
                if process
                else InternalSingleValueAllWindowFunction(function)
            )
        return (
            InternalIterableProcessAllWindowFunction(function)
            if process
            else InternalIterableAllWindowFunction(function)
        )
