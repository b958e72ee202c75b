"""The operators of a BroadcastConnectedStream (Flink's ``CoBroadcastWithNonKeyedOperator``
and ``CoBroadcastWithKeyedOperator``) and the contexts their functions get.

Input 0 is the non-broadcast stream: ``process_element(value, ctx)`` per record, with a
read-only view of the broadcast state (and, when keyed, the record's key, its keyed state
and timers). Input 1 is the broadcast stream, which every subtask receives whole:
``process_broadcast_element(value, ctx)`` may write the broadcast state, so each subtask
keeps the same copy of it. The broadcast states live in the operator's operator state
backend, which checkpoints each subtask's copy; those the ``broadcast(...)`` call declared
are registered at open, others when first asked for (as PyFlink allows).

The element side is the per-record path: it is the batch loop of the (keyed) process
functions, and the context resolves a broadcast state by its name with one dict lookup
to a view created once, so a record allocates nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from weir.taskmanager.operators.base import OperatorSetup, Output, StreamOperator
from weir.taskmanager.operators.batch_loops import bind_keyed_process, bind_process
from weir.taskmanager.operators.contexts import KeyedProcessContext, ProcessContext, TimerService
from weir.taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    required_method,
)
from weir.taskmanager.operators.process_timers import (
    FiresProcessFunctionTimers,
    ProcessFunctionTimers,
)
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.operator_state import (
    DefaultOperatorStateBackend,
    HeapBroadcastState,
    ReadOnlyBroadcastState,
)

__all__ = [
    "BroadcastStates",
    "CoBroadcastWithKeyedOperator",
    "CoBroadcastWithNonKeyedOperator",
]

# The keyed state getter of the RuntimeContext for each kind of descriptor, by class name
# (the services do not import the user API's descriptor classes).
_KEYED_STATE_GETTERS = {
    "ValueStateDescriptor": "get_state",
    "ListStateDescriptor": "get_list_state",
    "MapStateDescriptor": "get_map_state",
    "ReducingStateDescriptor": "get_reducing_state",
    "AggregatingStateDescriptor": "get_aggregating_state",
}

_BROADCAST_SIDE_TIMERS = (
    "timers can only be set in process_element() and on_timer(), where an element's or "
    "timer's key is current; process_broadcast_element() has no key"
)


class BroadcastStates:
    """The broadcast states of one operator in one subtask, by name: each writable (the
    broadcast side) and as its read-only view (the element side)."""

    __slots__ = ("_store", "_writable", "read_only_by_name")

    def __init__(self, store: DefaultOperatorStateBackend, declared: Sequence[Any]) -> None:
        self._store = store
        self._writable: dict[str, HeapBroadcastState] = {}
        self.read_only_by_name: dict[str, ReadOnlyBroadcastState] = {}
        """The read-only views by state name; the element-side contexts look them up here."""
        for descriptor in declared:
            self._register(descriptor)

    def _register(self, descriptor: Any) -> HeapBroadcastState:
        state = self._store.get_broadcast_state(descriptor)
        self._writable[state.name] = state
        self.read_only_by_name[state.name] = state.read_only
        return state

    def writable(self, descriptor: Any) -> HeapBroadcastState:
        try:
            return self._writable[descriptor.name]
        except (KeyError, AttributeError):
            return self._register(descriptor)

    def read_only(self, descriptor: Any) -> ReadOnlyBroadcastState:
        try:
            return self.read_only_by_name[descriptor.name]
        except (KeyError, AttributeError):
            return self._register(descriptor).read_only


class BroadcastReadOnlyContext(ProcessContext):
    """``BroadcastProcessFunction.ReadOnlyContext``: the element's timestamp, time, side
    outputs, and the broadcast state, read-only."""

    __slots__ = ("_read_only", "_states")

    def __init__(self, timers: TimerService, output: Output, states: BroadcastStates) -> None:
        super().__init__(timers, output)
        self._states = states
        self._read_only = states.read_only_by_name

    def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState:
        # The per-record path: one dict lookup by name (the dict grows as states register).
        try:
            return self._read_only[state_descriptor.name]
        except (KeyError, AttributeError):
            return self._states.read_only(state_descriptor)


class KeyedBroadcastReadOnlyContext(KeyedProcessContext):
    """``KeyedBroadcastProcessFunction.ReadOnlyContext`` and ``OnTimerContext``: adds the
    current key, timers and, in ``on_timer``, the time domain."""

    __slots__ = ("_read_only", "_states")

    def __init__(self, timers: TimerService, output: Output, states: BroadcastStates) -> None:
        super().__init__(timers, output)
        self._states = states
        self._read_only = states.read_only_by_name

    def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState:
        # The per-record path: one dict lookup by name (the dict grows as states register).
        try:
            return self._read_only[state_descriptor.name]
        except (KeyError, AttributeError):
            return self._states.read_only(state_descriptor)


class BroadcastContext(ProcessContext):
    """``BroadcastProcessFunction.Context`` (the broadcast side): the broadcast state,
    writable."""

    __slots__ = ("_states",)

    def __init__(self, timers: TimerService, output: Output, states: BroadcastStates) -> None:
        super().__init__(timers, output)
        self._states = states

    def get_broadcast_state(self, state_descriptor: Any) -> HeapBroadcastState:
        return self._states.writable(state_descriptor)


class KeyedBroadcastContext(BroadcastContext):
    """``KeyedBroadcastProcessFunction.Context``: adds ``apply_to_keyed_state``."""

    __slots__ = ("_backend", "_runtime_context")

    def __init__(
        self,
        timers: TimerService,
        output: Output,
        states: BroadcastStates,
        backend: KeyedStateBackend,
        runtime_context: StreamingRuntimeContext,
    ) -> None:
        super().__init__(timers, output, states)
        self._backend = backend
        self._runtime_context = runtime_context

    def apply_to_keyed_state(self, state_descriptor: Any, function: Any) -> None:
        """``function.process(key, state)`` (or ``function(key, state)``) for every key of
        this subtask with a value in the state of ``state_descriptor``."""
        process = getattr(function, "process", None)
        if not callable(process):
            if not callable(function):
                msg = (
                    "apply_to_keyed_state() takes a KeyedStateFunction (process(key, state)) "
                    f"or a callable(key, state); got {type(function).__name__!r}"
                )
                raise TypeError(msg)
            process = function
        state = self._keyed_state(state_descriptor)
        backend = self._backend
        previous = backend.current_key
        try:
            # A copy: the function may clear the state of the key it is given.
            for key in backend.get_keys(state_descriptor.name):
                backend.current_key = key
                process(key, state)
        finally:
            backend.current_key = previous

    def _keyed_state(self, descriptor: Any) -> Any:
        for cls in type(descriptor).__mro__:
            getter = _KEYED_STATE_GETTERS.get(cls.__name__)
            if getter is not None:
                return getattr(self._runtime_context, getter)(descriptor)
        msg = (
            "apply_to_keyed_state() takes the descriptor of a keyed state (ValueState"
            "Descriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor "
            f"or AggregatingStateDescriptor); got {descriptor!r}"
        )
        raise TypeError(msg)


class _BroadcastOperator(StreamOperator):
    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]

    def _states(self) -> BroadcastStates:
        declared = self.setup.payload.get("broadcast_state_descriptors") or ()
        return BroadcastStates(self.setup.operator_state_backend, declared)

    def _methods(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        return (
            required_method(self.function, "process_element", self.name),
            required_method(self.function, "process_broadcast_element", self.name),
        )

    def close(self) -> None:
        close_function(self.function)


class CoBroadcastWithNonKeyedOperator(_BroadcastOperator):
    """A BroadcastProcessFunction after a non-keyed stream."""

    def open(self, output: Output) -> None:
        super().open(output)
        states = self._states()
        open_function(self.function, self.setup.runtime_context)
        process_element, process_broadcast_element = self._methods()
        timers = TimerService(self.setup.clock_ms, owner=self)
        collect = output.routing_tagged_results()
        self.process = bind_process(
            process_element, BroadcastReadOnlyContext(timers, output, states), collect
        )
        self.process2 = bind_process(
            process_broadcast_element, BroadcastContext(timers, output, states), collect
        )


class CoBroadcastWithKeyedOperator(FiresProcessFunctionTimers, _BroadcastOperator):
    """A KeyedBroadcastProcessFunction after a keyed stream: keyed state and timers on the
    element side (and in ``on_timer``), ``apply_to_keyed_state`` on the broadcast side."""

    def open(self, output: Output) -> None:
        super().open(output)
        setup = self.setup
        backend = setup.keyed_state_backend
        selectors = setup.payload.get("key_selectors") or ()
        if backend is None or not selectors or selectors[0] is None:
            msg = f"operator {self.name!r}: a KeyedBroadcastProcessFunction needs a keyed input"
            raise TypeError(msg)
        key = key_selector(selectors[0])
        states = self._states()
        collect = output.routing_tagged_results()
        self.user_timers = ProcessFunctionTimers(
            self,
            self.function,
            backend,
            collect,
            on_timer_context=lambda timers: KeyedBroadcastReadOnlyContext(timers, output, states),
        )
        open_function(self.function, setup.runtime_context)
        process_element, process_broadcast_element = self._methods()
        element_ctx = KeyedBroadcastReadOnlyContext(self.user_timers.timer_service, output, states)
        broadcast_timers = TimerService(
            setup.clock_ms, owner=self, no_timers=_BROADCAST_SIDE_TIMERS
        )
        broadcast_ctx = KeyedBroadcastContext(
            broadcast_timers, output, states, backend, setup.runtime_context
        )
        self.process = bind_keyed_process(process_element, key, backend, element_ctx, collect)
        self.process2 = bind_process(process_broadcast_element, broadcast_ctx, collect)
