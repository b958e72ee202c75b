"""The tasks of one checkpoint (Flink's CheckpointPlan and DefaultCheckpointPlanCalculator):
which running tasks take part, at which of them the barrier is injected, and which
operators had subtasks finished when it was planned.

Pure: computed from an execution graph's task states, under the scheduler's lock (the
coordinator asks through its plan provider when it triggers); no I/O, no lock of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from weir.core.deployment import ExecutionState
from weir.core.ids import ExecutionAttemptId, OperatorId
from weir.jobmanager.execution_graph import ExecutionGraph

# Task states in which a checkpoint can be taken when tasks may finish (FLIP-147).
CHECKPOINTABLE = (ExecutionState.RUNNING, ExecutionState.FINISHED)


@dataclass(frozen=True, slots=True)
class CheckpointTask:
    """One running task that takes part in a checkpoint."""

    attempt_id: ExecutionAttemptId
    subtask_index: int
    parallelism: int
    is_source: bool = False
    """The coordinator triggers the checkpoint here: a task without inputs, or one whose
    upstream tasks have all finished (FLIP-147), which then takes it once its inputs
    have ended. Every task acknowledges."""


@dataclass(frozen=True, slots=True)
class FinishedOperator:
    """An operator some of whose subtasks had finished when the checkpoint was planned."""

    parallelism: int
    finished_subtasks: frozenset[int]


@dataclass(frozen=True, slots=True)
class CheckpointPlan:
    """The tasks of a checkpoint (Flink's CheckpointPlan), computed when it is triggered."""

    tasks: tuple[CheckpointTask, ...]
    max_parallelism: Mapping[OperatorId, int] = field(default_factory=dict)
    """Max parallelism of each stateful operator, recorded in ``_metadata``."""
    finished: Mapping[OperatorId, FinishedOperator] = field(default_factory=dict)
    """Operators with finished subtasks: recorded as finished in ``_metadata``."""
    uids: Mapping[OperatorId, str] = field(default_factory=dict)
    """The uid of each operator that has one, recorded in ``_metadata`` (state readers
    and error messages name operators by it)."""

    @property
    def tasks_to_trigger(self) -> tuple[CheckpointTask, ...]:
        return tuple(task for task in self.tasks if task.is_source)


def plan_checkpoint(
    graph: ExecutionGraph, finished: Set[ExecutionAttemptId], final_checkpoints: bool
) -> CheckpointPlan | None:
    """The plan of a checkpoint of ``graph``'s attempt now, or None when it cannot be
    taken: not every task is RUNNING (or FINISHED, with final checkpoints), or none is
    left running. ``finished``: the attempts that count as finished (exited after their
    final checkpoint, or deployed as finished on restore).

    With final checkpoints (FLIP-147) the finished tasks are recorded as finished, and the
    checkpoint is triggered at the running tasks none of whose producers still runs: the
    sources, and the tasks whose upstream tasks have all finished."""
    executions = graph.all_executions()
    allowed = CHECKPOINTABLE if final_checkpoints else (ExecutionState.RUNNING,)
    if not all(ev.current.state in allowed for ev in executions):
        return None
    tasks = tuple(
        CheckpointTask(
            ev.current.attempt_id,
            ev.subtask_index,
            ev.job_vertex.parallelism,
            is_source=all(p.current.attempt_id in finished for p in graph.producers_of(ev)),
        )
        for ev in executions
        if ev.current.attempt_id not in finished
    )
    if not tasks:
        return None
    job_graph = graph.job_graph
    max_parallelism = {
        OperatorId(op.operator_id): v.max_parallelism
        for v in job_graph.vertices
        for op in v.operators
    }
    finished_operators: dict[OperatorId, FinishedOperator] = {}
    for vertex in job_graph.vertices:
        indices = frozenset(
            ev.subtask_index
            for ev in graph.vertices[vertex.vertex_id]
            if ev.current.attempt_id in finished
        )
        for op in vertex.operators if indices else ():
            finished_operators[OperatorId(op.operator_id)] = FinishedOperator(
                vertex.parallelism, indices
            )
    uids = {
        OperatorId(op.operator_id): op.uid
        for v in job_graph.vertices
        for op in v.operators
        if op.uid
    }
    return CheckpointPlan(tasks, max_parallelism, finished_operators, uids)
