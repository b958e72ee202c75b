"""Keyed states with a time-to-live (Flink's ``state/ttl``), written once over a small
storage interface that each backend supplies.

Each state stores its user value with the processing time of its last access, as a
tuple ``(value, last_access_ms)``: one per key for Value, Reducing and Aggregating
state, one per element for List state and one per entry for Map state, so that list
elements and map entries expire on their own. A value is expired once ``ttl_ms`` passed
since its last access. A read that finds it expired removes it and, unless the TTL says
``return_expired``, treats it as absent; with ``update_on_read`` a read restamps what it
returns. Both backends keep exactly these tuples, so their snapshots have one canonical
form (``unexpired`` drops what expired, for ``cleanup_full_snapshot``).

The storages resolve the backend's current key on every call, as the plain states do;
a backend's storage classes say where the stored values live (a dict of the heap, a
column family). States without a TTL never come here and pay nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from weir.core.state_ttl import StateTtl
from weir.taskmanager.state.heap_states import ListStateContents, MapStateReads

__all__ = [
    "EntryStorage",
    "ListStorage",
    "MapStorage",
    "TtlAggregatingState",
    "TtlListState",
    "TtlMapState",
    "TtlReducingState",
    "TtlValueState",
]

Clock = Callable[[], int]


class EntryStorage(Protocol):
    """The current key's one stored value (never None when present)."""

    def load(self) -> Any:
        """The stored value, or None when the key has none."""

    def save(self, stored: Any) -> None: ...

    def delete(self) -> None: ...


class ListStorage(EntryStorage, Protocol):
    """The current key's list of stored elements (``load`` gives a list or None)."""

    def append(self, stored: list[Any]) -> None:
        """Add elements after the stored ones, without reading those."""


class MapStorage(Protocol):
    """The current key's stored entries, by user key."""

    def load(self, user_key: Any) -> Any:
        """The stored value of ``user_key``, or None when absent."""

    def save(self, user_key: Any, stored: Any) -> None: ...

    def delete(self, user_key: Any) -> None: ...

    def entries(self) -> list[tuple[Any, Any]]:
        """Every ``(user_key, stored)`` of the current key, as a list taken now."""

    def clear(self) -> None: ...


class _TtlState:
    __slots__ = ("_clock_ms", "name", "ttl")

    def __init__(self, name: str, ttl: StateTtl, clock_ms: Clock) -> None:
        self.name = name
        self.ttl = ttl
        self._clock_ms = clock_ms

    def _expired(self, last_access_ms: int, now: int) -> bool:
        return now - last_access_ms >= self.ttl.ttl_ms


class _TtlSingleValue(_TtlState):
    """One ``(value, last_access_ms)`` per key: Value, Reducing and Aggregating state."""

    __slots__ = ("_storage",)

    def __init__(self, name: str, storage: EntryStorage, ttl: StateTtl, clock_ms: Clock) -> None:
        super().__init__(name, ttl, clock_ms)
        self._storage = storage

    def _read(self) -> Any:
        """The current key's value (None when absent), with the TTL's read semantics."""
        stored = self._storage.load()
        if stored is None:
            return None
        value, last_access_ms = stored
        now = self._clock_ms()
        if self._expired(last_access_ms, now):
            self._storage.delete()
            return value if self.ttl.return_expired else None
        if self.ttl.update_on_read:
            self._storage.save((value, now))
        return value

    def _current_for_write(self) -> Any:
        """The value a write builds on: an expired one counts only with ``return_expired``;
        the write restamps the value, so a read refresh would be wasted."""
        stored = self._storage.load()
        if stored is None:
            return None
        if self._expired(stored[1], self._clock_ms()) and not self.ttl.return_expired:
            return None
        return stored[0]

    def _write(self, value: Any) -> None:
        self._storage.save((value, self._clock_ms()))

    def clear(self) -> None:
        self._storage.delete()

    def unexpired(self, stored: Any, now: int) -> Any:
        """``stored`` if it has not expired at ``now``, else None (for snapshots)."""
        return stored if not self._expired(stored[1], now) else None


class TtlValueState(_TtlSingleValue):
    """ValueState with a TTL."""

    __slots__ = ()

    def value(self) -> Any:
        return self._read()

    def update(self, value: Any) -> None:
        if value is None:  # PyFlink: updating to null clears the state
            self.clear()
        else:
            self._write(value)


