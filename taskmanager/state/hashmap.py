"""The ``hashmap`` state backend: keyed state as Python objects on the heap.

Each state is one ``dict`` from key to value, so ``value()`` and ``update()`` are a
single dict access on the current key. Keys come as the operators' key selectors give
them (``weir.core.canonical_keys.state_key``: every NaN in a key the one NaN object), so
that keys the rocksdb backend takes for one (equal canonical bytes) are one dict key
here too. Key groups are not tracked per access (that
would cost a stable hash per record); a snapshot computes them once per key. A state
with a TTL is one of the ``ttl`` kinds over this backend's dicts (``heap_states``'
``HeapEntry`` and its kin); a state without one never touches them.

Column blocks (a built-in window aggregate's open windows, put by their owner as Arrow
record batches of copies) are cut by key group when a snapshot is taken, or later on
another thread (``snapshot_deferring_columns``, ``UncutColumns``): nothing changes them
once put.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weir.core.canonical_keys import state_key
from weir.core.key_groups import PyFlinkKeyHasher
from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    NamespacedTable,
    StateKind,
    StateMeta,
    ttl_table,
)
from weir.taskmanager.state.heap_states import (
    HeapAggregatingState,
    HeapEntry,
    HeapListEntry,
    HeapListState,
    HeapMapEntries,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
)


def _state_keyed(entries: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """Restored entries by their keys as the operators hand keys over (``state_key``: a
    NaN read from a snapshot is a new object, which the dict would not find again)."""
    if all(type(key) is str or type(key) is int for key in entries):
        return entries
    return {state_key(key): value for key, value in entries.items()}


def _record_batches(block: Any) -> list[Any]:
    """A block put as a record batch, or the record batches a source of them reads."""
    read = getattr(block, "record_batches", None)
    return [block] if read is None else read()  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class UncutColumns:
    """A snapshot's column blocks before they are cut by key group: those the tables'
    owners put (``put``, by table) and those a restore brought, not taken yet
    (``restored``, by table and key group already)."""

    put: Mapping[str, Sequence[Any]]
    restored: Mapping[str, Mapping[int, Sequence[Any]]]
    key_hasher: PyFlinkKeyHasher
    max_parallelism: int
    key_groups: Any
    """The ``KeyGroupTable`` of whoever cuts them (None: each key hashed)."""

    def cut(self) -> dict[str, dict[int, list[Any]]]:
        """``{table: {key group: [record batch, ...]}}`` (one vectorised pass over the
        keys of each block put)."""
        columns: dict[str, dict[int, list[Any]]] = {}
        for name, restored in self.restored.items():
            for group, blocks in restored.items():
                columns.setdefault(name, {}).setdefault(group, []).extend(blocks)
        if not self.put:
            return columns
        from weir.core.column_blocks import blocks_by_key_group  # noqa: PLC0415 (pyarrow)

        for name, blocks in self.put.items():
            by_group = columns.setdefault(name, {})
            batches = [batch for block in blocks for batch in _record_batches(block)]
            for group, cut in blocks_by_key_group(
                batches, self.key_hasher, self.max_parallelism, self.key_groups
            ).items():
                by_group.setdefault(group, []).extend(cut)
        return columns

    def release(self) -> None:
        """Give back what the blocks put lent (once cut: the cut holds copies)."""
        for blocks in self.put.values():
            for block in blocks:
                release = getattr(block, "release", None)
                if release is not None:
                    release()

    def __bool__(self) -> bool:
        return bool(self.put or self.restored)


class HeapNamespacedTable(NamespacedTable):
    """A namespaced table over the dict ``{key: {namespace: value}}`` the backend
    snapshots (``get_raw_table`` gives the dict itself), and the column blocks its owner
    keeps beside it (``put_columns``; ``restored``: those a restore brought, by key group,
    until ``take_columns``)."""

    __slots__ = ("columns", "restored", "table")

    def __init__(
        self, table: dict[Any, dict[Any, Any]], restored: dict[int, list[Any]] | None = None
    ) -> None:
        self.table = table
        self.columns: list[Any] = []
        self.restored: dict[int, list[Any]] = restored if restored is not None else {}

    def put_columns(self, blocks: Sequence[Any]) -> bool:
        self.columns = list(blocks)
        return True

    def take_columns(self) -> list[Any]:
        blocks = [block for group in sorted(self.restored) for block in self.restored[group]]
        self.restored.clear()
        return blocks

    def get(self, key: Any, namespace: Any, default: Any = None) -> Any:
        per = self.table.get(key)
        return default if per is None else per.get(namespace, default)

    def put(self, key: Any, namespace: Any, value: Any) -> None:
        per = self.table.get(key)
        if per is None:
            self.table[key] = {namespace: value}
        else:
            per[namespace] = value

    def put_namespace(self, namespace: Any, values: Mapping[Any, Any]) -> None:
        table = self.table
        if not table:
            # The first window of a snapshot: the table is built in one comprehension.
            table.update({key: {namespace: value} for key, value in values.items()})
            return
        for key, value in values.items():
            per = table.get(key)
            if per is None:
                table[key] = {namespace: value}
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
    _plain_kinds = {
        StateKind.VALUE: HeapValueState,
        StateKind.LIST: HeapListState,
        StateKind.MAP: HeapMapState,
        StateKind.REDUCING: HeapReducingState,
        StateKind.AGGREGATING: HeapAggregatingState,
    }
    _ttl_storages = {
        StateKind.VALUE: HeapEntry,
        StateKind.LIST: HeapListEntry,
        StateKind.MAP: HeapMapEntries,
        StateKind.REDUCING: HeapEntry,
        StateKind.AGGREGATING: HeapEntry,
    }

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        key_hasher: PyFlinkKeyHasher | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(max_parallelism, key_group_range, key_hasher, clock_ms)
        self._tables: dict[str, dict[Any, Any]] = {}
        self._namespaced: dict[str, HeapNamespacedTable] = {}
        # Column blocks restored per table and key group, until the table's owner takes
        # them (a snapshot before that carries them on as they are).
        self._restored_columns: dict[str, dict[int, list[Any]]] = {}
        # KeyGroupTables, made at the first column snapshot: the task thread's, and the
        # one of whoever cuts the columns of snapshot_deferring_columns.
        self._key_groups: Any = None
        self._writer_key_groups: Any = None

    # --- registration hooks (KeyedStateBackend._register) ------------------------------

    def _holds_table(self, table: str) -> bool:
        return bool(self._tables.get(table))

    def _table_storage(self, table: str) -> dict[Any, Any]:
        return self._tables.setdefault(table, {})

    def get_namespaced_table(self, name: str) -> HeapNamespacedTable:
        table = self._namespaced.get(name)
        if table is None:
            table = self._namespaced[name] = HeapNamespacedTable(
                self.get_raw_table(name), self._restored_columns.setdefault(name, {})
            )
            self._meta[name] = StateMeta(StateKind.NAMESPACED)
        return table

    def get_raw_table(self, name: str) -> dict[Any, Any]:
        """The dict of table ``name`` itself (``{key: value}``), for tests."""
        return self._tables.setdefault(name, {})

    def clear_key(self, key: Any) -> None:
        for table in self._tables.values():
            table.pop(key, None)

    def get_keys(self, name: str) -> list[Any]:
        return list(self._tables.get(name) or self._tables.get(ttl_table(name)) or ())

    def snapshot(self) -> KeyedStateSnapshot:
        entries, columns = self._snapshot(self._key_group_table() if self._puts_columns() else None)
        return dataclasses.replace(entries, columns=columns.cut())

    def snapshot_deferring_columns(self) -> tuple[KeyedStateSnapshot, UncutColumns]:
        """The entries of every table (task thread; their values copied when encoded,
        before the task goes on) and its column blocks not cut by key group yet:
        ``cut`` on one thread at a time other than the task's (the checkpoint writer's),
        with key groups remembered there."""
        if self._writer_key_groups is None and self._puts_columns():
            self._writer_key_groups = self._new_key_group_table()
        return self._snapshot(self._writer_key_groups)

    def _puts_columns(self) -> bool:
        return any(table.columns for table in self._namespaced.values())

    def _snapshot(self, key_groups: Any) -> tuple[KeyedStateSnapshot, UncutColumns]:
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
        columns = UncutColumns(
            {name: list(t.columns) for name, t in self._namespaced.items() if t.columns},
            {
                name: {group: list(blocks) for group, blocks in restored.items() if blocks}
                for name, restored in self._restored_columns.items()
                if any(restored.values())
            },
            self.key_hasher,
            self.max_parallelism,
            key_groups,
        )
        names = {*states, *columns.put, *columns.restored}
        meta = {name: self._table_meta(name) for name in names}
        return KeyedStateSnapshot(self.max_parallelism, states, meta), columns

    def _key_group_table(self) -> Any:
        """The key groups of the integer keys column blocks held, remembered from one
        snapshot taken on the task thread to the next (None for a key type without an
        array form)."""
        if self._key_groups is None:
            self._key_groups = self._new_key_group_table()
        return self._key_groups

    def _new_key_group_table(self) -> Any:
        from weir.core.key_group_arrays import (  # noqa: PLC0415 (numpy)
            KeyGroupTable,
            vectorised_key_type,
        )

        if not vectorised_key_type(self.key_hasher.key_type):
            return None
        return KeyGroupTable(self.max_parallelism, self.key_hasher.key_type)

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
                        table.update(_state_keyed(entries))
            for name, column_groups in snap.columns.items():
                restored = self._restored_columns.setdefault(name, {})
                for group, blocks in column_groups.items():
                    if group in owned:
                        restored.setdefault(group, []).extend(blocks)

    def dispose(self) -> None:
        for table in self._tables.values():
            table.clear()
        self._restored_columns.clear()
        for namespaced in self._namespaced.values():
            namespaced.columns = []
