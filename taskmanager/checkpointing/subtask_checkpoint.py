"""A task's side of a checkpoint: capture on the task thread, send the barrier on, write
the state asynchronously and acknowledge; notify user functions; restore on deploy
(Flink's SubtaskCheckpointCoordinator).

Threading: ``checkpoint``, ``notify_*`` and ``restore_*`` run on the task thread (from the
mailbox or the input loop). Only the write and the acknowledgement run on the task's
one background writer thread, which handles checkpoints in order.

An unaligned checkpoint (``CheckpointBarrier.unaligned``) is taken in two steps, as
Flink's ``ChannelStateWriter`` does: on the first barrier the operator state is captured
and the barrier overtakes the queued output (``emit_priority_event``; the overtaken
buffers are output channel state); the write waits until the barrier handler reports
the input channel state complete (``complete_channel_state``). A task without inputs
(a source) writes at once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointStorage,
    CheckpointStorageLocation,
    CheckpointType,
    IncrementalKeyGroupsStateHandle,
    InputChannelStateHandle,
    KeyedStateHandle,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    ResultSubpartitionStateHandle,
    TaskStateSnapshot,
    decode_task_state,
    read_state,
)
from weir.core.checkpoint.savepoint_storage import savepoint_location
from weir.core.ids import ExecutionAttemptId, OperatorId
from weir.core.key_groups import PyFlinkKeyHasher
from weir.taskmanager.checkpointing.key_placement import (
    check_key_placement,
    groups_to_read,
    is_legacy,
    regroup,
)
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    TaskSnapshot,
    capture_task_snapshot,
    decode_buffers,
    decode_keyed_state,
    operators_of_chain,
    with_channel_state,
)
from weir.taskmanager.network.api import ResultPartitionWriter
from weir.taskmanager.operators.base import RestoredSourceState
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.operators.function_state import snapshot_function_state
from weir.taskmanager.state.backend import KeyedStateSnapshot
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend
from weir.taskmanager.task_events import CheckpointBarrier, serialize_event

logger = logging.getLogger(__name__)

Acknowledge = Callable[[ExecutionAttemptId, int, TaskStateSnapshot, CheckpointMetrics], None]
Decline = Callable[[ExecutionAttemptId, int, str], None]

ChannelBuffers = dict[tuple[int, int], list[bytes]]


@dataclass(frozen=True, slots=True)
class _PendingChannelState:
    """An unaligned checkpoint whose operator state is captured and whose input channel
    state is still being collected."""

    snapshot: TaskSnapshot
    output_state: ChannelBuffers
    sync_ms: int


def _functions_of(chain: OperatorChain) -> list[tuple[Any, DefaultOperatorStateBackend]]:
    """(user function, its operator's state backend) of every chained operator that has
    a user function."""
    found = []
    for op in chain.operators:
        function = getattr(op, "function", None) or getattr(op, "source_function", None)
        if function is not None:
            found.append((function, op.setup.operator_state_backend))
    return found


class RestoredTaskState:
    """The state a redeployed task starts from, read from its checkpoint's handles."""

    def __init__(self, data: bytes, max_parallelism: int) -> None:
        self.snapshot = decode_task_state(data)
        self._max_parallelism = max_parallelism

    def keyed_state(
        self,
        operator_id: str,
        hasher: PyFlinkKeyHasher,
        key_groups: range,
        operator: str,
        conform_key: Callable[[Any], Any] | None = None,
    ) -> tuple[
        list[KeyedStateSnapshot],
        list[IncrementalKeyGroupsStateHandle],
        list[IncrementalKeyGroupsStateHandle],
    ]:
        """``(canonical snapshots, incremental handles, legacy incremental handles)`` of the
        operator's keyed state for a backend placing keys with ``hasher`` and owning
        ``key_groups``: the canonical snapshots hold only its key groups, each key in the
        group it belongs to; the incremental handles are restored as they are, the legacy
        ones (``key_placement.is_legacy``) the caller reads in the canonical form and puts
        through ``key_placement.regroup`` (``conform_key`` as there). Raises
        StateMigrationError for state whose keys were placed by another key type
        (``operator`` names the operator)."""
        state = self.snapshot.subtask_states.get(OperatorId(operator_id))
        if state is None:
            return [], [], []
        restored = []
        native: list[IncrementalKeyGroupsStateHandle] = []
        legacy: list[IncrementalKeyGroupsStateHandle] = []
        for handle in state.managed_keyed_state:
            check_key_placement(handle, hasher.key_type, operator)
            wanted = groups_to_read(handle, hasher, key_groups, self._max_parallelism)
            if not wanted:
                continue  # a handle every subtask was given (legacy) that holds none of ours
            if isinstance(handle, IncrementalKeyGroupsStateHandle):
                (legacy if is_legacy(handle) else native).append(handle)
                continue
            snapshot = KeyGroupsSnapshot(
                self._max_parallelism,
                handle.key_groups.start,
                read_state(handle.handle),
                handle.offsets,
                handle.state_meta,
            )
            decoded = decode_keyed_state(snapshot, frozenset(wanted))
            if is_legacy(handle):
                decoded = regroup(decoded, hasher, key_groups, conform_key)
            restored.append(decoded)
        return restored, native, legacy

    def source_state(self, operator_id: str) -> RestoredSourceState | None:
        """The operator's source position or split lists, None when it has neither."""
        state = self.snapshot.subtask_states.get(OperatorId(operator_id))
        if state is None:
            return None
        if state.source_split_state or state.source_splits_rescaled:
            return RestoredSourceState(
                split_lists=tuple(read_state(h) for h in state.source_split_state),
                rescaled=state.source_splits_rescaled,
            )
        if state.source_reader_state:
            return RestoredSourceState(position=read_state(state.source_reader_state[0]))
        return None

    def operator_state(
        self, operator_id: str
    ) -> list[tuple[bytes, tuple[OperatorStatePartition, ...]]]:
        """``(stream, the partitions of it this subtask restores)`` per operator state
        handle the JobMaster assigned this subtask (its own, and others' union state)."""
        state = self.snapshot.subtask_states.get(OperatorId(operator_id))
        if state is None:
            return []
        return [(read_state(h.handle), h.partitions) for h in state.managed_operator_state]

    def channel_state(self) -> tuple[ChannelBuffers, ChannelBuffers]:
        """``(input buffers per (gate, channel), output buffers per (partition,
        subpartition))`` persisted by an unaligned checkpoint, each list in its
        original order; both empty after an aligned one."""
        inputs: ChannelBuffers = {}
        outputs: ChannelBuffers = {}
        for state in self.snapshot.subtask_states.values():
            for ic in state.input_channel_state:
                inputs.setdefault((ic.gate_index, ic.channel_index), []).extend(
                    decode_buffers(read_state(ic.handle))
                )
            for rs in state.result_subpartition_state:
                outputs.setdefault((rs.partition_index, rs.subpartition_index), []).extend(
                    decode_buffers(read_state(rs.handle))
                )
        return inputs, outputs


class SubtaskCheckpointCoordinator:
    def __init__(
        self,
        *,
        attempt_id: ExecutionAttemptId,
        subtask_index: int,
        storage: CheckpointStorage,
        chain: OperatorChain,
        partitions: Sequence[ResultPartitionWriter],
        acknowledge: Acknowledge,
        decline: Decline,
        compress: bool,
        has_inputs: bool = False,
    ) -> None:
        """``has_inputs``: the task reads an input gate, so an unaligned checkpoint waits
        for ``complete_channel_state`` before it is written."""
        self._attempt_id = attempt_id
        self._subtask = subtask_index
        self._storage = storage
        self._chain = chain
        self._partitions = list(partitions)
        self._acknowledge = acknowledge
        self._decline = decline
        self._compress = compress
        self._operators = operators_of_chain(chain)
        self._functions = _functions_of(chain)
        self._has_inputs = has_inputs
        self._pending_channel_state: dict[int, _PendingChannelState] = {}
        self._writer = ThreadPoolExecutor(1, thread_name_prefix=f"checkpoint-{attempt_id[:8]}")
        # FLIP-147: set when the operators finished; the first checkpoint taken after it
        # is the task's final one, and its completion lets the task end.
        self._operators_finished = False
        self._first_after_finish: int | None = None
        self._final_completed = False
        self._closed = False

    def operators_finished(self) -> None:
        """The operators reached the end of input and finished: the next checkpoint this
        task takes is its final one."""
        self._operators_finished = True

    @property
    def final_checkpoint_completed(self) -> bool:
        """A checkpoint taken after the operators finished has completed: what the
        task's sinks prepared is committed, and the task may end."""
        return self._final_completed

    def checkpoint(self, barrier: CheckpointBarrier, alignment_ms: int = 0) -> None:
        """Snapshot now, then send the barrier on: behind everything emitted before it,
        or, for an unaligned barrier, ahead of it (see the module docstring)."""
        n = barrier.checkpoint_id
        started = time.monotonic()
        if self._operators_finished and self._first_after_finish is None:
            self._first_after_finish = n
        try:
            self._chain.prepare_snapshot_pre_barrier(n)
            if barrier.unaligned:
                # Partly filled buffers are not sent now (that may block on a
                # back-pressured channel); they become output channel state below.
                self._chain.flush_operators()
            else:
                self._chain.flush()
            self._chain.snapshot_state(n)
            # The functions update their operator state first; the capture serializes it.
            for function, store in self._functions:
                snapshot_function_state(function, store, n, barrier.timestamp)
            # A savepoint holds keyed state in the canonical form, never a native snapshot.
            savepoint = barrier.checkpoint_type == CheckpointType.SAVEPOINT.value
            snapshot = capture_task_snapshot(n, self._operators, canonical=savepoint)
        except Exception as exc:
            # A failing user hook declines this checkpoint; the task keeps running, as
            # Flink's task does when a snapshot fails (the coordinator counts it).
            logger.warning("checkpoint %d of %s failed", n, self._attempt_id, exc_info=True)
            self._decline(self._attempt_id, n, f"{type(exc).__name__}: {exc}")
            return
        # Whether this task's operators have finished is this task's to say, never its
        # input's (UnalignedBarrierHandler reads a finished producer's channel ahead).
        event = serialize_event(dataclasses.replace(barrier, end_of_data=self._operators_finished))
        if barrier.unaligned:
            output_state: ChannelBuffers = {}
            unsent = self._chain.pending_buffers()
            for p, partition in enumerate(self._partitions):
                for sub, overtaken in enumerate(partition.emit_priority_event(event)):
                    buffers = overtaken + unsent[p].get(sub, [])
                    if buffers:
                        output_state[(p, sub)] = buffers
            sync_ms = int((time.monotonic() - started) * 1000)
            pending = _PendingChannelState(snapshot, output_state, sync_ms)
            if self._has_inputs:
                self._pending_channel_state[n] = pending
            else:
                self._write_channel_state(pending, {})
            return
        for partition in self._partitions:
            partition.broadcast_event(event)
        sync_ms = int((time.monotonic() - started) * 1000)
        self._writer.submit(
            self._write_and_ack, snapshot, sync_ms, alignment_ms, barrier.target_location
        )

    def complete_channel_state(
        self, checkpoint_id: int, input_state: Mapping[tuple[int, int], Sequence[bytes]]
    ) -> None:
        """Every input delivered the unaligned barrier: write the checkpoint with its
        in-flight data and acknowledge it. Ignored if the checkpoint was not taken here
        (its capture failed and was declined) or was aborted meanwhile."""
        pending = self._pending_channel_state.pop(checkpoint_id, None)
        if pending is None:
            logger.debug(
                "channel state of checkpoint %d of %s has no pending snapshot",
                checkpoint_id,
                self._attempt_id,
            )
            return
        self._write_channel_state(pending, input_state)

    def _write_channel_state(
        self,
        pending: _PendingChannelState,
        input_state: Mapping[tuple[int, int], Sequence[bytes]],
    ) -> None:
        snapshot = with_channel_state(pending.snapshot, input_state, pending.output_state)
        self._writer.submit(self._write_and_ack, snapshot, pending.sync_ms, 0)

    def _write_and_ack(
        self,
        snapshot: TaskSnapshot,
        sync_ms: int,
        alignment_ms: int,
        target_location: str = "",
    ) -> None:
        n = snapshot.checkpoint_id
        started = time.monotonic()
        try:
            location = (
                savepoint_location(target_location, n, create=False)
                if target_location
                else self._storage.resolve_checkpoint(n)
            )
            states: dict[OperatorId, OperatorSubtaskState] = {}
            for op in snapshot.operators:
                keyed: tuple[KeyedStateHandle, ...] = ()
                source: tuple[Any, ...] = ()
                splits: tuple[Any, ...] = ()
                operator: tuple[OperatorStateHandle, ...] = ()
                prefix = f"{op.operator_id}-{self._subtask}"
                if op.native_keyed_state is not None:
                    keyed = (op.native_keyed_state.write(self._storage, location, prefix),)
                if op.deferred_keyed_state is not None:
                    keyed = (op.deferred_keyed_state.write(location, prefix, self._compress),)
                if op.keyed_state is not None:
                    kg = op.keyed_state
                    handle = location.write_state(f"{prefix}-keyed", kg.data, self._compress)
                    start = kg.key_group_start
                    key_groups = KeyGroupRange(start, start + len(kg.offsets))
                    keyed = (KeyGroupsStateHandle(key_groups, handle, kg.offsets, kg.state_meta),)
                # Which key type placed the keys: a restore regroups state that records none.
                keyed = tuple(dataclasses.replace(h, key_placement=op.key_placement) for h in keyed)
                if op.source_state is not None:
                    handle = location.write_state(
                        f"{prefix}-source", op.source_state, self._compress
                    )
                    if op.source_splits:
                        splits = (handle,)
                    else:
                        source = (handle,)
                if op.operator_state is not None:
                    data = op.operator_state.data
                    handle = location.write_state(f"{prefix}-operator", data, self._compress)
                    operator = (OperatorStateHandle(handle, op.operator_state.partitions),)
                inputs: tuple[InputChannelStateHandle, ...] = ()
                outputs: tuple[ResultSubpartitionStateHandle, ...] = ()
                if op is snapshot.operators[0]:
                    # In-flight data belongs to the task; it is kept with the chain's head.
                    inputs, outputs = self._write_channel_handles(snapshot, location, prefix)
                if keyed or source or splits or operator or inputs or outputs:
                    states[OperatorId(op.operator_id)] = OperatorSubtaskState(
                        managed_keyed_state=keyed,
                        managed_operator_state=operator,
                        input_channel_state=inputs,
                        result_subpartition_state=outputs,
                        source_reader_state=source,
                        source_split_state=splits,
                    )
            task_state = TaskStateSnapshot(states)
        except Exception as exc:
            if self._closed:
                # The task ended while this was written and its state (a rocksdb copy
                # being read, say) went with it; nobody waits for this checkpoint.
                logger.debug(
                    "checkpoint %d of %s dropped: the task ended",
                    n,
                    self._attempt_id,
                    exc_info=True,
                )
                return
            if (
                isinstance(exc, FileNotFoundError)
                and not target_location
                and not self._storage.checkpoint_exists(n)
            ):
                # Its directory is gone: the coordinator aborted the checkpoint (a task
                # finished first, a later one completed) and deleted it; ids never repeat,
                # so nothing else was lost. One line, no traceback: this is expected.
                logger.info(
                    "checkpoint %d of %s dropped: it was aborted while its state was written (%s)",
                    n,
                    self._attempt_id,
                    exc,
                )
            else:
                logger.warning(
                    "writing checkpoint %d of %s failed", n, self._attempt_id, exc_info=True
                )
            self._decline(self._attempt_id, n, f"writing its state failed: {exc}")
            return
        metrics = CheckpointMetrics(
            sync_duration_ms=sync_ms,
            async_duration_ms=int((time.monotonic() - started) * 1000),
            alignment_duration_ms=alignment_ms,
            persisted_in_flight_bytes=sum(
                s.in_flight_data_size for s in task_state.subtask_states.values()
            ),
            state_size_bytes=task_state.state_size,
        )
        self._acknowledge(self._attempt_id, n, task_state, metrics)

    def _write_channel_handles(
        self, snapshot: TaskSnapshot, location: CheckpointStorageLocation, prefix: str
    ) -> tuple[tuple[InputChannelStateHandle, ...], tuple[ResultSubpartitionStateHandle, ...]]:
        inputs = tuple(
            InputChannelStateHandle(
                g, c, location.write_state(f"{prefix}-input-{g}-{c}", blob, self._compress)
            )
            for (g, c), blob in sorted(snapshot.input_channel_state.items())
        )
        outputs = tuple(
            ResultSubpartitionStateHandle(
                p, sub, location.write_state(f"{prefix}-output-{p}-{sub}", blob, self._compress)
            )
            for (p, sub), blob in sorted(snapshot.result_subpartition_state.items())
        )
        return inputs, outputs

    def decline(self, checkpoint_id: int, reason: str) -> None:
        self._pending_channel_state.pop(checkpoint_id, None)
        self._decline(self._attempt_id, checkpoint_id, reason)

    def notify_complete(self, checkpoint_id: int) -> None:
        for op in self._operators:
            if op.keyed_state_backend is not None:
                op.keyed_state_backend.notify_checkpoint_complete(checkpoint_id)
        self._notify("notify_checkpoint_complete", checkpoint_id)
        first = self._first_after_finish
        if first is not None and checkpoint_id >= first:
            self._final_completed = True

    def notify_aborted(self, checkpoint_id: int) -> None:
        self._pending_channel_state.pop(checkpoint_id, None)
        for op in self._operators:
            if op.keyed_state_backend is not None:
                op.keyed_state_backend.notify_checkpoint_aborted(checkpoint_id)
        self._notify("notify_checkpoint_aborted", checkpoint_id)

    def _notify(self, method: str, checkpoint_id: int) -> None:
        targets = [fn for fn, _ in self._functions] + [
            op.source_reader for op in self._operators if op.source_reader is not None
        ]
        for target in targets:
            hook = getattr(target, method, None)
            if callable(hook):
                hook(checkpoint_id)

    def close(self) -> None:
        """Let writes in flight finish (their acks may still complete a checkpoint); one
        that fails from now on (its state disposed under it) is dropped quietly."""
        self._closed = True
        self._writer.shutdown(wait=False)
