"""The ``hashmap`` state backend: keyed state as Python objects on the heap.

Each state is one ``dict`` from key to value, so ``value()`` and ``update()`` are a
single dict access on the current key. Key groups are not tracked per access (that
would cost a stable hash per record); a snapshot computes them once per key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskmanager.state.backend import KeyedStateBackend, KeyedStateSnapshot, StateAccessError
from taskmanager.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
)
from weir.core.key_groups import PyFlinkKeyHasher


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
        self._states: dict[str, Any] = {}

    def _state(self, name: str, kind: type, make: Callable[[dict[Any, Any]], Any]) -> Any:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = make(self._tables.setdefault(name, {}))
        elif type(state) is not kind:
            msg = (f"state {name!r} is already registered as a {type(state).__name__[4:]}; "
                   f"a {kind.__name__[4:]} needs another name")
            raise StateAccessError(msg)
        return state

    def get_value_state(self, name: str) -> HeapValueState:
        return self._state(  # type: ignore[no-any-return]
            name, HeapValueState, lambda t: HeapValueState(self, name, t))

    def get_list_state(self, name: str) -> HeapListState:
        return self._state(  # type: ignore[no-any-return]
            name, HeapListState, lambda t: HeapListState(self, name, t))

    def get_map_state(self, name: str) -> HeapMapState:
        return self._state(  # type: ignore[no-any-return]
            name, HeapMapState, lambda t: HeapMapState(self, name, t))

    def get_reducing_state(self, name: str, reduce: Callable[[Any, Any], Any]) -> HeapReducingState:
        return self._state(  # type: ignore[no-any-return]
            name, HeapReducingState, lambda t: HeapReducingState(self, name, t, reduce))

    def get_aggregating_state(self, name: str, function: Any) -> HeapAggregatingState:
        return self._state(  # type: ignore[no-any-return]
            name, HeapAggregatingState, lambda t: HeapAggregatingState(self, name, t, function))

    def get_raw_table(self, name: str) -> dict[Any, Any]:
        return self._tables.setdefault(name, {})

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
