"""Handles to checkpointed state: where a snapshot's bytes are and how to check them.

Tasks write their snapshots through a :class:`~weir.core.checkpoint.storage.CheckpointStorage`
and acknowledge the checkpoint with a :class:`TaskStateSnapshot` of these handles; the
CheckpointCoordinator collects them into the checkpoint's ``_metadata`` and hands them back
to the tasks on restore (Flink's ``StreamStateHandle``, ``KeyGroupsStateHandle``,
``OperatorSubtaskState`` and ``TaskStateSnapshot``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from weir.core.ids import OperatorId


@dataclass(frozen=True, slots=True)
class StreamStateHandle:
    """One blob of state: a file (``path``, an fsspec URL) or bytes held inline.

    ``size`` and ``checksum`` (zlib.crc32) describe the bytes as stored, that is after lz4
    compression when ``compressed`` is set, so corruption is caught before decompressing.
    Inline handles are what the ``jobmanager`` checkpoint storage produces.
    """

    path: str | None
    size: int
    checksum: int
    compressed: bool = False
    inline: bytes | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.inline is None):
            msg = "a StreamStateHandle holds either a path or inline bytes, not both or neither"
            raise ValueError(msg)

    @property
    def description(self) -> str:
        """Where the bytes are, for error messages."""
        return self.path if self.path is not None else f"<inline state of {self.size} bytes>"


@dataclass(frozen=True, slots=True)
class KeyGroupRange:
    """Key groups ``[start, end)`` owned by one subtask (see ``weir.core.key_groups``)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            msg = f"bad key-group range [{self.start}, {self.end})"
            raise ValueError(msg)

    def __contains__(self, key_group: object) -> bool:
        return isinstance(key_group, int) and self.start <= key_group < self.end

    def __len__(self) -> int:
        return self.end - self.start

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end))


@dataclass(frozen=True, slots=True)
class StateMetaInfo:
    """What one table of keyed state is: its kind (``VALUE``, ``LIST``, ``MAP``,
    ``REDUCING``, ``AGGREGATING``, ``NAMESPACED``) and the declared type of its values."""

    name: str
    kind: str
    serializer: str


@dataclass(frozen=True, slots=True)
class KeyGroupsStateHandle:
    """Keyed state of a key-group range in the canonical form (a full snapshot, which
    every backend restores). ``offsets[i]`` is where key group ``start + i`` begins in
    the (uncompressed) stream, so a rescaled subtask can read only its groups; empty
    when the writer does not index the stream."""

    key_groups: KeyGroupRange
    handle: StreamStateHandle
    offsets: tuple[int, ...] = ()
    state_meta: tuple[StateMetaInfo, ...] = ()
    key_placement: str = ""
    """The key type its keys were placed in key groups by (``PyFlinkKeyHasher.key_type``);
    empty in state written before it was recorded (``legacy_key_placement``)."""


@dataclass(frozen=True, slots=True)
class SharedFile:
    """One file of a native snapshot: its name in the backend's directory and where its
    bytes are."""

    name: str
    handle: StreamStateHandle


@dataclass(frozen=True, slots=True)
class IncrementalKeyGroupsStateHandle:
    """Keyed state of a key-group range as a RocksDB checkpoint (Flink's
    ``IncrementalRemoteKeyedStateHandle``): SST files in the job's ``shared/``, uploaded
    once and referred to by every later checkpoint that still has them, and the private
    files (MANIFEST, CURRENT, OPTIONS) of this checkpoint in its ``chk-N``.

    ``incremental_size`` is the bytes this checkpoint uploaded (new SST files and the
    private ones); ``state_size`` of the handle is everything it refers to."""

    key_groups: KeyGroupRange
    backend_id: str
    checkpoint_id: int
    shared: tuple[SharedFile, ...]
    private: tuple[SharedFile, ...]
    state_meta: tuple[StateMetaInfo, ...] = ()
    incremental_size: int = 0
    key_placement: str = ""
    """As ``KeyGroupsStateHandle.key_placement``."""

    def stream_handles(self) -> Iterator[StreamStateHandle]:
        for file in self.shared:
            yield file.handle
        for file in self.private:
            yield file.handle


KeyedStateHandle = KeyGroupsStateHandle | IncrementalKeyGroupsStateHandle


class OperatorStateDistributionMode(enum.Enum):
    """How operator list state is split on restore at another parallelism (Flink's names)."""

    SPLIT_DISTRIBUTE = "SPLIT_DISTRIBUTE"
    UNION = "UNION"
    BROADCAST = "BROADCAST"


