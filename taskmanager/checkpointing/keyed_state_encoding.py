"""Keyed state as bytes per key group (``KeyGroupsSnapshot``), and the two-part capture of
a hashmap backend that holds column blocks (``HeapColumnsSnapshot``).

A key group's bytes are ``serialize_batch`` of its ``(state_name, key, value)`` triples
(marshal when the values allow, else pickle protocol 5). A group with column blocks
(``KeyedStateSnapshot.columns``, ``weir.core.column_blocks``) is framed instead
(``frame_buffers``): those bytes, then a ``(state_name, arrow_ipc_stream)`` pair per
block, each stream written as Arrow made it, never copied into bytes. A restore at
another parallelism reads only the groups it owns, through ``offsets``. (Checkpoints
that held the pairs in the same list as the triples are read too.)

Entries are Python objects the task goes on changing, so they are serialized on the
task thread, before it does. Column blocks are Arrow record batches over copies nobody
changes: a hashmap backend's are cut by key group (a sort of their rows) and encoded by
the checkpoint writer thread instead (``HeapColumnsSnapshot.write``), as the rocksdb
backend's full snapshot is read there; the bytes are the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weir.core.checkpoint import (
    CheckpointStorageLocation,
    KeyGroupRange,
    KeyGroupsStateHandle,
    StateMetaInfo,
)
from weir.core.errors import WeirError
from weir.core.serializers import deserialize_batch, frame_buffers, serialize_batch
from weir.taskmanager.state.backend import (
    KeyedStateSnapshot,
    StateKind,
    StateMeta,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend, UncutColumns

__all__ = [
    "HeapColumnsSnapshot",
    "KeyGroupsSnapshot",
    "capture_heap_state",
    "decode_keyed_state",
    "encode_keyed_state",
]


@dataclass(frozen=True, slots=True)
class KeyGroupsSnapshot:
    """The keyed state of one operator in one subtask, as bytes per key group.

    Key group ``key_group_start + i`` is ``data[offsets[i]:offsets[i + 1]]`` (the last
    one runs to the end); an empty slice means the group held no state.
    """

    max_parallelism: int
    key_group_start: int
    data: bytes
    offsets: tuple[int, ...]
    state_meta: tuple[StateMetaInfo, ...] = ()

    @property
    def key_groups(self) -> range:
        return range(self.key_group_start, self.key_group_start + len(self.offsets))

    def key_group_bytes(self, key_group: int) -> bytes:
        i = key_group - self.key_group_start
        if not 0 <= i < len(self.offsets):
            return b""
        end = self.offsets[i + 1] if i + 1 < len(self.offsets) else len(self.data)
        return self.data[self.offsets[i] : end]


def encode_keyed_state(snapshot: KeyedStateSnapshot, key_groups: range) -> KeyGroupsSnapshot:
    """Serialize a backend snapshot, one block per key group of ``key_groups``.

    The values are copied into bytes here, so later mutations of the live state (also
    in place, on a mutable value) do not reach the snapshot.
    """
    entries = {
        group: serialize_batch(triples)
        for group, triples in _triples_by_group(snapshot, key_groups).items()
    }
    parts, offsets = _laid_out(_framed(entries, snapshot.columns, key_groups), key_groups)
    return KeyGroupsSnapshot(
        snapshot.max_parallelism,
        key_groups.start,
        b"".join(parts),
        offsets,
        _meta_infos(snapshot.meta),
    )


def _triples_by_group(
    snapshot: KeyedStateSnapshot, key_groups: range
) -> dict[int, list[tuple[Any, ...]]]:
    by_group: dict[int, list[tuple[Any, ...]]] = {}
    for name, groups in snapshot.states.items():
        for group, entries in groups.items():
            _check_owned(name, group, key_groups)
            bucket = by_group.setdefault(group, [])
            bucket.extend((name, key, value) for key, value in entries.items())
    return by_group


def _framed(
    entries: Mapping[int, bytes],
    columns: Mapping[str, Mapping[int, Sequence[Any]]],
    key_groups: range,
) -> dict[int, list[Any]]:
    """Each group's parts: its entries' bytes, framed with a ``(name, Arrow IPC stream)``
    pair per column block of the group when it has any."""
    named: dict[int, list[tuple[str, Any]]] = {}
    if columns:
        from weir.core.column_blocks import block_stream  # noqa: PLC0415 (pyarrow)

        for name, column_groups in columns.items():
            for group, blocks in column_groups.items():
                _check_owned(name, group, key_groups)
                named.setdefault(group, []).extend((name, block_stream(b)) for b in blocks)
    framed: dict[int, list[Any]] = {group: [data] for group, data in entries.items()}
    for group, pairs in named.items():
        framed[group] = frame_buffers(entries.get(group, b""), pairs)
    return framed


def _laid_out(
    blocks: Mapping[int, Sequence[Any]], key_groups: range
) -> tuple[list[Any], tuple[int, ...]]:
    """The groups' parts in key-group order, and where each group starts once joined."""
    parts: list[Any] = []
    offsets: list[int] = []
    position = 0
    for group in key_groups:
        offsets.append(position)
        for part in blocks.get(group, ()):
            size = memoryview(part).nbytes
            if size:
                parts.append(part)
                position += size
    return parts, tuple(offsets)