class TtlReducingState(_TtlSingleValue):
    """ReducingState with a TTL: ``add`` folds into the unexpired value and restamps it."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        name: str,
        storage: EntryStorage,
        ttl: StateTtl,
        clock_ms: Clock,
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(name, storage, ttl, clock_ms)
        self._reduce = reduce

    def get(self) -> Any:
        return self._read()

    def add(self, value: Any) -> None:
        current = self._current_for_write()
        self._write(value if current is None else self._reduce(current, value))


class TtlAggregatingState(_TtlSingleValue):
    """AggregatingState with a TTL on its accumulator."""

    __slots__ = ("_function",)

    def __init__(
        self, name: str, storage: EntryStorage, ttl: StateTtl, clock_ms: Clock, function: Any
    ) -> None:
        super().__init__(name, storage, ttl, clock_ms)
        self._function = function

    def get(self) -> Any:
        accumulator = self._read()
        return None if accumulator is None else self._function.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        accumulator = self._current_for_write()
        if accumulator is None:
            accumulator = self._function.create_accumulator()
        self._write(self._function.add(value, accumulator))


class TtlListState(_TtlState):
    """ListState with a TTL per element: the current key's list of ``(value, ts)``."""

    __slots__ = ("_storage",)

    def __init__(self, name: str, storage: ListStorage, ttl: StateTtl, clock_ms: Clock) -> None:
        super().__init__(name, ttl, clock_ms)
        self._storage = storage

    def get(self) -> list[Any]:
        elements = self._storage.load()
        if not elements:
            return ListStateContents()
        now = self._clock_ms()
        ttl_ms = self.ttl.ttl_ms
        alive = [e for e in elements if now - e[1] < ttl_ms]
        shown = elements if self.ttl.return_expired else alive
        values = ListStateContents([value for value, _ in shown])
        if self.ttl.update_on_read:
            alive = [(value, now) for value, _ in alive]
        elif len(alive) == len(elements):
            return values
        if alive:
            self._storage.save(alive)
        else:
            self._storage.delete()
        return values

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._storage.append([(value, self._clock_ms())])

    def add_all(self, values: list[Any]) -> None:
        now = self._clock_ms()
        stamped = [(value, now) for value in values]
        if stamped:
            self._storage.append(stamped)

    def update(self, values: list[Any]) -> None:
        now = self._clock_ms()
        stamped = [(value, now) for value in values] if values is not None else []
        if stamped:
            self._storage.save(stamped)
        else:
            self.clear()

    def clear(self) -> None:
        self._storage.delete()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())

    def unexpired(self, stored: list[tuple[Any, int]], now: int) -> Any:
        ttl_ms = self.ttl.ttl_ms
        return [e for e in stored if now - e[1] < ttl_ms] or None


class TtlMapState(MapStateReads, _TtlState):
    """MapState with a TTL per entry: the current key's user keys to ``(value, ts)``."""

    __slots__ = ("_storage",)

    def __init__(self, name: str, storage: MapStorage, ttl: StateTtl, clock_ms: Clock) -> None:
        _TtlState.__init__(self, name, ttl, clock_ms)
        self._storage = storage

    def _lookup(self, user_key: Any) -> Any:
        """The entry's value, or ``_ABSENT``, with the TTL's read semantics."""
        stored = self._storage.load(user_key)
        if stored is None:
            return _ABSENT
        value, last_access_ms = stored
        now = self._clock_ms()
        if self._expired(last_access_ms, now):
            self._storage.delete(user_key)
            return value if self.ttl.return_expired else _ABSENT
        if self.ttl.update_on_read:
            self._storage.save(user_key, (value, now))
        return value

    def _visible(self, *, read: bool = True) -> list[tuple[Any, Any]]:
        """The current key's entries a read may see; removes the expired ones and, for a
        read under OnReadAndWrite, restamps the others."""
        now = self._clock_ms()
        shown = []
        for user_key, (value, last_access_ms) in self._storage.entries():
            if self._expired(last_access_ms, now):
                self._storage.delete(user_key)
                if self.ttl.return_expired:
                    shown.append((user_key, value))
                continue
            shown.append((user_key, value))
            if read and self.ttl.update_on_read:
                self._storage.save(user_key, (value, now))
        return shown

    def _map(self) -> dict[Any, Any]:
        return dict(self._visible())

    def get(self, key: Any) -> Any:
        value = self._lookup(key)
        return None if value is _ABSENT else value

    def contains(self, key: Any) -> bool:
        return self._lookup(key) is not _ABSENT

    def put(self, key: Any, value: Any) -> None:
        self._storage.save(key, (value, self._clock_ms()))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if dict_value:
            now = self._clock_ms()
            for key, value in dict_value.items():
                self._storage.save(key, (value, now))

    def remove(self, key: Any) -> None:
        self._storage.delete(key)

    def clear(self) -> None:
        self._storage.clear()

    def _entries(self) -> list[tuple[Any, Any]]:
        return self._visible()

    def is_empty(self) -> bool:
        return not self._visible(read=False)

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def unexpired(self, stored: dict[Any, tuple[Any, int]], now: int) -> Any:
        ttl_ms = self.ttl.ttl_ms
        return {k: e for k, e in stored.items() if now - e[1] < ttl_ms} or None


_ABSENT = object()
