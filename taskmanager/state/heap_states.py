"""The hashmap backend's keyed state kinds: each a view of one ``dict`` of the backend,
resolved against the backend's current key on every access."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend


class HeapValueState:
    """ValueState over a dict; reads the key from the backend on each access."""

    __slots__ = ("_backend", "_table", "name")

    def __init__(self, backend: HashMapKeyedStateBackend, name: str, table: dict[Any, Any]):
        self._backend = backend
        self._table = table
        self.name = name

    def value(self) -> Any:
        return self._table.get(self._backend.current_key)

    def update(self, value: Any) -> None:
        if value is None:  # PyFlink: updating to null clears the state
            self._table.pop(self._backend.current_key, None)
        else:
            self._table[self._backend.current_key] = value

    def clear(self) -> None:
        self._table.pop(self._backend.current_key, None)


class _HeapState:
    """A state over one dict ``key -> value`` of the current key (read from the backend)."""

    __slots__ = ("_backend", "_table", "name")

    def __init__(self, backend: HashMapKeyedStateBackend, name: str, table: dict[Any, Any]):
        self._backend = backend
        self._table = table
        self.name = name

    def clear(self) -> None:
        self._table.pop(self._backend.current_key, None)


class ListStateContents(list):  # type: ignore[type-arg]
    """What ``ListState.get()`` returns: a copy of the elements that, like PyFlink's
    iterable, is true even when empty (``if state.get():`` holds for a fresh state)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True


class MapStateIterator:
    """What ``MapState.keys()``, ``values()`` and ``items()`` return, as PyFlink's: an
    iterator (read once) over the entries at the time of the call, whose ``remove()``
    drops the entry it returned last from the state."""

    __slots__ = ("_entries", "_index", "_last", "_part", "_remove")

    def __init__(
        self, entries: list[tuple[Any, Any]], part: int, remove: Callable[[Any], None]
    ) -> None:
        self._entries = entries
        self._part = part  # 0: keys, 1: values, 2: items
        self._remove = remove
        self._index = 0
        self._last: Any = _NOTHING

    def __iter__(self) -> MapStateIterator:
        return self

    def __next__(self) -> Any:
        index = self._index
        if index >= len(self._entries):
            raise StopIteration
        self._index = index + 1
        entry = self._entries[index]
        self._last = entry[0]
        return entry if self._part == 2 else entry[self._part]

    def remove(self) -> None:
        if self._last is _NOTHING:
            msg = "remove() needs an entry: call next() first, and remove each entry once"
            raise RuntimeError(msg)
        self._remove(self._last)
        self._last = _NOTHING


_NOTHING = object()


class HeapListState(_HeapState):
    """ListState: the current key's list (PyFlink's semantics: ``get()`` of an empty state
    is empty but true; ``update([])`` clears it)."""

    __slots__ = ()

    def get(self) -> list[Any]:
        return ListStateContents(self._table.get(self._backend.current_key, ()))

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._table.setdefault(self._backend.current_key, []).append(value)

    def add_all(self, values: list[Any]) -> None:
        values = list(values)
        if values:
            self._table.setdefault(self._backend.current_key, []).extend(values)

    def update(self, values: list[Any]) -> None:
        values = list(values) if values is not None else []
        if values:
            self._table[self._backend.current_key] = values
        else:
            self.clear()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapStateReads(abc.ABC):
    """The reading half of PyFlink's MapState over ``_map()``, the dict of the current
    key (and, for window state, namespace); shared by the map states that differ only
    in where that dict lives."""

    __slots__ = ()

    @abc.abstractmethod
    def _map(self) -> dict[Any, Any]:
        """The current map (empty when there is none); not to be modified."""

    def get(self, key: Any) -> Any:
        return self._map().get(key)

    def contains(self, key: Any) -> bool:
        return key in self._map()

    @abc.abstractmethod
    def remove(self, key: Any) -> None:
        """Drop ``key`` from the current map (what the iterators' ``remove()`` calls)."""

    def _entries(self) -> list[tuple[Any, Any]]:
        return list(self._map().items())

    def items(self) -> MapStateIterator:
        return MapStateIterator(self._entries(), 2, self.remove)

    def keys(self) -> MapStateIterator:
        return MapStateIterator(self._entries(), 0, self.remove)

    def values(self) -> MapStateIterator:
        return MapStateIterator(self._entries(), 1, self.remove)

    def is_empty(self) -> bool:
        return not self._map()

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return self.keys()