def _meta_infos(meta: Mapping[str, StateMeta]) -> tuple[StateMetaInfo, ...]:
    return tuple(
        StateMetaInfo(name, m.kind.value, m.serializer) for name, m in sorted(meta.items())
    )


def _check_owned(name: str, group: int, key_groups: range) -> None:
    if group not in key_groups:
        msg = (
            f"state {name!r} holds key group {group}, outside this subtask's "
            f"{key_groups}; keys reached the wrong subtask"
        )
        raise WeirError(msg)


def decode_keyed_state(
    snapshot: KeyGroupsSnapshot, key_groups: range | frozenset[int] | None = None
) -> KeyedStateSnapshot:
    """The inverse of ``encode_keyed_state``, reading only the blocks of ``key_groups``
    (default: all of them)."""
    wanted = snapshot.key_groups if key_groups is None else key_groups
    states: dict[str, dict[int, dict[Any, Any]]] = {}
    columns: dict[str, dict[int, list[Any]]] = {}
    for group in snapshot.key_groups:
        if group not in wanted:
            continue
        block = snapshot.key_group_bytes(group)
        if not block:
            continue
        for entry in deserialize_batch(block):
            if len(entry) == 2:  # (name, column block)
                from weir.core.column_blocks import decode_block  # noqa: PLC0415 (pyarrow)

                name, data = entry
                columns.setdefault(name, {}).setdefault(group, []).append(decode_block(data))
                continue
            name, key, value = entry
            states.setdefault(name, {}).setdefault(group, {})[key] = value
    meta = {m.name: StateMeta(StateKind(m.kind), m.serializer) for m in snapshot.state_meta}
    return KeyedStateSnapshot(snapshot.max_parallelism, states, meta, columns)


@dataclass(frozen=True, slots=True)
class HeapColumnsSnapshot:
    """A hashmap backend's keyed state with column blocks, captured in two parts: its
    entries serialized per key group (``capture_heap_state``, task thread), its column blocks cut by
    key group and encoded into the same blocks (``encode``, ``write``: the checkpoint
    writer thread, one snapshot at a time)."""

    max_parallelism: int
    key_groups: range
    entries: Mapping[int, bytes]
    columns: UncutColumns
    state_meta: tuple[StateMetaInfo, ...]

    def encode(self) -> KeyGroupsSnapshot:
        """The asynchronous part: what ``encode_keyed_state`` makes of the whole snapshot."""
        parts, offsets = self._encoded()
        return KeyGroupsSnapshot(
            self.max_parallelism, self.key_groups.start, b"".join(parts), offsets, self.state_meta
        )

    def _encoded(self) -> tuple[list[Any], tuple[int, ...]]:
        """The groups' parts and where each group starts."""
        columns = self.columns.cut()
        self.columns.release()
        return _laid_out(_framed(self.entries, columns, self.key_groups), self.key_groups)

    def write(
        self, location: CheckpointStorageLocation, prefix: str, compress: bool
    ) -> KeyGroupsStateHandle:
        """The asynchronous part, written as the task thread's keyed state is (its blocks
        one after the other, not joined first)."""
        parts, offsets = self._encoded()
        handle = location.write_state(f"{prefix}-keyed", parts, compress)
        start = self.key_groups.start
        return KeyGroupsStateHandle(
            KeyGroupRange(start, start + len(self.key_groups)), handle, offsets, self.state_meta
        )


def capture_heap_state(
    backend: HashMapKeyedStateBackend,
) -> KeyGroupsSnapshot | HeapColumnsSnapshot:
    """The synchronous part of a hashmap backend's snapshot: its keyed state encoded
    whole, or, when it holds column blocks, its entries encoded and the blocks left to
    the writer (``HeapColumnsSnapshot``)."""
    snapshot, columns = backend.snapshot_deferring_columns()
    key_groups = backend.key_group_range
    if not columns:
        return encode_keyed_state(snapshot, key_groups)
    triples = _triples_by_group(snapshot, key_groups)
    entries = {group: serialize_batch(t) for group, t in triples.items()}
    return HeapColumnsSnapshot(
        snapshot.max_parallelism, key_groups, entries, columns, _meta_infos(snapshot.meta)
    )
