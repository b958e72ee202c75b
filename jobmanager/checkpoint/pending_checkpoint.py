"""A checkpoint that was triggered and is waiting for its tasks' acknowledgements."""

from __future__ import annotations

import enum

from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointStorageLocation,
    CheckpointType,
    OperatorSubtaskState,
    TaskStateSnapshot,
)
from weir.core.ids import ExecutionAttemptId, OperatorId
from weir.jobmanager.checkpoint.checkpoint_plan import CheckpointPlan, CheckpointTask
from weir.jobmanager.checkpoint.scheduling import ScheduledTask


class AckResult(enum.Enum):
    SUCCESS = "SUCCESS"
    DUPLICATE = "DUPLICATE"
    UNKNOWN_TASK = "UNKNOWN_TASK"
    DISCARDED = "DISCARDED"


class PendingCheckpoint:
    """Checkpoint ``checkpoint_id`` in progress. Not thread-safe: the coordinator's lock
    guards it."""

    def __init__(
        self,
        checkpoint_id: int,
        trigger_timestamp_ms: int,
        plan: CheckpointPlan,
        location: CheckpointStorageLocation,
        checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT,
    ) -> None:
        self.checkpoint_id = checkpoint_id
        self.trigger_timestamp_ms = trigger_timestamp_ms
        self.plan = plan
        self.location = location
        self.checkpoint_type = checkpoint_type
        self._not_yet_acknowledged = {task.attempt_id: task for task in plan.tasks}
        self.acknowledged: dict[ExecutionAttemptId, tuple[CheckpointTask, TaskStateSnapshot]] = {}
        self.metrics: dict[ExecutionAttemptId, CheckpointMetrics] = {}
        self.last_ack_timestamp_ms = trigger_timestamp_ms
        self.timeout_task: ScheduledTask | None = None
        self.disposed = False

    def waits_for(self, attempt_id: ExecutionAttemptId) -> bool:
        """The task is one of this checkpoint's and has not acknowledged it yet."""
        return attempt_id in self._not_yet_acknowledged

    @property
    def is_fully_acknowledged(self) -> bool:
        return not self._not_yet_acknowledged and not self.disposed

    @property
    def num_acknowledged(self) -> int:
        return len(self.acknowledged)

    @property
    def num_tasks(self) -> int:
        return len(self.plan.tasks)

    def acknowledge(
        self,
        attempt_id: ExecutionAttemptId,
        snapshot: TaskStateSnapshot,
        metrics: CheckpointMetrics,
        timestamp_ms: int,
    ) -> AckResult:
        if self.disposed:
            return AckResult.DISCARDED
        task = self._not_yet_acknowledged.pop(attempt_id, None)
        if task is None:
            if attempt_id in self.acknowledged:
                return AckResult.DUPLICATE
            return AckResult.UNKNOWN_TASK
        self.acknowledged[attempt_id] = (task, snapshot)
        self.metrics[attempt_id] = metrics
        self.last_ack_timestamp_ms = timestamp_ms
        return AckResult.SUCCESS

    def operator_states(self) -> dict[OperatorId, dict[int, tuple[int, OperatorSubtaskState]]]:
        """operator id -> subtask index -> (parallelism, state), from every acknowledgement."""
        result: dict[OperatorId, dict[int, tuple[int, OperatorSubtaskState]]] = {}
        for task, snapshot in self.acknowledged.values():
            for operator_id, state in snapshot.subtask_states.items():
                result.setdefault(operator_id, {})[task.subtask_index] = (task.parallelism, state)
        return result

    def dispose(self) -> None:
        self.disposed = True
        if self.timeout_task is not None:
            self.timeout_task.cancel()
            self.timeout_task = None