class HeapMapState(MapStateReads, _HeapState):
    """MapState: the current key's dict of user keys to values."""

    __slots__ = ()

    def _map(self) -> dict[Any, Any]:
        return self._table.get(self._backend.current_key) or {}

    def put(self, key: Any, value: Any) -> None:
        self._table.setdefault(self._backend.current_key, {})[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if dict_value:
            self._table.setdefault(self._backend.current_key, {}).update(dict_value)

    def remove(self, key: Any) -> None:
        current = self._table.get(self._backend.current_key)
        if current is not None:
            current.pop(key, None)
            if not current:
                self.clear()

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


class HeapReducingState(_HeapState):
    """ReducingState: ``add`` folds the value into the current key's with the function."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        reduce: Callable[[Any, Any], Any],
    ):
        super().__init__(backend, name, table)
        self._reduce = reduce

    def get(self) -> Any:
        return self._table.get(self._backend.current_key)

    def add(self, value: Any) -> None:
        key = self._backend.current_key
        current = self._table.get(key)
        self._table[key] = value if current is None else self._reduce(current, value)


class HeapAggregatingState(_HeapState):
    """AggregatingState: keeps an accumulator; ``get`` is ``get_result`` of it, ``add(None)``
    clears it (as PyFlink)."""

    __slots__ = ("_function",)

    def __init__(
        self, backend: HashMapKeyedStateBackend, name: str, table: dict[Any, Any], function: Any
    ):
        super().__init__(backend, name, table)
        self._function = function

    def get(self) -> Any:
        accumulator = self._table.get(self._backend.current_key)
        return None if accumulator is None else self._function.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        key = self._backend.current_key
        accumulator = self._table.get(key)
        if accumulator is None:
            accumulator = self._function.create_accumulator()
        self._table[key] = self._function.add(value, accumulator)


# --- storage of TTL states (weir.taskmanager.state.ttl) --------------------------------


class HeapEntry:
    """The current key's stored value in one dict of the backend."""

    __slots__ = ("_backend", "_table")

    def __init__(self, backend: HashMapKeyedStateBackend, table: dict[Any, Any]) -> None:
        self._backend = backend
        self._table = table

    def load(self) -> Any:
        return self._table.get(self._backend.current_key)

    def save(self, stored: Any) -> None:
        self._table[self._backend.current_key] = stored

    def delete(self) -> None:
        self._table.pop(self._backend.current_key, None)


class HeapListEntry(HeapEntry):
    """The current key's list of stored elements."""

    __slots__ = ()

    def append(self, stored: list[Any]) -> None:
        self._table.setdefault(self._backend.current_key, []).extend(stored)


class HeapMapEntries:
    """The current key's dict of user key to stored value (dropped once empty)."""

    __slots__ = ("_backend", "_table")

    def __init__(self, backend: HashMapKeyedStateBackend, table: dict[Any, Any]) -> None:
        self._backend = backend
        self._table = table

    def load(self, user_key: Any) -> Any:
        entries = self._table.get(self._backend.current_key)
        return None if entries is None else entries.get(user_key)

    def save(self, user_key: Any, stored: Any) -> None:
        self._table.setdefault(self._backend.current_key, {})[user_key] = stored

    def delete(self, user_key: Any) -> None:
        key = self._backend.current_key
        entries = self._table.get(key)
        if entries is not None:
            entries.pop(user_key, None)
            if not entries:
                del self._table[key]

    def entries(self) -> list[tuple[Any, Any]]:
        return list((self._table.get(self._backend.current_key) or {}).items())

    def clear(self) -> None:
        self._table.pop(self._backend.current_key, None)
