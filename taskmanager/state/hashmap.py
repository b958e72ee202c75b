"""The ``hashmap`` state backend: keyed state as Python objects on the heap.

Each state is one ``dict`` from key to value, so ``value()`` and ``update()`` are a
single dict access on the current key. Key groups are not tracked per access (that
would cost a stable hash per record); a snapshot computes them once per key.
"""

from __future__ import annotations

from typing import Any

from taskmanager.state.backend import KeyedStateBackend, KeyedStateSnapshot
from weir.core.key_groups import PyFlinkKeyHasher


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


class HashMapKeyedStateBackend(KeyedStateBackend):
    """Heap keyed state (Flink's HashMapStateBackend)."""

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        key_hasher: PyFlinkKeyHasher | None = None,
    ) -> None:
        super().__init__(max_parallelism, key_group_range, key_hasher)
        self._tables: dict[str, dict[Any, Any]] = {}
        self._states: dict[str, HeapValueState] = {}

    def get_value_state(self, name: str) -> HeapValueState:
        state = self._states.get(name)
        if state is None:
            table = self._tables.setdefault(name, {})
            state = self._states[name] = HeapValueState(self, name, table)
        return state

    def snapshot(self) -> KeyedStateSnapshot:
        states: dict[str, dict[int, dict[Any, Any]]] = {}
        for name, table in self._tables.items():
            by_group: dict[int, dict[Any, Any]] = {}
            for key, value in table.items():
                by_group.setdefault(self.key_group_of(key), {})[key] = value
            states[name] = by_group
        return KeyedStateSnapshot(max_parallelism=self.max_parallelism, states=states)

    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        owned = self.key_group_range
        for snap in snapshots:
            for name, by_group in snap.states.items():
                table = self._tables.setdefault(name, {})
                for group, entries in by_group.items():
                    if group in owned:
                        table.update(entries)

    def dispose(self) -> None:
        for table in self._tables.values():
            table.clear()
