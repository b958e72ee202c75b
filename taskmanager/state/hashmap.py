"""The ``hashmap`` state backend: keyed state as Python objects on the heap.

Each state is one ``dict`` from key to value, so ``value()`` and ``update()`` are a
single dict access on the current key. Key groups are not tracked per access (that
would cost a stable hash per record); a snapshot computes them once per key. A state
with a TTL is one of the ``hashmap_ttl`` kinds instead; a state without one never
touches them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from weir.core.errors import StateMigrationError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.state_ttl import StateTtl
from weir.taskmanager.state.backend import KeyedStateBackend, KeyedStateSnapshot, StateAccessError
from weir.taskmanager.state.hashmap_ttl import (
    TtlHeapAggregatingState,
    TtlHeapListState,
    TtlHeapMapState,
    TtlHeapReducingState,
    TtlHeapValueState,
)
from weir.taskmanager.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _ttl_table(name: str) -> str:
    # A TTL state stores (value, last_access_ms) where a plain one stores the value; the
    # two forms live (and are snapshotted) under different names, so that a restore into
    # the other form is caught when the state is registered instead of misread later.
    return f"_weir_ttl_{name}"


def _kind(cls: type) -> str:
    name = cls.__name__
    return f"{name[7:]} with a TTL" if name.startswith("TtlHeap") else name[4:]


class HashMapKeyedStateBackend(KeyedStateBackend):
    """Heap keyed state (Flink's HashMapStateBackend).

    ``clock_ms`` is the processing-time clock state TTL is measured with (the task's
    clock; the wall clock by default).
    """

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        key_hasher: PyFlinkKeyHasher | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(max_parallelism, key_group_range, key_hasher)
        self.clock_ms = clock_ms or _wall_clock_ms
        self._tables: dict[str, dict[Any, Any]] = {}
        self._states: dict[str, Any] = {}
        # Per table of a TTL state with cleanup_full_snapshot: what of a stored value
        # is still alive at a given time (None when nothing is).
        self._snapshot_filters: dict[str, Callable[[Any, int], Any]] = {}

    def _state(
        self,
        name: str,
        kind: type[Any],
        make: Callable[[dict[Any, Any]], Any],
        ttl: StateTtl | None = None,
    ) -> Any:
        state: Any = self._states.get(name)
        if state is None:
            state = self._states[name] = make(self._table_of(name, ttl))
            if ttl is not None and ttl.cleanup_full_snapshot:
                self._snapshot_filters[_ttl_table(name)] = state.unexpired
        elif type(state) is not kind:
            msg = (
                f"state {name!r} is already registered as a {_kind(type(state))}; "
                f"a {_kind(kind)} needs another name"
            )
            raise StateAccessError(msg)
        elif ttl is not None and state.ttl != ttl:
            msg = (
                f"state {name!r} is already registered with {state.ttl}; got another "
                f"TTL for it ({ttl}): give both descriptors the same StateTtlConfig, or "
                "give the state with the other TTL another name"
            )
            raise StateAccessError(msg)
        return state

    def _table_of(self, name: str, ttl: StateTtl | None) -> dict[Any, Any]:
        own, other = (name, _ttl_table(name)) if ttl is None else (_ttl_table(name), name)
        if self._tables.get(other):
            was, now = ("with", "without") if ttl is None else ("without", "with")
            msg = (
                f"state {name!r} was restored from a snapshot taken {was} a TTL and is "
                f"now registered {now} one; its stored values cannot be read in the "
                "other form. Set the descriptor's TTL as it was when the snapshot was "
                "taken, or rename the state to start it empty"
            )
            raise StateMigrationError(msg)
        return self._tables.setdefault(own, {})

    def get_value_state(self, name: str, ttl: StateTtl | None = None) -> HeapValueState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name, HeapValueState, lambda t: HeapValueState(self, name, t)
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            TtlHeapValueState,
            lambda t: TtlHeapValueState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
        )

    def get_list_state(self, name: str, ttl: StateTtl | None = None) -> HeapListState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name, HeapListState, lambda t: HeapListState(self, name, t)
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            TtlHeapListState,
            lambda t: TtlHeapListState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
        )

    def get_map_state(self, name: str, ttl: StateTtl | None = None) -> HeapMapState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name, HeapMapState, lambda t: HeapMapState(self, name, t)
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            TtlHeapMapState,
            lambda t: TtlHeapMapState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
        )

    def get_reducing_state(
        self, name: str, reduce: Callable[[Any, Any], Any], ttl: StateTtl | None = None
    ) -> HeapReducingState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name, HeapReducingState, lambda t: HeapReducingState(self, name, t, reduce)
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            TtlHeapReducingState,
            lambda t: TtlHeapReducingState(self, name, t, reduce, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
        )

    def get_aggregating_state(
        self, name: str, function: Any, ttl: StateTtl | None = None
    ) -> HeapAggregatingState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name, HeapAggregatingState, lambda t: HeapAggregatingState(self, name, t, function)
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            TtlHeapAggregatingState,
            lambda t: TtlHeapAggregatingState(
                self, name, t, function, ttl=ttl, clock_ms=self.clock_ms
            ),
            ttl,
        )

    def get_raw_table(self, name: str) -> dict[Any, Any]:
        return self._tables.setdefault(name, {})

    def get_keys(self, name: str) -> list[Any]:
        return list(self._tables.get(name) or self._tables.get(_ttl_table(name)) or ())

    def snapshot(self) -> KeyedStateSnapshot:
        states: dict[str, dict[int, dict[Any, Any]]] = {}
        now = self.clock_ms() if self._snapshot_filters else 0
        for name, table in self._tables.items():
            by_group: dict[int, dict[Any, Any]] = {}
            alive = self._snapshot_filters.get(name)
            if alive is None:
                for key, value in table.items():
                    by_group.setdefault(self.key_group_of(key), {})[key] = value
            else:
                for key, stored in table.items():
                    kept = alive(stored, now)
                    if kept is not None:
                        by_group.setdefault(self.key_group_of(key), {})[key] = kept
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
