"""Which state each subtask of a job restores, from a checkpoint's operator states
(Flink's ``StateAssignmentOperation``), at the checkpoint's parallelism or another one.

- Keyed state moves by key group: new subtask ``i`` gets every old handle whose
  key-group range overlaps the range it owns (``key_group_range_for_operator``), and
  its backend reads only its own groups from them. At the same parallelism that is
  exactly the handle the subtask wrote. A handle that records no key placement (written
  before they were recorded) goes to every subtask: its keys may belong to other groups
  now, which only the task, knowing the key type, can tell
  (``weir.taskmanager.checkpointing.key_placement``).
- Operator state is redistributed by mode (``repartition_operator_state``): list state
  split, union state to every subtask (also at the same parallelism), broadcast state
  copied.
- A source reader's splits (``source_split_state``) go back to the subtask that wrote
  them at the same parallelism; at another one every new subtask gets every old
  subtask's split list, in the old order, marked ``source_splits_rescaled``, and takes
  its round-robin share itself (``weir.core.source.assign_splits``): the splits are the
  user's pickled objects, which the JobMaster never unpickles.
- An opaque source position (a reader without splits) and in-flight data (unaligned
  checkpoints) go back to the subtask index that wrote them; they cannot be split, so
  an operator that has them keeps its parallelism (``check_restorable`` says so before
  anything is deployed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from weir.core.checkpoint import (
    KeyedStateHandle,
    OperatorState,
    OperatorStateHandle,
    OperatorSubtaskState,
    StreamStateHandle,
    TaskStateSnapshot,
    encode_task_state,
    repartition_operator_state,
)
from weir.core.errors import StateMigrationError
from weir.core.ids import OperatorId
from weir.core.job_graph import JobVertex
from weir.core.key_groups import key_group_range_for_operator

__all__ = ["assign_subtask_states", "check_restorable"]


def check_restorable(
    vertices: Sequence[JobVertex], operator_states: Mapping[OperatorId, OperatorState], source: str
) -> None:
    """Raise StateMigrationError, naming the operator and both values, when state of
    ``source`` cannot be restored into ``vertices``: another max parallelism, or source
    positions or in-flight data at another parallelism."""
    for vertex in vertices:
        for op in vertex.operators:
            state = operator_states.get(OperatorId(op.operator_id))
            if state is None:
                continue
            label = f"operator {op.uid or op.operator_id} ({op.name})"
            if state.max_parallelism != vertex.max_parallelism:
                msg = (
                    f"{label} has max parallelism {vertex.max_parallelism}, but the state at "
                    f"{source} was written with max parallelism {state.max_parallelism}; key "
                    "groups cannot be mapped between them. Set the operator's max parallelism "
                    f"back to {state.max_parallelism} (set_max_parallelism, or "
                    "pipeline.max-parallelism)"
                )
                raise StateMigrationError(msg)
            if state.parallelism == vertex.parallelism:
                continue
            subtasks = state.subtask_states.values()
            if any(s.source_reader_state for s in subtasks):
                msg = (
                    f"{label} is a source that ran at parallelism {state.parallelism} when "
                    f"the state at {source} was taken, and now runs at {vertex.parallelism}; "
                    "its reader keeps one opaque position per subtask (snapshot_state), "
                    "which cannot be split over another parallelism. Keep the source at "
                    f"parallelism {state.parallelism} (set_parallelism on it) and rescale "
                    "the operators after it, or give its reader snapshot_splits/"
                    "restore_splits (weir.core.source.SplitCheckpointedSourceReader)"
                )
                raise StateMigrationError(msg)
            if any(s.input_channel_state or s.result_subpartition_state for s in subtasks):
                msg = (
                    f"{label}: the state at {source} holds in-flight data of an unaligned "
                    f"checkpoint taken at parallelism {state.parallelism}, which cannot be "
                    f"restored at {vertex.parallelism}. Restore it at parallelism "
                    f"{state.parallelism}, or take a savepoint (always aligned) and rescale "
                    "from that"
                )
                raise StateMigrationError(msg)


def assign_subtask_states(
    vertices: Sequence[JobVertex], operator_states: Mapping[OperatorId, OperatorState]
) -> dict[tuple[str, int], bytes]:
    """Per ``(vertex id, subtask index)``, the encoded states of its vertex's operators;
    subtasks with nothing to restore are left out. Call ``check_restorable`` first."""
    restored: dict[tuple[str, int], bytes] = {}
    for vertex in vertices:
        per_subtask: list[dict[OperatorId, OperatorSubtaskState]] = [
            {} for _ in range(vertex.parallelism)
        ]
        for op in vertex.operators:
            state = operator_states.get(OperatorId(op.operator_id))
            if state is None:
                continue
            operator = _operator_state_of_subtasks(state, vertex.parallelism)
            keyed = _keyed_state_of_subtasks(state, vertex)
            same = state.parallelism == vertex.parallelism
            # At another parallelism every new subtask gets every old split list.
            splits = () if same else _split_lists_of_subtasks(state)
            for index, states in enumerate(per_subtask):
                own = state.subtask_states.get(index) if same else None
                if own is None and not operator[index] and not keyed[index] and not splits:
                    continue
                base = own if own is not None else OperatorSubtaskState()
                if splits:
                    base = dataclasses.replace(
                        base, source_split_state=splits, source_splits_rescaled=True
                    )
                states[OperatorId(op.operator_id)] = dataclasses.replace(
                    base,
                    managed_keyed_state=tuple(keyed[index]),
                    managed_operator_state=tuple(operator[index]),
                )
        for index, states in enumerate(per_subtask):
            if states:
                restored[(vertex.vertex_id, index)] = encode_task_state(TaskStateSnapshot(states))
    return restored


def _keyed_state_of_subtasks(
    state: OperatorState, vertex: JobVertex
) -> list[list[KeyedStateHandle]]:
    """Per new subtask, the old keyed handles that hold some of its key groups (every
    handle recording no key placement)."""
    handles = [
        handle
        for _, subtask in sorted(state.subtask_states.items())
        for handle in subtask.managed_keyed_state
    ]
    out: list[list[KeyedStateHandle]] = []
    for index in range(vertex.parallelism):
        owned = key_group_range_for_operator(vertex.max_parallelism, vertex.parallelism, index)
        out.append(
            [
                h
                for h in handles
                if not h.key_placement
                or (h.key_groups.start < owned.stop and owned.start < h.key_groups.end)
            ]
        )
    return out


def _split_lists_of_subtasks(state: OperatorState) -> tuple[StreamStateHandle, ...]:
    """Every old subtask's split list handle, in the old subtasks' order (finished
    subtasks hold none: their splits are done)."""
    return tuple(
        handle
        for _, subtask in sorted(state.subtask_states.items())
        for handle in subtask.source_split_state
    )


def _operator_state_of_subtasks(
    state: OperatorState, parallelism: int
) -> list[list[OperatorStateHandle]]:
    previous = [
        list(s.managed_operator_state) if (s := state.subtask_states.get(i)) is not None else []
        for i in range(state.parallelism)
    ]
    return repartition_operator_state(previous, parallelism)
