"""Which state each subtask of a job restores, from a checkpoint's operator states
(Flink's ``StateAssignmentOperation``).

Keyed state, source positions and in-flight data go back to the subtask index that
wrote them (the parallelism is the checkpoint's). Operator state is redistributed by
mode (``repartition_operator_state``) even so: a union list state reaches every subtask
whatever the parallelism, while list and broadcast state stay with their subtask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from weir.core.checkpoint import (
    OperatorState,
    OperatorStateHandle,
    OperatorSubtaskState,
    TaskStateSnapshot,
    encode_task_state,
    repartition_operator_state,
)
from weir.core.ids import OperatorId
from weir.core.job_graph import JobVertex

__all__ = ["assign_subtask_states"]


def assign_subtask_states(
    vertices: Sequence[JobVertex], operator_states: Mapping[OperatorId, OperatorState]
) -> dict[tuple[str, int], bytes]:
    """Per ``(vertex id, subtask index)``, the encoded states of its vertex's operators;
    subtasks with nothing to restore are left out."""
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
            for index, states in enumerate(per_subtask):
                own = state.subtask_states.get(index)
                if own is None and not operator[index]:
                    continue
                base = own if own is not None else OperatorSubtaskState()
                states[OperatorId(op.operator_id)] = dataclasses.replace(
                    base, managed_operator_state=tuple(operator[index])
                )
        for index, states in enumerate(per_subtask):
            if states:
                restored[(vertex.vertex_id, index)] = encode_task_state(TaskStateSnapshot(states))
    return restored


def _operator_state_of_subtasks(
    state: OperatorState, parallelism: int
) -> list[list[OperatorStateHandle]]:
    previous = [
        list(s.managed_operator_state) if (s := state.subtask_states.get(i)) is not None else []
        for i in range(state.parallelism)
    ]
    return repartition_operator_state(previous, parallelism)
