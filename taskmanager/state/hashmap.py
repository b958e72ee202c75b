"""The ``hashmap`` state backend: keyed state as Python objects on the heap.

Each state is one ``dict`` from key to value, so ``value()`` and ``update()`` are a
single dict access on the current key. Key groups are not tracked per access (that
would cost a stable hash per record); a snapshot computes them once per key. A state
with a TTL is one of the ``hashmap_ttl`` kinds instead; a state without one never
touches them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from weir.core.errors import StateMigrationError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.state_ttl import StateTtl
from weir.taskmanager.state.backend import (
    DEFAULT_SERIALIZER,
    KeyedStateBackend,
    KeyedStateSnapshot,
    NamespacedTable,
    StateAccessError,
    StateKind,
    StateMeta,
    check_registration,
)
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


class HeapNamespacedTable(NamespacedTable):
    """A namespaced table over the dict ``{key: {namespace: value}}`` the backend
    snapshots (``get_raw_table`` gives the dict itself)."""

    __slots__ = ("table",)

    def __init__(self, table: dict[Any, dict[Any, Any]]) -> None:
        self.table = table

    def get(self, key: Any, namespace: Any, default: Any = None) -> Any:
        per = self.table.get(key)
        return default if per is None else per.get(namespace, default)

    def put(self, key: Any, namespace: Any, value: Any) -> None:
        per = self.table.get(key)
        if per is None:
            self.table[key] = {namespace: value}
        else:
            per[namespace] = value

    def remove(self, key: Any, namespace: Any) -> None:
        per = self.table.get(key)
        if per is not None:
            per.pop(namespace, None)
            if not per:
                del self.table[key]

    def entries(self) -> Iterator[tuple[Any, Any, Any]]:
        for key, per in list(self.table.items()):
            for namespace, value in list(per.items()):
                yield key, namespace, value

    def is_empty(self) -> bool:
        return not self.table

    def clear_all(self) -> None:
        self.table.clear()


class HashMapKeyedStateBackend(KeyedStateBackend):
    """Heap keyed state (Flink's HashMapStateBackend).

    ``clock_ms`` is the processing-time clock state TTL is measured with (the task's
    clock; the wall clock by default).
    """

    in_memory = True

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
        self._namespaced: dict[str, HeapNamespacedTable] = {}
        # By table name: what each registered state is, and what restored tables were.
        self._meta: dict[str, StateMeta] = {}
        self._restored_meta: dict[str, StateMeta] = {}
        # Per table of a TTL state with cleanup_full_snapshot: what of a stored value
        # is still alive at a given time (None when nothing is).
        self._snapshot_filters: dict[str, Callable[[Any, int], Any]] = {}

    def _state(
        self,
        name: str,
        kind: StateKind,
        make: Callable[[dict[Any, Any]], Any],
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> Any:
        state: Any = self._states.get(name)
        wanted = StateMeta(kind, serializer)
        if state is None:
            table = name if ttl is None else _ttl_table(name)
            check_registration(name, wanted, None, self._restored_meta.get(table))
            state = self._states[name] = make(self._table_of(name, ttl))
            self._meta[table] = wanted
            if ttl is not None and ttl.cleanup_full_snapshot:
                self._snapshot_filters[_ttl_table(name)] = state.unexpired
            return state
        table = name if getattr(state, "ttl", None) is None else _ttl_table(name)
        check_registration(name, wanted, self._meta[table], None)
        if (ttl is None) != (getattr(state, "ttl", None) is None):
            label = kind.label
            was, now = (
                (f"{label} with a TTL", label) if ttl is None else (label, f"{label} with a TTL")
            )
            msg = f"state {name!r} is already registered as a {was}; a {now} needs another name"
            raise StateAccessError(msg)
        if ttl is not None and state.ttl != ttl:
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

    def get_value_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> HeapValueState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name,
                StateKind.VALUE,
                lambda t: HeapValueState(self, name, t),
                serializer=serializer,
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            StateKind.VALUE,
            lambda t: TtlHeapValueState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
            serializer,
        )

    def get_list_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> HeapListState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name,
                StateKind.LIST,
                lambda t: HeapListState(self, name, t),
                serializer=serializer,
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            StateKind.LIST,
            lambda t: TtlHeapListState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
            serializer,
        )

    def get_map_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> HeapMapState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name,
                StateKind.MAP,
                lambda t: HeapMapState(self, name, t),
                serializer=serializer,
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            StateKind.MAP,
            lambda t: TtlHeapMapState(self, name, t, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
            serializer,
        )

    def get_reducing_state(
        self,
        name: str,
        reduce: Callable[[Any, Any], Any],
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> HeapReducingState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name,
                StateKind.REDUCING,
                lambda t: HeapReducingState(self, name, t, reduce),
                serializer=serializer,
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            StateKind.REDUCING,
            lambda t: TtlHeapReducingState(self, name, t, reduce, ttl=ttl, clock_ms=self.clock_ms),
            ttl,
            serializer,
        )

    def get_aggregating_state(
        self,
        name: str,
        function: Any,
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> HeapAggregatingState:
        if ttl is None:
            return self._state(  # type: ignore[no-any-return]
                name,
                StateKind.AGGREGATING,
                lambda t: HeapAggregatingState(self, name, t, function),
                serializer=serializer,
            )
        return self._state(  # type: ignore[no-any-return]
            name,
            StateKind.AGGREGATING,
            lambda t: TtlHeapAggregatingState(
                self, name, t, function, ttl=ttl, clock_ms=self.clock_ms
            ),
            ttl,
            serializer,
        )

    def get_namespaced_table(self, name: str) -> HeapNamespacedTable:
        table = self._namespaced.get(name)
        if table is None:
            table = self._namespaced[name] = HeapNamespacedTable(self.get_raw_table(name))
            self._meta[name] = StateMeta(StateKind.NAMESPACED)
        return table

    def get_raw_table(self, name: str) -> dict[Any, Any]:
        """The dict of table ``name`` itself (``{key: value}``), for tests."""
        return self._tables.setdefault(name, {})

    def clear_key(self, key: Any) -> None:
        for table in self._tables.values():
            table.pop(key, None)

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
        meta = {name: self._table_meta(name) for name in states}
        return KeyedStateSnapshot(self.max_parallelism, states, meta)

    def _table_meta(self, name: str) -> StateMeta:
        meta = self._meta.get(name) or self._restored_meta.get(name)
        if meta is None:  # a runtime table only a test touched
            meta = StateMeta(StateKind.NAMESPACED)
        return meta

    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        owned = self.key_group_range
        for snap in snapshots:
            self._restored_meta.update(snap.meta)
            for name, by_group in snap.states.items():
                table = self._tables.setdefault(name, {})
                for group, entries in by_group.items():
                    if group in owned:
                        table.update(entries)

    def dispose(self) -> None:
        for table in self._tables.values():
            table.clear()
