"""Operator state: the non-keyed state of one operator in one subtask (Flink's
``DefaultOperatorStateBackend``).

Three kinds, each named by its descriptor and kept on the heap:

- list state (``get_list_state``): a list of elements; on restore at another parallelism
  the elements of all subtasks are split between the new ones;
- union list state (``get_union_list_state``): a list of elements; on any restore every
  subtask gets the elements of all subtasks;
- broadcast state (``get_broadcast_state``): a map that every subtask holds the same copy
  of (a broadcast input writes it identically everywhere); on restore each subtask gets
  one copy.

The raw ``snapshot_state(checkpoint_id) -> bytes`` of a user function that is no
CheckpointedFunction is kept here too, as a one-element list state of a reserved name.

Snapshot format: one stream per operator and subtask, a sequence of elements, each a u32
big-endian length followed by ``serialize_batch([element])`` (marshal when the element
allows, else pickle). Each state becomes one ``OperatorStatePartition`` of the handle: its
name, its distribution mode and the offset of each of its elements in the stream. A
list state's elements are its elements; a broadcast state is a single element, the dict
of its entries. Offsets address elements one by one, so the JobMaster can hand any
subset of a subtask's list elements (or its whole broadcast state) to another subtask
without reading the stream (``repartition_operator_state``).

Everything runs on the task thread; nothing takes locks.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from weir.core.checkpoint import OperatorStateDistributionMode, OperatorStatePartition
from weir.core.errors import CorruptCheckpointError, StateMigrationError, WeirError
from weir.core.serializers import deserialize_batch, serialize_batch
from weir.taskmanager.state.backend import StateAccessError
from weir.taskmanager.state.heap_states import MapStateIterator, MapStateReads

__all__ = [
    "RAW_FUNCTION_STATE",
    "DefaultOperatorStateBackend",
    "HeapBroadcastState",
    "OperatorStateSnapshot",
    "PartitionableListState",
    "ReadOnlyBroadcastState",
    "ReadOnlyBroadcastStateError",
]

_SPLIT = OperatorStateDistributionMode.SPLIT_DISTRIBUTE
_UNION = OperatorStateDistributionMode.UNION
_BROADCAST = OperatorStateDistributionMode.BROADCAST
_LENGTH = struct.Struct(">I")

RAW_FUNCTION_STATE = "_weir_function_state"
"""The list state holding what a raw-form ``snapshot_state(checkpoint_id)`` returned."""


class ReadOnlyBroadcastStateError(WeirError, AttributeError, TypeError):
    """Broadcast state was changed where it is read-only: in ``process_element`` or
    ``on_timer``. An AttributeError (PyFlink's read-only state has no ``put``) and a
    TypeError (nor item assignment), so code written for PyFlink catches it as there."""


def _descriptor_name(what: str, descriptor: Any) -> str:
    name = getattr(descriptor, "name", None)
    if not isinstance(name, str):
        msg = f"{what}() takes a state descriptor with a name; got {descriptor!r}"
        raise TypeError(msg)
    if getattr(descriptor, "_ttl_config", None) is not None:
        msg = (
            f"{what}({name!r}): operator state has no time-to-live (as in Flink); drop "
            "enable_time_to_live() from its descriptor"
        )
        raise StateAccessError(msg)
    return name


@dataclass(frozen=True, slots=True)
class OperatorStateSnapshot:
    """The operator state of one operator in one subtask: the stream and what is where."""

    data: bytes
    partitions: tuple[OperatorStatePartition, ...]


class PartitionableListState:
    """A list state or union list state (Flink's ``PartitionableListState``): the same
    ListState methods as keyed list state, over one list."""

    __slots__ = ("_elements", "mode", "name")

    def __init__(self, name: str, mode: OperatorStateDistributionMode) -> None:
        self.name = name
        self.mode = mode
        self._elements: list[Any] = []

    def get(self) -> list[Any]:
        """A copy of the elements, in the order they were added."""
        return list(self._elements)

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._elements.append(value)

    def add_all(self, values: list[Any]) -> None:
        values = list(values)
        if any(v is None for v in values):
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._elements.extend(values)

    def update(self, values: list[Any]) -> None:
        """Replaces the elements with ``values`` (``update([])`` clears)."""
        self._elements = []
        self.add_all(values if values is not None else [])

    def clear(self) -> None:
        self._elements = []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class HeapBroadcastState(MapStateReads):
    """PyFlink's BroadcastState: a map of this subtask's copy of the broadcast state, read
    and written with the MapState methods. ``read_only`` is its view for the
    non-broadcast side."""

    __slots__ = ("_content", "name", "read_only")

    def __init__(self, name: str) -> None:
        self.name = name
        self._content: dict[Any, Any] = {}
        self.read_only = ReadOnlyBroadcastState(self)

    def _map(self) -> dict[Any, Any]:
        return self._content

    def get(self, key: Any) -> Any:
        return self._content.get(key)

    def put(self, key: Any, value: Any) -> None:
        self._content[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._content.update(dict_value)

    def remove(self, key: Any) -> None:
        self._content.pop(key, None)

    def clear(self) -> None:
        self._content.clear()

    def __getitem__(self, key: Any) -> Any:
        return self._content.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._content[key] = value

    def __delitem__(self, key: Any) -> None:
        self._content.pop(key, None)


class ReadOnlyBroadcastState:
    """PyFlink's ReadOnlyBroadcastState: the broadcast state as the non-broadcast side of
    a broadcast process function sees it. It reads the same map without copying (do not
    change the values it returns). Writing it raises ReadOnlyBroadcastStateError: every
    subtask must hold the same broadcast state, so only ``process_broadcast_element``,
    which every subtask runs for every broadcast element, may change it. ``clear()``
    empties it, as in PyFlink and Flink.

    ``get`` and ``contains`` are the map's own (C) methods, bound once: they are what the
    element side calls per record."""

    __slots__ = ("_content", "_name", "contains", "get")

    def __init__(self, state: HeapBroadcastState) -> None:
        content = state._content  # the state keeps this dict for good (cleared in place)
        self._content = content
        self._name = state.name
        self.get: Callable[[Any], Any] = content.get
        self.contains: Callable[[Any], bool] = content.__contains__

    def items(self) -> MapStateIterator:
        return MapStateIterator(list(self._content.items()), 2, self._refuse_remove)

    def keys(self) -> MapStateIterator:
        return MapStateIterator(list(self._content.items()), 0, self._refuse_remove)

    def values(self) -> MapStateIterator:
        return MapStateIterator(list(self._content.items()), 1, self._refuse_remove)

    def is_empty(self) -> bool:
        return not self._content

    def clear(self) -> None:
        self._content.clear()

    def __getitem__(self, key: Any) -> Any:
        return self._content.get(key)

    def __contains__(self, key: Any) -> bool:
        return key in self._content

    def __iter__(self) -> Iterator[Any]:
        return self.keys()

    # No put, put_all or remove: reading them raises (an AttributeError, so hasattr() is
    # False, as for PyFlink's read-only state), saying where to write instead.
    @property
    def put(self) -> NoReturn:
        self._refuse("put()")

    @property
    def put_all(self) -> NoReturn:
        self._refuse("put_all()")

    @property
    def remove(self) -> NoReturn:
        self._refuse("remove()")

    def __setitem__(self, key: Any, value: Any) -> None:
        self._refuse("item assignment")

    def __delitem__(self, key: Any) -> None:
        self._refuse("item deletion")

    def _refuse_remove(self, _key: Any) -> None:
        self._refuse("remove()")

    def _refuse(self, what: str) -> NoReturn:
        msg = (
            f"broadcast state {self._name!r} is read-only in process_element() and "
            f"on_timer(), so {what} is not allowed there: change it in "
            "process_broadcast_element(), which every parallel instance runs for every "
            "broadcast element, so that all instances keep the same state"
        )
        raise ReadOnlyBroadcastStateError(msg)


class DefaultOperatorStateBackend:
    """The operator state of one operator in one subtask; PyFlink's OperatorStateStore
    (``get_broadcast_state``) plus Flink's ``get_list_state`` and
    ``get_union_list_state``. Each ``get_*`` returns the same object for a name."""

    def __init__(self) -> None:
        self._lists: dict[str, PartitionableListState] = {}
        self._broadcast: dict[str, HeapBroadcastState] = {}
        self._raw: bytes | None = None
        self._restored_raw: list[bytes] = []

    # -- the store functions see ------------------------------------------------------
    def get_list_state(self, state_descriptor: Any) -> PartitionableListState:
        """List state: split between the subtasks when restored at another parallelism."""
        return self._list(_descriptor_name("get_list_state", state_descriptor), _SPLIT)

    def get_union_list_state(self, state_descriptor: Any) -> PartitionableListState:
        """Union list state: every subtask gets every subtask's elements on restore."""
        return self._list(_descriptor_name("get_union_list_state", state_descriptor), _UNION)

    def get_broadcast_state(self, state_descriptor: Any) -> HeapBroadcastState:
        """The broadcast state of a MapStateDescriptor, created empty on first use."""
        name = _descriptor_name("get_broadcast_state", state_descriptor)
        state = self._broadcast.get(name)
        if state is None:
            if name in self._lists:
                msg = (
                    f"operator state {name!r} is a list state; a broadcast state needs another name"
                )
                raise StateAccessError(msg)
            state = self._broadcast[name] = HeapBroadcastState(name)
        return state

    def _list(self, name: str, mode: OperatorStateDistributionMode) -> PartitionableListState:
        state = self._lists.get(name)
        if state is None:
            if name in self._broadcast:
                msg = (
                    f"operator state {name!r} is a broadcast state; a list state needs another name"
                )
                raise StateAccessError(msg)
            state = self._lists[name] = PartitionableListState(name, mode)
        elif state.mode is not mode:
            msg = (
                f"operator state {name!r} is a {_kind(state.mode)}, not a {_kind(mode)}: "
                f"get it with {_getter(state.mode)}(), or give the {_kind(mode)} another name"
            )
            raise StateMigrationError(msg)
        return state

    # -- raw function state ---------------------------------------------------------------
    def set_raw_function_state(self, state: bytes | None) -> None:
        """What a raw-form ``snapshot_state(checkpoint_id)`` returned, for this snapshot."""
        self._raw = state

    def restored_raw_function_states(self) -> list[bytes]:
        """The raw function states the restored checkpoint gave this subtask (one at the
        same parallelism, if the function had any)."""
        return list(self._restored_raw)

    # -- snapshot and restore -------------------------------------------------------------
    @property
    def is_empty(self) -> bool:
        return not self._lists and not self._broadcast and self._raw is None

    def snapshot(self) -> OperatorStateSnapshot | None:
        """Every registered state, serialized (so later changes do not reach the
        snapshot); None when there is none. Task thread, synchronous part."""
        if self.is_empty:
            return None
        chunks: list[bytes] = []
        position = 0

        def write(element: Any) -> int:
            nonlocal position
            blob = serialize_batch([element])
            chunks.append(_LENGTH.pack(len(blob)))
            chunks.append(blob)
            offset = position
            position += _LENGTH.size + len(blob)
            return offset

        partitions = [
            OperatorStatePartition(name, state.mode, tuple(write(e) for e in state._elements))
            for name, state in sorted(self._lists.items())
        ]
        partitions += [
            OperatorStatePartition(name, _BROADCAST, (write(dict(state._content)),))
            for name, state in sorted(self._broadcast.items())
        ]
        if self._raw is not None:
            partitions.append(
                OperatorStatePartition(RAW_FUNCTION_STATE, _SPLIT, (write(self._raw),))
            )
        return OperatorStateSnapshot(b"".join(chunks), tuple(partitions))

    def restore(self, streams: Sequence[tuple[bytes, Sequence[OperatorStatePartition]]]) -> None:
        """Load what the JobMaster assigned this subtask: ``(stream, its partitions for
        this subtask)`` per handle. Before the functions initialize their state."""
        for data, partitions in streams:
            for partition in partitions:
                elements = [_element_at(data, offset) for offset in partition.offsets]
                if partition.name == RAW_FUNCTION_STATE:
                    self._restored_raw.extend(elements)
                elif partition.mode is _BROADCAST:
                    state = self.get_broadcast_state(_Named(partition.name))
                    for entries in elements:  # copies of the same map
                        state._content.update(entries)
                else:
                    self._list(partition.name, partition.mode)._elements.extend(elements)


@dataclass(frozen=True, slots=True)
class _Named:
    name: str
    _ttl_config: None = None


def _element_at(data: bytes, offset: int) -> Any:
    if offset + _LENGTH.size > len(data):
        msg = f"operator state cut short: an element at byte {offset} of {len(data)}"
        raise CorruptCheckpointError(msg, path="<operator state>")
    (length,) = _LENGTH.unpack_from(data, offset)
    start = offset + _LENGTH.size
    if start + length > len(data):
        msg = f"operator state cut short: a {length}-byte element at byte {start}"
        raise CorruptCheckpointError(msg, path="<operator state>")
    return deserialize_batch(memoryview(data)[start : start + length])[0]


def _kind(mode: OperatorStateDistributionMode) -> str:
    return {_SPLIT: "list state", _UNION: "union list state"}.get(mode, "broadcast state")


def _getter(mode: OperatorStateDistributionMode) -> str:
    return "get_union_list_state" if mode is _UNION else "get_list_state"
