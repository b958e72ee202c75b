"""The read-only states a query returns (Flink's ``ImmutableValueState`` and its
siblings): a snapshot of one key's value; every method that would change it raises."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

from weir.core.errors import QueryableStateError
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


class ImmutableStateError(QueryableStateError, TypeError):
    """A queried state was written to: queries are read-only."""


def _refuse() -> NoReturn:
    msg = "a queried state is read-only: its value is a copy and cannot be changed"
    raise ImmutableStateError(msg)


class _ReadOnly:
    def clear(self) -> None:
        _refuse()


class ImmutableValueState(_ReadOnly, ValueState):
    def __init__(self, value: Any) -> None:
        self._value = value

    def value(self) -> Any:
        return self._value

    def update(self, value: Any) -> None:
        _refuse()


class ImmutableListState(_ReadOnly, ListState):
    def __init__(self, values: list[Any]) -> None:
        self._values = tuple(values)

    def get(self) -> Iterable[Any]:
        return self._values

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def add(self, value: Any) -> None:
        _refuse()

    def add_all(self, values: list[Any]) -> None:
        _refuse()

    def update(self, values: list[Any]) -> None:
        _refuse()


class ImmutableMapState(_ReadOnly, MapState):
    def __init__(self, mapping: dict[Any, Any]) -> None:
        self._mapping = dict(mapping)

    def get(self, key: Any) -> Any:
        return self._mapping.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._mapping

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self._mapping.items())

    def keys(self) -> Iterable[Any]:
        return list(self._mapping)

    def values(self) -> Iterable[Any]:
        return list(self._mapping.values())

    def is_empty(self) -> bool:
        return not self._mapping

    def put(self, key: Any, value: Any) -> None:
        _refuse()

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        _refuse()

    def remove(self, key: Any) -> None:
        _refuse()


class ImmutableReducingState(_ReadOnly, ReducingState):
    def __init__(self, value: Any) -> None:
        self._value = value

    def get(self) -> Any:
        return self._value

    def add(self, value: Any) -> None:
        _refuse()


class ImmutableAggregatingState(_ReadOnly, AggregatingState):
    def __init__(self, value: Any) -> None:
        self._value = value

    def get(self) -> Any:
        return self._value

    def add(self, value: Any) -> None:
        _refuse()


_BY_DESCRIPTOR: list[tuple[type, type]] = [
    (ValueStateDescriptor, ImmutableValueState),
    (ListStateDescriptor, ImmutableListState),
    (MapStateDescriptor, ImmutableMapState),
    (ReducingStateDescriptor, ImmutableReducingState),
    (AggregatingStateDescriptor, ImmutableAggregatingState),
]


def immutable_state_class(descriptor: Any) -> type:
    """The read-only state class of ``descriptor``'s kind; TypeError for a non-descriptor."""
    for descriptor_class, state_class in _BY_DESCRIPTOR:
        if isinstance(descriptor, descriptor_class):
            return state_class
    msg = (
        "get_kv_state needs the state's descriptor (ValueStateDescriptor, "
        f"ListStateDescriptor, MapStateDescriptor, ...) to know its kind; got {descriptor!r}"
    )
    raise TypeError(msg)


def immutable_state(descriptor: Any, value: Any) -> Any:
    """The read-only state of ``descriptor``'s kind holding ``value``."""
    return immutable_state_class(descriptor)(value)
