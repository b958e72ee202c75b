"""Full (canonical) checkpoints of the rocksdb backend, taken asynchronously (Flink's
``RocksFullSnapshotStrategy``).

Synchronous part (task thread): ``RocksDBFullSnapshot.take`` flushes the states' caches
and creates a RocksDB checkpoint in the backend's directory (memtables flushed, SST
files hard-linked), a frozen copy of the database that later writes do not touch; it
records the tables' kinds, the TTL filters and the time they apply at.

Asynchronous part (the checkpoint writer thread): ``write`` opens that copy as a
database of its own, reads it one key group at a time into the canonical form and
encodes each group as ``encode_keyed_state`` does, so what it writes is the same
``KeyGroupsStateHandle`` a synchronous ``snapshot()`` gives, restorable by every
backend and at any parallelism, and never more than one key group of it is Python
objects at once. The copy is deleted afterwards.

A copy never materialized (its checkpoint was dropped before being written) stays in
the backend's directory until the backend is disposed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocksdict import Checkpoint

from weir.core.checkpoint import CheckpointStorageLocation, KeyGroupRange, KeyGroupsStateHandle
from weir.core.serializers import serialize_batch
from weir.taskmanager.state.backend import StateKind, StateMeta
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend, canonical_meta
from weir.taskmanager.state.rocksdb_blocks import (
    blocks_target,
    canonical_block_entries,
    fold_blocks,
)
from weir.taskmanager.state.rocksdb_incremental import meta_infos
from weir.taskmanager.state.rocksdb_layout import (
    KEYS_CF,
    canonical_entries,
    key_group_prefix,
    open_db,
)


@dataclass(slots=True)
class RocksDBFullSnapshot:
    """A frozen copy of a rocksdb backend's database, to be read into the canonical form."""

    checkpoint_id: int
    directory: str
    key_groups: range
    meta: dict[str, StateMeta]
    tables: list[str]
    """The tables of ``meta`` that have a column family (a restored one may not)."""
    filters: dict[str, Callable[[Any, int], Any]]
    now_ms: int

    @staticmethod
    def take(backend: RocksDBKeyedStateBackend, checkpoint_id: int) -> RocksDBFullSnapshot:
        """The synchronous part (task thread)."""
        directory = os.path.join(backend.directory, f"full-{checkpoint_id}-{uuid.uuid4().hex[:8]}")
        backend.flush()
        Checkpoint(backend.db).create_checkpoint(directory)
        filters = backend.snapshot_filters()
        meta = backend.table_meta()
        families = backend.column_families()
        return RocksDBFullSnapshot(
            checkpoint_id=checkpoint_id,
            directory=directory,
            key_groups=backend.key_group_range,
            meta=meta,
            tables=sorted(name for name in meta if name in families),
            filters=filters,
            now_ms=backend.clock_ms() if filters else 0,
        )

    def write(
        self, location: CheckpointStorageLocation, prefix: str, compress: bool
    ) -> KeyGroupsStateHandle:
        """The asynchronous part (any thread): the copy in the canonical form, written
        (its key groups' blocks one after the other, not joined first)."""
        parts, offsets = self.encoded_parts()
        handle = location.write_state(f"{prefix}-keyed", parts, compress)
        start = self.key_groups.start
        return KeyGroupsStateHandle(
            KeyGroupRange(start, start + len(self.key_groups)),
            handle,
            offsets,
            meta_infos(canonical_meta(self.meta)),
        )

    def encode(self) -> tuple[bytes, tuple[int, ...]]:
        """``(data, offsets)`` of the copy in the canonical form, one block per key
        group as ``encode_keyed_state`` lays them out; deletes the copy."""
        parts, offsets = self.encoded_parts()
        return b"".join(parts), offsets

    def encoded_parts(self) -> tuple[list[bytes], tuple[int, ...]]:
        """The key groups' blocks in order and where each starts once joined; deletes the
        copy."""
        try:
            db = open_db(self.directory, [KEYS_CF, *self.tables], read_only=True)
            try:
                keys = db.get_column_family(KEYS_CF)
                tables = [
                    (name, db.get_column_family(name), self.meta[name].kind, self.filters.get(name))
                    for name in self.tables
                ]
                parts: list[bytes] = []
                offsets: list[int] = []
                position = 0
                for group in self.key_groups:
                    offsets.append(position)
                    prefix = key_group_prefix(group)
                    by_table: dict[str, dict[Any, Any]] = {}
                    for name, cf, kind, alive in tables:
                        if kind is StateKind.BLOCKS:  # below: the table they stand for
                            continue
                        entries = by_table.setdefault(name, {})
                        for _, key, value in canonical_entries(
                            cf, kind, keys, alive, self.now_ms, prefix=prefix
                        ):
                            entries[key] = value
                    for name, cf, kind, _ in tables:
                        if kind is StateKind.BLOCKS:
                            target = {group: by_table.setdefault(blocks_target(name), {})}
                            fold_blocks(target, canonical_block_entries(cf, prefix))
                    triples = [
                        (name, key, value)
                        for name, entries in by_table.items()
                        for key, value in entries.items()
                    ]
                    if triples:
                        block = serialize_batch(triples)
                        parts.append(block)
                        position += len(block)
            finally:
                db.close()
        finally:
            self.discard()
        return parts, tuple(offsets)

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def full_snapshot_of(backend: Any, checkpoint_id: int) -> RocksDBFullSnapshot | None:
    """The asynchronous full snapshot to take of ``backend``, or None when it has none
    (a heap backend, whose ``snapshot()`` is taken on the task thread)."""
    if isinstance(backend, RocksDBKeyedStateBackend):
        return RocksDBFullSnapshot.take(backend, checkpoint_id)
    return None
