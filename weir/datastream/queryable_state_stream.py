"""``KeyedStream.as_queryable_state``: a sink that keeps each key's latest value (or a
reduction of its values) as queryable state (Flink's ``QueryableStateStream`` and its
``QueryableValueStateOperator`` / ``QueryableAppendingStateOperator``)."""

from __future__ import annotations

from typing import Any

from weir.datastream.functions import KeyedProcessFunction
from weir.datastream.state import ReducingStateDescriptor, ValueStateDescriptor


class QueryableStateStream:
    """What ``as_queryable_state`` returns: the name, the state's descriptor and the key
    type to query it with. It is a sink: nothing flows out of it."""

    def __init__(self, queryable_state_name: str, state_descriptor: Any, key_type: Any) -> None:
        self._queryable_state_name = queryable_state_name
        self._state_descriptor = state_descriptor
        self._key_type = key_type

    def get_queryable_state_name(self) -> str:
        return self._queryable_state_name

    def get_state_descriptor(self) -> Any:
        return self._state_descriptor

    def get_key_type(self) -> Any:
        return self._key_type


class QueryableStateFunction(KeyedProcessFunction):
    """Puts every element into the key's state: ``update`` for a ValueState (the latest
    element), ``add`` for a ReducingState (the reduction so far). Emits nothing."""

    def __init__(self, state_descriptor: ValueStateDescriptor | ReducingStateDescriptor):
        self._descriptor = state_descriptor
        self._put: Any = None

    def open(self, runtime_context: Any) -> None:
        if isinstance(self._descriptor, ReducingStateDescriptor):
            self._put = runtime_context.get_reducing_state(self._descriptor).add
        else:
            self._put = runtime_context.get_state(self._descriptor).update

    def process_element(self, value: Any, ctx: Any) -> None:
        self._put(value)


def queryable_state_descriptor(
    queryable_state_name: str, state_descriptor: Any, default_name: str, value_type: Any
) -> ValueStateDescriptor | ReducingStateDescriptor:
    """The descriptor ``as_queryable_state`` keeps its state with, made queryable."""
    if state_descriptor is None:
        state_descriptor = ValueStateDescriptor(default_name, value_type)
    if not isinstance(state_descriptor, (ValueStateDescriptor, ReducingStateDescriptor)):
        msg = (
            "as_queryable_state keeps a ValueStateDescriptor (the latest element) or a "
            f"ReducingStateDescriptor (their reduction); got {state_descriptor!r}. There "
            "is no queryable ListState sink: the list would grow without end"
        )
        raise TypeError(msg)
    if state_descriptor.get_queryable_state_name() != queryable_state_name:
        state_descriptor.set_queryable(queryable_state_name)
    return state_descriptor
