"""What each subtask of an attempt restores from a checkpoint: its encoded task state and
whether it was recorded as finished (then it is deployed to run nothing); and, for a job
started from a retained checkpoint or savepoint (``weir run -s``), the checks that the
state fits the job before anything is deployed.

Pure: no I/O and no lock; the scheduler keeps the plan of its current attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from weir.core.checkpoint import OperatorState
from weir.core.errors import JobSubmissionError, StateMigrationError
from weir.core.ids import OperatorId
from weir.core.job_graph import JobGraph
from weir.jobmanager.checkpoint.state_assignment import assign_subtask_states, check_restorable

logger = logging.getLogger(__name__)

SubtaskKey = tuple[str, int]
"""(vertex id, subtask index)."""


@dataclass(frozen=True, slots=True)
class RestorePlan:
    checkpoint_id: int = 0
    """The restored checkpoint; 0 when the attempt starts empty."""
    subtask_states: Mapping[SubtaskKey, bytes] = field(default_factory=dict)
    """Per subtask, the encoded states of its vertex's operators."""
    finished_subtasks: frozenset[SubtaskKey] = frozenset()
    """Subtasks the checkpoint recorded as finished: deployed so that they run nothing,
    and counted as finished by every checkpoint of the attempt."""

    def state_of(self, vertex_id: str, subtask_index: int) -> bytes | None:
        return self.subtask_states.get((vertex_id, subtask_index))

    def is_finished(self, vertex_id: str, subtask_index: int) -> bool:
        return (vertex_id, subtask_index) in self.finished_subtasks


NOTHING_RESTORED = RestorePlan()


def restore_plan(
    job_graph: JobGraph, operator_states: Mapping[OperatorId, OperatorState], checkpoint_id: int
) -> RestorePlan:
    """The plan of an attempt restored from checkpoint ``checkpoint_id``, at the job's
    parallelism (the state rescaled where the checkpoint's differs)."""
    return RestorePlan(
        checkpoint_id,
        assign_subtask_states(job_graph.vertices, operator_states),
        _finished_subtasks(job_graph, operator_states),
    )


def _finished_subtasks(
    job_graph: JobGraph, operator_states: Mapping[OperatorId, OperatorState]
) -> frozenset[SubtaskKey]:
    """The subtasks every operator of whose vertex a checkpoint recorded as finished.
    At another parallelism only a fully finished operator counts: the new subtasks of a
    partly finished one are not the old ones, so they all run."""
    finished: set[SubtaskKey] = set()
    for vertex in job_graph.vertices:
        states = [operator_states.get(OperatorId(op.operator_id)) for op in vertex.operators]
        for index in range(vertex.parallelism):
            if all(
                s is not None
                and (
                    index in s.finished_subtasks
                    if s.parallelism == vertex.parallelism
                    else s.is_fully_finished
                )
                for s in states
            ):
                finished.add((vertex.vertex_id, index))
    return frozenset(finished)


def _operator_label(operator_id: OperatorId, state: OperatorState) -> str:
    """How messages name an operator of a checkpoint: by uid when it had one."""
    return f"uid {state.uid!r}" if state.uid else f"operator id {operator_id}"


def initial_restore_plan(
    job_graph: JobGraph,
    operator_states: Mapping[OperatorId, OperatorState],
    source: str,
    allow_non_restored: bool,
    checkpoint_id: int,
) -> RestorePlan:
    """The plan of a job's first attempt started from the state at ``source`` (``weir run
    -s``). Raises JobSubmissionError when the checkpoint holds state of operators this job
    lacks (unless ``allow_non_restored``) or state that cannot be restored into it
    (``check_restorable``); logs state matched without a uid and state rescaled."""
    job_id = job_graph.job_id
    vertex_of = {op.operator_id: vertex for vertex in job_graph.vertices for op in vertex.operators}
    unclaimed = sorted(
        _operator_label(op_id, state)
        for op_id, state in operator_states.items()
        if op_id not in vertex_of
    )
    if unclaimed and not allow_non_restored:
        msg = (
            f"job {job_id}: the state at {source} holds state of operators this job "
            f"does not have ({', '.join(unclaimed)}); give the stateful operators the uid "
            "they had when it was taken, or drop that state on purpose with "
            "--allowNonRestoredState (-n, execution.state-recovery.ignore-unclaimed-state)"
        )
        raise JobSubmissionError(msg)
    if unclaimed:
        logger.warning(
            "job %s: dropping the state of operators it does not have: %s",
            job_id,
            ", ".join(unclaimed),
        )
    try:
        check_restorable(job_graph.vertices, operator_states, source)
    except StateMigrationError as exc:
        msg = f"job {job_id}: {exc}"
        raise JobSubmissionError(msg) from exc
    derived = sorted(
        f"{op.name} ({op_id})"
        for vertex in job_graph.vertices
        for op in vertex.operators
        if (op_id := OperatorId(op.operator_id)) in operator_states and not op.uid
    )
    if derived:
        logger.warning(
            "job %s: state restored into operators without a uid, matched by the id "
            "derived from the job's graph: %s. That id changes when operators are added "
            "or removed before them; give every stateful operator a uid (.uid(...))",
            job_id,
            ", ".join(derived),
        )
    rescaled = sorted(
        f"{_operator_label(op_id, state)} {state.parallelism} -> {vertex.parallelism}"
        for op_id, state in operator_states.items()
        if (vertex := vertex_of.get(op_id)) is not None and state.parallelism != vertex.parallelism
    )
    if rescaled:
        logger.info("job %s: rescaling restored state: %s", job_id, ", ".join(rescaled))
    return restore_plan(job_graph, operator_states, checkpoint_id)
