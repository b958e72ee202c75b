"""The bottom of the user-function interfaces: ``Function``, which every user function
subclasses, and ``RuntimeContext``, what a function sees of its subtask. The families of
functions build on these in modules of their own (``functions``, ``window_functions``,
``broadcast_functions``, ``async_functions``, ``batch_functions``); PyFlink programs import
them all from ``weir.datastream.functions``."""

from __future__ import annotations

import abc
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

__all__ = ["Function", "RuntimeContext"]


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

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """The keyed ListState of the current key."""

    @abc.abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        """The keyed MapState of the current key."""

    @abc.abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        """The keyed ReducingState of the current key."""

    @abc.abstractmethod
    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState:
        """The keyed AggregatingState of the current key."""


class Function(abc.ABC):  # noqa: B024 - abstract by role; open/close are optional hooks
    """Base of every user function."""

    def open(self, runtime_context: RuntimeContext) -> None:  # noqa: B027 - optional hook
        """Called once per subtask before the first record."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Called once per subtask after the last record."""
