"""The synchronous part of a task's checkpoint: capture its state as bytes, and restore it.

``capture_task_snapshot`` runs on the task thread between two batches, after the
barrier handler said ``TriggerSnapshot``. Everything it returns is already serialized,
so the task may mutate its state the moment it returns (copy-on-snapshot) and the
asynchronous part only writes bytes. Per operator of the chain it captures:

- keyed state in the canonical form, one block per key group (``KeyGroupsSnapshot``):
  a restore at another parallelism reads only the key groups it owns, via ``offsets``;
  with each table's kind (``state_meta``), so any backend restores it. A rocksdb
  backend only takes a local RocksDB checkpoint here: with incremental checkpoints
  the asynchronous part uploads its new SST files (``native_keyed_state``), else it
  reads the copy into the same canonical blocks (``deferred_keyed_state``). A hashmap
  backend's column blocks are cut by key group and encoded there too
  (``weir.taskmanager.checkpointing.keyed_state_encoding``);
- the source reader's split states (``SplitCheckpointedSourceReader.snapshot_splits``,
  as one pickled list) or its opaque position (``CheckpointedSourceReader``);
- operator state (list, union list and broadcast state, and raw function state) as its
  backend serializes it (``DefaultOperatorStateBackend.snapshot``), after the user
  functions' ``snapshot_state`` updated it. It stays on the heap whichever keyed state
  backend the job uses, as Flink keeps it.

Per task it carries the in-flight data of an unaligned checkpoint: the input buffers
the barrier handler captured and the output buffers ``emit_priority_event`` overtook.

Formats: keyed state as ``keyed_state_encoding`` lays it out; a source position or
split list is pickle protocol 5; a list of channel buffers is each buffer prefixed by
its u32 length.
"""

from __future__ import annotations

