"""The hashmap backend's keyed states with a time-to-live (Flink's ``state/ttl``).

Each stores its user value with the processing time of its last access, as a tuple
``(value, last_access_ms)``: one per key for Value, Reducing and Aggregating state, one
per element for List state and one per entry for Map state, so that list elements and
map entries expire on their own. A value is expired once ``ttl_ms`` passed since its
last access. A read that finds it expired removes it and, unless the TTL says
``return_expired``, treats it as absent.

States without a TTL do not come here: they keep the plain classes of
``weir.taskmanager.state.hashmap`` and pay nothing for this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.core.state_ttl import StateTtl
from weir.taskmanager.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
    ListStateContents,
)

if TYPE_CHECKING:
    from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

_ABSENT = object()


class _TtlSingleValue:
    """The read and write of one ``(value, last_access_ms)`` per key, shared by the Value,
    Reducing and Aggregating states (which keep ``_backend``, ``_table``, ``ttl`` and
    ``_clock_ms`` in their slots)."""

    __slots__ = ()
    _backend: HashMapKeyedStateBackend
    _table: dict[Any, Any]
    ttl: StateTtl
    _clock_ms: Callable[[], int]

    def _read(self) -> Any:
        """The current key's value (None when absent), with the TTL's read semantics."""
        key = self._backend.current_key
        stored = self._table.get(key)
        if stored is None:
            return None
        value, last_access_ms = stored
        now = self._clock_ms()
        if now - last_access_ms >= self.ttl.ttl_ms:
            del self._table[key]
            return value if self.ttl.return_expired else None
        if self.ttl.update_on_read:
            self._table[key] = (value, now)
        return value

    def _current_for_write(self) -> Any:
        """The value a write builds on: an expired one counts only with ``return_expired``;
        the write restamps the value, so a read refresh would be wasted."""
        stored = self._table.get(self._backend.current_key)
        if stored is None:
            return None
        if self._clock_ms() - stored[1] >= self.ttl.ttl_ms and not self.ttl.return_expired:
            return None
        return stored[0]

    def _write(self, value: Any) -> None:
        self._table[self._backend.current_key] = (value, self._clock_ms())

    def unexpired(self, stored: Any, now: int) -> Any:
        """``stored`` if it has not expired at ``now``, else None (for snapshots)."""
        return stored if now - stored[1] < self.ttl.ttl_ms else None


class TtlHeapValueState(_TtlSingleValue, HeapValueState):
    """ValueState with a TTL."""

    __slots__ = ("_clock_ms", "ttl")

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        *,
        ttl: StateTtl,
        clock_ms: Callable[[], int],
    ):
        super().__init__(backend, name, table)
        self.ttl = ttl
        self._clock_ms = clock_ms

    def value(self) -> Any:
        return self._read()

    def update(self, value: Any) -> None:
        if value is None:  # PyFlink: updating to null clears the state
            self.clear()
        else:
            self._write(value)


class TtlHeapReducingState(_TtlSingleValue, HeapReducingState):
    """ReducingState with a TTL: ``add`` folds into the unexpired value and restamps it."""

    __slots__ = ("_clock_ms", "ttl")

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        reduce: Callable[[Any, Any], Any],
        *,
        ttl: StateTtl,
        clock_ms: Callable[[], int],
    ):
        super().__init__(backend, name, table, reduce)
        self.ttl = ttl
        self._clock_ms = clock_ms

    def get(self) -> Any:
        return self._read()

    def add(self, value: Any) -> None:
        current = self._current_for_write()
        self._write(value if current is None else self._reduce(current, value))


class TtlHeapAggregatingState(_TtlSingleValue, HeapAggregatingState):
    """AggregatingState with a TTL on its accumulator."""

    __slots__ = ("_clock_ms", "ttl")

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        function: Any,
        *,
        ttl: StateTtl,
        clock_ms: Callable[[], int],
    ):
        super().__init__(backend, name, table, function)
        self.ttl = ttl
        self._clock_ms = clock_ms

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


class TtlHeapListState(HeapListState):
    """ListState with a TTL per element: the current key's list of ``(value, ts)``."""

    __slots__ = ("_clock_ms", "ttl")

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        *,
        ttl: StateTtl,
        clock_ms: Callable[[], int],
    ):
        super().__init__(backend, name, table)
        self.ttl = ttl
        self._clock_ms = clock_ms

    def get(self) -> list[Any]:
        key = self._backend.current_key
        elements = self._table.get(key)
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
            self._table[key] = alive
        else:
            del self._table[key]
        return values

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._table.setdefault(self._backend.current_key, []).append((value, self._clock_ms()))

    def add_all(self, values: list[Any]) -> None:
        now = self._clock_ms()
        stamped = [(value, now) for value in values]
        if stamped:
            self._table.setdefault(self._backend.current_key, []).extend(stamped)

    def update(self, values: list[Any]) -> None:
        now = self._clock_ms()
        stamped = [(value, now) for value in values] if values is not None else []
        if stamped:
            self._table[self._backend.current_key] = stamped
        else:
            self.clear()

    def unexpired(self, stored: list[tuple[Any, int]], now: int) -> Any:
        ttl_ms = self.ttl.ttl_ms
        return [e for e in stored if now - e[1] < ttl_ms] or None