@dataclass(frozen=True, slots=True)
class OperatorStatePartition:
    """One named operator state inside an :class:`OperatorStateHandle`: the offsets of its
    elements in the stream and how they are redistributed."""

    name: str
    mode: OperatorStateDistributionMode
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class OperatorStateHandle:
    """Operator (non-keyed) state of one subtask: ListState, UnionListState, BroadcastState."""

    handle: StreamStateHandle
    partitions: tuple[OperatorStatePartition, ...] = ()


@dataclass(frozen=True, slots=True)
class InputChannelStateHandle:
    """In-flight buffers of one input channel, persisted by an unaligned checkpoint."""

    gate_index: int
    channel_index: int
    handle: StreamStateHandle
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ResultSubpartitionStateHandle:
    """Buffered output of one result subpartition, persisted by an unaligned checkpoint."""

    partition_index: int
    subpartition_index: int
    handle: StreamStateHandle
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class OperatorSubtaskState:
    """Everything one operator of one subtask snapshotted for a checkpoint."""

    managed_keyed_state: tuple[KeyedStateHandle, ...] = ()
    managed_operator_state: tuple[OperatorStateHandle, ...] = ()
    input_channel_state: tuple[InputChannelStateHandle, ...] = ()
    result_subpartition_state: tuple[ResultSubpartitionStateHandle, ...] = ()
    source_reader_state: tuple[StreamStateHandle, ...] = ()
    """The opaque position of a source reader (``CheckpointedSourceReader``): restored
    only into the subtask index that wrote it."""
    source_split_state: tuple[StreamStateHandle, ...] = ()
    """The pickled list of split states of a source reader
    (``SplitCheckpointedSourceReader``). In a checkpoint, the one list the subtask
    wrote; handed to a subtask restored at another parallelism, every old subtask's list
    in the old subtasks' order (``source_splits_rescaled``)."""
    source_splits_rescaled: bool = False
    """Set only in the state the JobMaster assigns a subtask restored at another
    parallelism than the checkpoint's (as Flink's ``OperatorSubtaskState`` carries its
    rescaling descriptors): the subtask takes its round-robin share of the flattened
    ``source_split_state`` (``weir.core.source.assign_splits``) instead of all of it."""

    def stream_handles(self) -> Iterator[StreamStateHandle]:
        """Every blob this state refers to."""
        for keyed in self.managed_keyed_state:
            if isinstance(keyed, IncrementalKeyGroupsStateHandle):
                yield from keyed.stream_handles()
            else:
                yield keyed.handle
        for operator in self.managed_operator_state:
            yield operator.handle
        for channel in self.input_channel_state:
            yield channel.handle
        for subpartition in self.result_subpartition_state:
            yield subpartition.handle
        yield from self.source_reader_state
        yield from self.source_split_state

    def shared_paths(self) -> Iterator[str]:
        """The files in ``shared/`` this state refers to (reference-counted)."""
        for keyed in self.managed_keyed_state:
            if isinstance(keyed, IncrementalKeyGroupsStateHandle):
                for file in keyed.shared:
                    if file.handle.path is not None:
                        yield file.handle.path

    @property
    def state_size(self) -> int:
        return sum(handle.size for handle in self.stream_handles())

    @property
    def checkpointed_size(self) -> int:
        """Bytes written for this checkpoint: ``state_size`` less the shared files an
        earlier checkpoint uploaded (Flink's checkpointed size)."""
        size = self.state_size
        for keyed in self.managed_keyed_state:
            if isinstance(keyed, IncrementalKeyGroupsStateHandle):
                size -= sum(h.size for h in keyed.stream_handles()) - keyed.incremental_size
        return size

    @property
    def in_flight_data_size(self) -> int:
        inputs = sum(channel.handle.size for channel in self.input_channel_state)
        outputs = sum(part.handle.size for part in self.result_subpartition_state)
        return inputs + outputs


@dataclass(frozen=True, slots=True)
class TaskStateSnapshot:
    """What one task (a chain of operators) acknowledges: operator id -> its state."""

    subtask_states: Mapping[OperatorId, OperatorSubtaskState] = field(default_factory=dict)

    @property
    def state_size(self) -> int:
        return sum(state.state_size for state in self.subtask_states.values())

    @property
    def checkpointed_size(self) -> int:
        return sum(state.checkpointed_size for state in self.subtask_states.values())


@dataclass(frozen=True, slots=True)
class CheckpointMetrics:
    """What a task measured while taking its part of a checkpoint (reported, not used)."""

    sync_duration_ms: int = 0
    async_duration_ms: int = 0
    alignment_duration_ms: int = 0
    persisted_in_flight_bytes: int = 0
    """Bytes of in-flight data persisted as channel state (unaligned checkpoints)."""
    state_size_bytes: int = 0