import logging
import pickle
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.core.errors import WeirError
from weir.core.source import (
    CheckpointedSourceReader,
    SplitCheckpointedSourceReader,
    assign_splits,
)
from weir.taskmanager.checkpointing.keyed_state_encoding import (
    HeapColumnsSnapshot,
    KeyGroupsSnapshot,
    capture_heap_state,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.state.backend import (
    KeyedStateBackend,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.operator_state import (
    DefaultOperatorStateBackend,
    OperatorStateSnapshot,
)
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot, full_snapshot_of
from weir.taskmanager.state.rocksdb_incremental import RocksDBNativeSnapshot, native_snapshot_of

logger = logging.getLogger(__name__)

_PICKLE_PROTOCOL = 5
_LENGTH = struct.Struct(">I")

ChannelId = tuple[int, int]
"""``(gate_index, channel_index)`` for input channels; ``(partition_index,
subpartition_index)`` for output subpartitions."""


class SnapshotRestoreError(WeirError, ValueError):
    """A task snapshot does not fit the task it is restored into."""


@dataclass(frozen=True, slots=True)
class OperatorSnapshot:
    operator_id: str
    keyed_state: KeyGroupsSnapshot | None = None
    source_state: bytes | None = None
    """The reader's pickled split list (``source_splits``) or position; None if the
    operator is no checkpointed source."""
    native_keyed_state: RocksDBNativeSnapshot | None = None
    """An incremental snapshot of a rocksdb backend, in place of ``keyed_state``."""
    operator_state: OperatorStateSnapshot | None = None
    """Its operator state; None when it has none."""
    deferred_keyed_state: RocksDBFullSnapshot | HeapColumnsSnapshot | None = None
    """Keyed state the asynchronous part makes canonical, in place of ``keyed_state``:
    a full snapshot of a rocksdb backend, or a hashmap backend's column blocks to cut
    by key group."""
    source_splits: bool = False
    """``source_state`` is a list of split states, which may be restored at another
    parallelism, not an opaque position."""
    key_placement: str = ""
    """How the keyed state's keys are placed in key groups (its backend's
    ``PyFlinkKeyHasher.key_type``); empty without keyed state."""


@dataclass(frozen=True, slots=True)
class TaskSnapshot:
    checkpoint_id: int
    operators: tuple[OperatorSnapshot, ...]
    """In chain order (head first)."""
    input_channel_state: Mapping[ChannelId, bytes] = field(default_factory=dict)
    result_subpartition_state: Mapping[ChannelId, bytes] = field(default_factory=dict)

    def operator(self, operator_id: str) -> OperatorSnapshot | None:
        for op in self.operators:
            if op.operator_id == operator_id:
                return op
        return None

    @property
    def state_size(self) -> int:
        size = sum(
            (len(op.keyed_state.data) if op.keyed_state else 0)
            + len(op.source_state or b"")
            + (len(op.operator_state.data) if op.operator_state else 0)
            for op in self.operators
        )
        size += sum(len(b) for b in self.input_channel_state.values())
        return size + sum(len(b) for b in self.result_subpartition_state.values())

    @property
    def in_flight_size(self) -> int:
        """Bytes of persisted in-flight data (Flink's "persisted in-flight data")."""
        return sum(len(b) for b in self.input_channel_state.values()) + sum(
            len(b) for b in self.result_subpartition_state.values()
        )


class SnapshotableOperator(Protocol):
    """What capture and restore need of a chained operator (``StreamOperator``)."""

    @property
    def operator_id(self) -> str: ...

    @property
    def keyed_state_backend(self) -> KeyedStateBackend | None: ...

    @property
    def source_reader(self) -> Any:
        """The operator's ``SourceReader``, or None."""
        ...

    @property
    def operator_state_backend(self) -> DefaultOperatorStateBackend | None: ...


@dataclass(frozen=True, slots=True)
class OperatorStateRefs:
    """Implements ``SnapshotableOperator`` over plain references."""

    operator_id: str
    keyed_state_backend: KeyedStateBackend | None = None
    source_reader: Any = None
    operator_state_backend: DefaultOperatorStateBackend | None = None


def operators_of_chain(chain: Any) -> list[OperatorStateRefs]:
    """The chain's operators as ``OperatorStateRefs``, head first. Call after
    ``chain.open()`` (a source operator creates its reader there)."""
    refs = []
    for op in chain.operators:
        setup = op.setup
        refs.append(
            OperatorStateRefs(
                operator_id=str(setup.descriptor.operator_id),
                keyed_state_backend=setup.keyed_state_backend,
                source_reader=getattr(op, "reader", None),
                operator_state_backend=getattr(setup, "operator_state_backend", None),
            )
        )
    return refs


# --- capture -----------------------------------------------------------------------------


def capture_task_snapshot(
    checkpoint_id: int,
    operators: Sequence[SnapshotableOperator],
    input_channel_state: Mapping[ChannelId, Sequence[bytes]] | None = None,
    result_subpartition_state: Mapping[ChannelId, Sequence[bytes]] | None = None,
    *,
    canonical: bool = False,
) -> TaskSnapshot:
    """Capture every operator's state as bytes (task thread, between two batches).
    ``canonical``: keyed state in the canonical form even where the backend offers a
    native snapshot (savepoints).

    ``input_channel_state`` is ``ChannelStateComplete.channel_state``;
    ``result_subpartition_state`` maps ``(partition_index, subpartition_index)`` to what
    ``emit_priority_event`` returned for it. Empty buffer lists are left out.
    """
    snapshots = tuple(_capture_operator(checkpoint_id, op, canonical) for op in operators)
    return TaskSnapshot(
        checkpoint_id=checkpoint_id,
        operators=snapshots,
        input_channel_state=_encode_channel_state(input_channel_state),
        result_subpartition_state=_encode_channel_state(result_subpartition_state),
    )


def with_channel_state(
    snapshot: TaskSnapshot,
    input_channel_state: Mapping[ChannelId, Sequence[bytes]] | None,
    result_subpartition_state: Mapping[ChannelId, Sequence[bytes]] | None,
) -> TaskSnapshot:
    """``snapshot`` with the in-flight data of its unaligned checkpoint, which is known
    only after the operator state was captured (the input side once every input
    delivered the barrier)."""
    return TaskSnapshot(
        checkpoint_id=snapshot.checkpoint_id,
        operators=snapshot.operators,
        input_channel_state=_encode_channel_state(input_channel_state),
        result_subpartition_state=_encode_channel_state(result_subpartition_state),
    )


def _capture_operator(
    checkpoint_id: int, op: SnapshotableOperator, canonical: bool = False
) -> OperatorSnapshot:
    keyed: KeyGroupsSnapshot | None = None
    native = None
    deferred: RocksDBFullSnapshot | HeapColumnsSnapshot | None = None
    backend = op.keyed_state_backend
    if backend is not None:
        native = None if canonical else native_snapshot_of(backend, checkpoint_id)
        if native is None:
            deferred = full_snapshot_of(backend, checkpoint_id)
        if native is None and deferred is None:
            if isinstance(backend, HashMapKeyedStateBackend):
                captured = capture_heap_state(backend)
                if isinstance(captured, HeapColumnsSnapshot):
                    deferred = captured
                else:
                    keyed = captured
            else:
                keyed = encode_keyed_state(backend.snapshot(), backend.key_group_range)
    source_state = None
    reader = op.source_reader
    splits = isinstance(reader, SplitCheckpointedSourceReader)
    if splits:
        split_list = list(reader.snapshot_splits(checkpoint_id))
        source_state = pickle.dumps(split_list, _PICKLE_PROTOCOL)
    elif isinstance(reader, CheckpointedSourceReader):
        source_state = pickle.dumps(reader.snapshot_state(checkpoint_id), _PICKLE_PROTOCOL)
    store = op.operator_state_backend
    operator_state = store.snapshot() if store is not None else None
    return OperatorSnapshot(
        op.operator_id,
        keyed,
        source_state,
        native,
        operator_state,
        deferred,
        splits,
        backend.key_hasher.key_type if backend is not None else "",
    )


def _keyed_state_of(snapshot: OperatorSnapshot) -> KeyGroupsSnapshot | None:
    """The keyed state of an operator's snapshot as bytes per key group, made here from
    a hashmap backend's two-part snapshot (the asynchronous part makes it otherwise)."""
    if isinstance(snapshot.deferred_keyed_state, HeapColumnsSnapshot):
        return snapshot.deferred_keyed_state.encode()
    return snapshot.keyed_state


def encode_buffers(buffers: Sequence[bytes]) -> bytes:
    """Channel buffers as one blob: each prefixed by its u32 length."""
    pack = _LENGTH.pack
    return b"".join(pack(len(b)) + bytes(b) for b in buffers)


def decode_buffers(blob: bytes) -> list[bytes]:
    out = []
    view = memoryview(blob)
    position = 0
    size = _LENGTH.size
    while position < len(view):
        if position + size > len(view):
            msg = f"channel state cut short at byte {position} of {len(view)}"
            raise SnapshotRestoreError(msg)
        (length,) = _LENGTH.unpack_from(view, position)
        position += size
        if position + length > len(view):
            msg = f"channel state cut short: a {length}-byte buffer at byte {position}"
            raise SnapshotRestoreError(msg)
        out.append(bytes(view[position : position + length]))
        position += length
    return out


def _encode_channel_state(
    state: Mapping[ChannelId, Sequence[bytes]] | None,
) -> dict[ChannelId, bytes]:
    if not state:
        return {}
    return {channel: encode_buffers(buffers) for channel, buffers in state.items() if buffers}


# --- restore -----------------------------------------------------------------------------


def restore_task_snapshot(
    snapshots: Sequence[TaskSnapshot],
    operators: Sequence[SnapshotableOperator],
    *,
    split_share: tuple[int, int] | None = None,
) -> None:
    """Load operator state into a freshly opened chain, before its first record.

    ``snapshots`` are the subtask snapshots to restore from: one at the same parallelism,
    or every old subtask's when rescaling (each backend takes the key groups it owns).
    Source splits: all of them, or with ``split_share=(subtask, parallelism)`` that
    subtask's round-robin share (``assign_splits``), as at another parallelism. An
    opaque source position is restored only from a single snapshot.
    Operator state is loaded from every snapshot given, whole: the redistribution by
    mode is the JobMaster's (``repartition_operator_state``), before it gets here.
    Channel state is not touched here; see ``restored_channel_state``.
    """
    for op in operators:
        own = [s for snap in snapshots if (s := snap.operator(op.operator_id)) is not None]
        backend = op.keyed_state_backend
        if backend is not None:
            keyed = [
                decode_keyed_state(state, backend.key_group_range)
                for s in own
                if (state := _keyed_state_of(s)) is not None
            ]
            if keyed:
                backend.restore(keyed)
        store = op.operator_state_backend
        if store is not None:
            store.restore(
                [
                    (s.operator_state.data, s.operator_state.partitions)
                    for s in own
                    if s.operator_state
                ]
            )
        split_lists = [
            pickle.loads(s.source_state)
            for s in own
            if s.source_splits and s.source_state is not None
        ]
        if split_lists:
            _restore_splits(op, split_lists, split_share)
            continue
        positions = [s.source_state for s in own if s.source_state is not None]
        if not positions:
            continue
        if len(positions) > 1:
            msg = (
                f"operator {op.operator_id}: {len(positions)} source positions for one "
                "reader; an opaque position cannot be split over another parallelism"
            )
            raise SnapshotRestoreError(msg)
        reader = op.source_reader
        if not isinstance(reader, CheckpointedSourceReader):
            msg = (
                f"operator {op.operator_id}: the checkpoint holds a source position but "
                f"its reader ({type(reader).__name__}) cannot restore one"
            )
            raise SnapshotRestoreError(msg)
        # Our own checkpoint files, checksummed before they get here.
        reader.restore_state(pickle.loads(positions[0]))


def _restore_splits(
    op: SnapshotableOperator, split_lists: list[list[Any]], share: tuple[int, int] | None
) -> None:
    reader = op.source_reader
    if not isinstance(reader, SplitCheckpointedSourceReader):
        msg = (
            f"operator {op.operator_id}: the checkpoint holds source splits but its "
            f"reader ({type(reader).__name__}) cannot restore splits"
        )
        raise SnapshotRestoreError(msg)
    if share is not None:
        reader.restore_splits(assign_splits(split_lists, *share))
    else:
        reader.restore_splits([split for splits in split_lists for split in splits])


def restored_channel_state(
    snapshot: TaskSnapshot,
) -> tuple[dict[ChannelId, list[bytes]], dict[ChannelId, list[bytes]]]:
    """``(input buffers per input channel, output buffers per subpartition)`` to replay on
    recovery from an unaligned checkpoint: the inputs through the chain before the first
    polled buffer, the outputs re-emitted before any new output."""
    inputs = {ch: decode_buffers(b) for ch, b in snapshot.input_channel_state.items()}
    outputs = {ch: decode_buffers(b) for ch, b in snapshot.result_subpartition_state.items()}
    return inputs, outputs