class TtlHeapMapState(HeapMapState):
    """MapState with a TTL per entry: the current key's dict of user key to ``(value, ts)``."""

    __slots__ = ("_clock_ms", "ttl")

    def __init__(
        self,
        backend: HashMapKeyedStateBackend,
        name: str,
        table: dict[Any, Any],
        *,
        ttl: StateTtl,
        clock_ms: Callable[[], int],
    ):
        super().__init__(backend, name, table)
        self.ttl = ttl
        self._clock_ms = clock_ms

    def _lookup(self, user_key: Any) -> Any:
        """The entry's value, or ``_ABSENT``, with the TTL's read semantics."""
        key = self._backend.current_key
        entries = self._table.get(key)
        if entries is None:
            return _ABSENT
        stored = entries.get(user_key, _ABSENT)
        if stored is _ABSENT:
            return _ABSENT
        value, last_access_ms = stored
        now = self._clock_ms()
        if now - last_access_ms >= self.ttl.ttl_ms:
            del entries[user_key]
            if not entries:
                del self._table[key]
            return value if self.ttl.return_expired else _ABSENT
        if self.ttl.update_on_read:
            entries[user_key] = (value, now)
        return value

    def _visible(self, *, read: bool = True) -> list[tuple[Any, Any]]:
        """The current key's entries a read may see; removes the expired ones and, for a
        read under OnReadAndWrite, restamps the others."""
        key = self._backend.current_key
        entries = self._table.get(key)
        if not entries:
            return []
        now = self._clock_ms()
        ttl_ms = self.ttl.ttl_ms
        expired = [k for k, (_, ts) in entries.items() if now - ts >= ttl_ms]
        shown = [(k, value) for k, (value, _) in entries.items()]
        if not self.ttl.return_expired and expired:
            gone = set(expired)
            shown = [(k, v) for k, v in shown if k not in gone]
        for k in expired:
            del entries[k]
        if not entries:
            del self._table[key]
        elif read and self.ttl.update_on_read:
            for k, (value, _) in entries.items():
                entries[k] = (value, now)
        return shown

    def get(self, key: Any) -> Any:
        value = self._lookup(key)
        return None if value is _ABSENT else value

    def put(self, key: Any, value: Any) -> None:
        self._table.setdefault(self._backend.current_key, {})[key] = (value, self._clock_ms())

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if dict_value:
            now = self._clock_ms()
            entries = self._table.setdefault(self._backend.current_key, {})
            for key, value in dict_value.items():
                entries[key] = (value, now)

    def contains(self, key: Any) -> bool:
        return self._lookup(key) is not _ABSENT

    def _entries(self) -> list[tuple[Any, Any]]:
        return self._visible()

    def is_empty(self) -> bool:
        return not self._visible(read=False)

    def unexpired(self, stored: dict[Any, tuple[Any, int]], now: int) -> Any:
        ttl_ms = self.ttl.ttl_ms
        return {k: e for k, e in stored.items() if now - e[1] < ttl_ms} or None
