"""User-function interfaces (mirrors ``pyflink.datastream.functions``).

Wherever PyFlink accepts a plain callable (``map``, ``flat_map``, ``filter``, ``reduce``,
``key_by``, ``partition_custom``, ``add_sink``) so do we. ``flat_map``, ``process_element``
and ``on_timer`` may ``yield`` their outputs or return an iterable (or ``None`` for none);
the task consumes either, in order.

Functions are pickled on the client and unpickled in every subtask, so they must be
picklable: create connections, clients, locks and files in ``open()``, not ``__init__``.
``open()`` is called once per subtask before the first record, ``close()`` after the
last one (it is not called if the task fails before ``open()`` completes).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any

from weir.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from weir.datastream.timerservice import TimerService

__all__ = [
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "MapFunction",
    "Partitioner",
    "ProcessFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "SourceFunction",
]


class RuntimeContext(abc.ABC):
    """What a function sees of the subtask it runs in. The task provides the implementation."""

    @abc.abstractmethod
    def get_task_name(self) -> str:
        pass

    @abc.abstractmethod
    def get_number_of_parallel_subtasks(self) -> int:
        pass

    @abc.abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int:
        pass

    @abc.abstractmethod
    def get_index_of_this_subtask(self) -> int:
        pass

    @abc.abstractmethod
    def get_attempt_number(self) -> int:
        pass

    @abc.abstractmethod
    def get_task_name_with_subtasks(self) -> str:
        pass

    @abc.abstractmethod
    def get_job_parameter(self, key: str, default_value: str) -> str:
        pass

    def get_metrics_group(self) -> Any:
        msg = "metrics are not available yet"
        raise NotImplementedError(msg)

    @abc.abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState:
        """The keyed ValueState of the current key; only in operators on a KeyedStream."""

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        msg = "ListState is not available yet"
        raise NotImplementedError(msg)

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        msg = "MapState is not available yet"
        raise NotImplementedError(msg)

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        msg = "ReducingState is not available yet"
        raise NotImplementedError(msg)

    def get_aggregating_state(
            self, state_descriptor: AggregatingStateDescriptor) -> AggregatingState:
        msg = "AggregatingState is not available yet"
        raise NotImplementedError(msg)


class Function(abc.ABC):  # noqa: B024 - abstract by role; open/close are optional hooks
    """Base of every user function."""

    def open(self, runtime_context: RuntimeContext) -> None:  # noqa: B027 - optional hook
        """Called once per subtask before the first record."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Called once per subtask after the last record."""


class MapFunction(Function):
    @abc.abstractmethod
    def map(self, value: Any) -> Any:
        pass


class CoMapFunction(Function):
    @abc.abstractmethod
    def map1(self, value: Any) -> Any:
        pass

    @abc.abstractmethod
    def map2(self, value: Any) -> Any:
        pass


class FlatMapFunction(Function):
    @abc.abstractmethod
    def flat_map(self, value: Any) -> Iterable[Any] | None:
        """Yield (or return an iterable of) zero or more outputs."""


class CoFlatMapFunction(Function):
    @abc.abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None:
        pass

    @abc.abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None:
        pass


class ReduceFunction(Function):
    @abc.abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any:
        pass


class FilterFunction(Function):
    @abc.abstractmethod
    def filter(self, value: Any) -> bool:
        pass


class KeySelector(Function):
    @abc.abstractmethod
    def get_key(self, value: Any) -> Any:
        pass


class Partitioner(Function):
    @abc.abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The index in ``[0, num_partitions)`` of the subtask that gets ``key``."""


class ProcessFunction(Function):
    """Processes each element; may yield any number of outputs."""

    class Context(abc.ABC):
        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            """The timestamp of the current element, or None if it has none."""

    @abc.abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None:
        pass


class KeyedProcessFunction(Function):
    """Processes each element of a KeyedStream with keyed state and (later) timers."""

    class Context(abc.ABC):
        @abc.abstractmethod
        def get_current_key(self) -> Any:
            pass

        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any:
            pass

    @abc.abstractmethod
    def process_element(
            self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any] | None:
        pass

    def on_timer(self, timestamp: int,
                 ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[Any] | None:
        """Called when a timer fires; may yield outputs."""
        return None


class CoProcessFunction(Function):
    class Context(abc.ABC):
        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        pass

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        pass


class KeyedCoProcessFunction(Function):
    class Context(abc.ABC):
        @abc.abstractmethod
        def get_current_key(self) -> Any:
            pass

        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any:
            pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        pass

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        pass

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Any:
        return None


class SinkFunction(Function):
    """Receives every record: ``invoke(value, context)``; ``context`` may be None."""

    @abc.abstractmethod
    def invoke(self, value: Any, context: Any) -> None:
        pass


class SourceFunction(Function):
    """A non-parallel source (parallelism 1): ``run(ctx)`` emits with ``ctx.collect(value)``
    until the input ends or ``cancel()`` is called (from another thread)."""

    @abc.abstractmethod
    def run(self, ctx: Any) -> None:
        pass

    @abc.abstractmethod
    def cancel(self) -> None:
        pass
