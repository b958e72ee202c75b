"""State descriptors and state interfaces (mirrors ``pyflink.datastream.state``).

A descriptor names a state and declares its type; ``RuntimeContext.get_state(descriptor)``
returns the state of the current key. The state backends implement the interfaces.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from weir.common.typeinfo import TypeInformation
from weir.datastream.state_ttl import StateTtlConfig

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "BroadcastState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "OperatorStateStore",
    "ReadOnlyBroadcastState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]


T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class State(abc.ABC):
    @abc.abstractmethod
    def clear(self) -> None:
        """Removes the value of the current key."""


class ValueState(State, Generic[T]):
    @abc.abstractmethod
    def value(self) -> Any:
        """The value of the current key, or None if it has none."""

    @abc.abstractmethod
    def update(self, value: Any) -> None:
        pass


class ListState(State):
    @abc.abstractmethod
    def get(self) -> Iterable[Any]:
        pass

    @abc.abstractmethod
    def add(self, value: Any) -> None:
        pass

    @abc.abstractmethod
    def add_all(self, values: list[Any]) -> None:
        pass

    @abc.abstractmethod
    def update(self, values: list[Any]) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapState(State, Generic[K, V]):
    @abc.abstractmethod
    def get(self, key: Any) -> Any:
        pass

    @abc.abstractmethod
    def put(self, key: Any, value: Any) -> None:
        pass

    @abc.abstractmethod
    def put_all(self, dict_value: dict[Any, Any]) -> None:
        pass

    @abc.abstractmethod
    def remove(self, key: Any) -> None:
        pass

    @abc.abstractmethod
    def contains(self, key: Any) -> bool:
        pass

    @abc.abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]:
        pass

    @abc.abstractmethod
    def keys(self) -> Iterable[Any]:
        pass

    @abc.abstractmethod
    def values(self) -> Iterable[Any]:
        pass

    @abc.abstractmethod
    def is_empty(self) -> bool:
        pass


class ReducingState(State):
    @abc.abstractmethod
    def get(self) -> Any:
        pass

    @abc.abstractmethod
    def add(self, value: Any) -> None:
        pass


class AggregatingState(State):
    @abc.abstractmethod
    def get(self) -> Any:
        pass

    @abc.abstractmethod
    def add(self, value: Any) -> None:
        pass


class ReadOnlyBroadcastState(State):
    """A read-only view of a BroadcastState: what ``process_element`` (and ``on_timer``) of a
    broadcast process function gets. Do not modify the values it returns: they are the
    state's own, not copies. ``put``, ``put_all`` and ``remove`` are refused here."""

    @abc.abstractmethod
    def get(self, key: Any) -> Any:
        """The value of ``key``, or None."""

    @abc.abstractmethod
    def contains(self, key: Any) -> bool:
        pass

    @abc.abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]:
        pass

    @abc.abstractmethod
    def keys(self) -> Iterable[Any]:
        pass

    @abc.abstractmethod
    def values(self) -> Iterable[Any]:
        pass

    @abc.abstractmethod
    def is_empty(self) -> bool:
        pass

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState):
    """The state of a BroadcastStream, declared by a MapStateDescriptor in
    ``broadcast(...)``: a map every parallel instance keeps its own copy of. Only
    ``process_broadcast_element`` may change it, and it must change it the same way in
    every instance (every instance sees every broadcast element), so that the copies stay
    equal; on recovery or rescaling each instance is given one of them."""

    @abc.abstractmethod
    def put(self, key: Any, value: Any) -> None:
        pass

    @abc.abstractmethod
    def put_all(self, dict_value: dict[Any, Any]) -> None:
        pass

    @abc.abstractmethod
    def remove(self, key: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


class OperatorStateStore(abc.ABC):
    """The operator (non-keyed) state of one parallel instance of an operator: broadcast
    state, as in PyFlink, and (beyond PyFlink, as in Flink) list and union list state for
    a ``CheckpointedFunction``, from ``context.get_operator_state_store()``."""

    @abc.abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
        """The BroadcastState described by ``state_descriptor`` (empty when new)."""

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """A list state whose elements are split between the parallel instances when
        the job is restored at another parallelism (each element goes to one of them)."""

    @abc.abstractmethod
    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """A list state of which every parallel instance gets the elements of all
        instances whenever the job is restored."""


class StateDescriptor(abc.ABC):  # noqa: B024 - a base no one instantiates directly
    """Names a state and declares the type of what it holds."""

    def __init__(self, name: str, type_info: TypeInformation | None) -> None:
        self.name = name
        self.type_info = type_info
        self._ttl_config: StateTtlConfig | None = None
        self.queryable_state_name: str | None = None

    def get_name(self) -> str:
        return self.name

    def set_queryable(self, queryable_state_name: str) -> None:
        """Makes the keyed state of this descriptor queryable from outside the job under
        ``queryable_state_name`` (Flink's ``StateDescriptor.setQueryable``), read with
        ``weir.queryablestate.QueryableStateClient`` while the job runs. The cluster must
        serve queryable state (``queryable-state.enable: true``). As in Flink, a state
        with a time-to-live cannot be queryable.

        Example::

            descriptor = ValueStateDescriptor("count", Types.LONG())
            descriptor.set_queryable("count-by-word")
        """
        if self._ttl_config is not None:
            msg = f"state {self.name!r}: queryable state is not supported with TTL"
            raise ValueError(msg)
        if self.queryable_state_name is not None:
            msg = f"state {self.name!r} is queryable as {self.queryable_state_name!r} already"
            raise ValueError(msg)
        if not isinstance(queryable_state_name, str) or not queryable_state_name:
            msg = f"a queryable state name must be a non-empty str; got {queryable_state_name!r}"
            raise ValueError(msg)
        self.queryable_state_name = queryable_state_name

    def get_queryable_state_name(self) -> str | None:
        """The name set by ``set_queryable``; None when the state is not queryable."""
        return self.queryable_state_name

    def is_queryable(self) -> bool:
        return self.queryable_state_name is not None

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Lets the state's values expire, become unreadable and be cleaned up as
        ``ttl_config`` says; see ``StateTtlConfig``."""
        if not isinstance(ttl_config, StateTtlConfig):
            msg = (
                f"enable_time_to_live({self.name!r}) takes a StateTtlConfig, built with "
                f"StateTtlConfig.new_builder(Time.seconds(...)).build(); got {ttl_config!r}"
            )
            raise TypeError(msg)
        if self.queryable_state_name is not None:
            msg = f"state {self.name!r}: queryable state is not supported with TTL"
            raise ValueError(msg)
        self._ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.type_info!r})"


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: TypeInformation | None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: TypeInformation | None) -> None:
        super().__init__(name, elem_type_info)
        self.elem_type_info = elem_type_info


class MapStateDescriptor(StateDescriptor):
    def __init__(
        self,
        name: str,
        key_type_info: TypeInformation | None,
        value_type_info: TypeInformation | None,
    ) -> None:
        super().__init__(name, None)
        self.key_type_info = key_type_info
        self.value_type_info = value_type_info


class ReducingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, reduce_function: Any, type_info: TypeInformation | None) -> None:
        super().__init__(name, type_info)
        self._reduce_function = reduce_function

    def get_reduce_function(self) -> Any:
        return self._reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(
        self, name: str, agg_function: Any, state_type_info: TypeInformation | None
    ) -> None:
        super().__init__(name, state_type_info)
        self._agg_function = agg_function

    def get_agg_function(self) -> Any:
        return self._agg_function
