"""RuntimeContext: what a user function sees of its subtask (PyFlink's RuntimeContext)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from weir.core.state_ttl import StateTtl
from weir.metrics.metricbase import MetricGroup
from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    StateAccessError,
    ValueState,
    serializer_name,
)


def _state_name(descriptor: Any) -> str:
    name = getattr(descriptor, "name", None)
    if name is None and hasattr(descriptor, "get_name"):
        name = descriptor.get_name()
    if not isinstance(name, str):
        msg = f"a state descriptor with a name was expected; got {descriptor!r}"
        raise TypeError(msg)
    return name


def _serializer(descriptor: Any) -> str:
    """The declared type of a descriptor's values, as ``StateMeta`` names it."""
    if hasattr(descriptor, "key_type_info"):  # MapStateDescriptor: both of its types
        key = getattr(descriptor, "key_type_info", None)
        value = getattr(descriptor, "value_type_info", None)
        if key is None and value is None:
            return serializer_name(None)
        return f"{serializer_name(key)} -> {serializer_name(value)}"
    return serializer_name(getattr(descriptor, "type_info", None))


class StreamingRuntimeContext:
    """One per operator and subtask; handed to ``open(runtime_context)``."""

    def __init__(
        self,
        *,
        task_name: str,
        task_name_with_subtasks: str,
        number_of_parallel_subtasks: int,
        max_number_of_parallel_subtasks: int,
        index_of_this_subtask: int,
        attempt_number: int,
        job_parameters: Mapping[str, str],
        keyed_state_backend: KeyedStateBackend | None = None,
        metric_group: MetricGroup | None = None,
        register_queryable: Callable[[str, Callable[[], Any]], None] | None = None,
    ) -> None:
        self._task_name = task_name
        self._task_name_with_subtasks = task_name_with_subtasks
        self._number_of_parallel_subtasks = number_of_parallel_subtasks
        self._max_number_of_parallel_subtasks = max_number_of_parallel_subtasks
        self._index_of_this_subtask = index_of_this_subtask
        self._attempt_number = attempt_number
        self._job_parameters = dict(job_parameters)
        self._keyed_state_backend = keyed_state_backend
        self._metric_group = metric_group
        # (queryable state name, read of the current key's value): the task registers it
        # with its TaskManager's KvStateRegistry and the JobMaster.
        self._register_queryable = register_queryable
        self._queryable_names: set[str] = set()

    def get_task_name(self) -> str:
        """The name of the task in which the function runs, as assigned in the plan."""
        return self._task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._number_of_parallel_subtasks

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._max_number_of_parallel_subtasks

    def get_index_of_this_subtask(self) -> int:
        """0 .. parallelism-1."""
        return self._index_of_this_subtask

    def get_attempt_number(self) -> int:
        """The first attempt is numbered 0."""
        return self._attempt_number

    def get_task_name_with_subtasks(self) -> str:
        """The task name, the subtask and the attempt number, as PyFlink gives it:
        ``"MyTask (3/6)#0"``."""
        return f"{self._task_name_with_subtasks}#{self._attempt_number}"

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        """The root metric group of this operator (PyFlink's ``get_metrics_group``):
        register counters, gauges, meters and distributions in ``open``; the TaskManager
        reports them through the REST API and its Prometheus endpoint.

        Example::

            def open(self, runtime_context):
                self.seen = runtime_context.get_metrics_group().counter("seen")
        """
        if self._metric_group is None:
            msg = "this runtime context has no metric group (it was made outside a task)"
            raise RuntimeError(msg)
        return self._metric_group

    def _backend(self, what: str, state_descriptor: Any) -> KeyedStateBackend:
        backend = self._keyed_state_backend
        if backend is None:
            msg = (
                f"{what}({_state_name(state_descriptor)!r}): keyed state is only accessible "
                "by functions executed on a KeyedStream; call key_by() first"
            )
            raise StateAccessError(msg)
        return backend

    def _queryable(self, state_descriptor: Any, read: Callable[[], Any]) -> None:
        """Register the state as queryable when its descriptor says so (once per name)."""
        name = getattr(state_descriptor, "queryable_state_name", None)
        if name is None or self._register_queryable is None:
            return
        if name in self._queryable_names:
            return
        self._queryable_names.add(name)
        self._register_queryable(name, read)

    def get_state(self, state_descriptor: Any) -> ValueState:
        """The ValueState of ``state_descriptor`` for the current key."""
        backend = self._backend("get_state", state_descriptor)
        state = backend.get_value_state(
            _state_name(state_descriptor),
            StateTtl.of_descriptor(state_descriptor),
            _serializer(state_descriptor),
        )
        self._queryable(state_descriptor, state.value)
        return state

    def get_list_state(self, state_descriptor: Any) -> Any:
        backend = self._backend("get_list_state", state_descriptor)
        state = backend.get_list_state(
            _state_name(state_descriptor),
            StateTtl.of_descriptor(state_descriptor),
            _serializer(state_descriptor),
        )
        self._queryable(state_descriptor, lambda: list(state.get() or ()))
        return state

    def get_map_state(self, state_descriptor: Any) -> Any:
        backend = self._backend("get_map_state", state_descriptor)
        state = backend.get_map_state(
            _state_name(state_descriptor),
            StateTtl.of_descriptor(state_descriptor),
            _serializer(state_descriptor),
        )
        self._queryable(state_descriptor, lambda: dict(state.items()))
        return state

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        backend = self._backend("get_reducing_state", state_descriptor)
        function = state_descriptor.get_reduce_function()
        reduce = getattr(function, "reduce", function)  # a ReduceFunction or a callable
        state = backend.get_reducing_state(
            _state_name(state_descriptor),
            reduce,
            StateTtl.of_descriptor(state_descriptor),
            _serializer(state_descriptor),
        )
        self._queryable(state_descriptor, state.get)
        return state

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        backend = self._backend("get_aggregating_state", state_descriptor)
        state = backend.get_aggregating_state(
            _state_name(state_descriptor),
            state_descriptor.get_agg_function(),
            StateTtl.of_descriptor(state_descriptor),
            _serializer(state_descriptor),
        )
        self._queryable(state_descriptor, state.get)
        return state
