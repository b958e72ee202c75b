"""Job and task status as the services report it (Flink's JobDetails / archived graph)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from weir.proto import common_pb2


@dataclass(frozen=True, slots=True)
class TaskStatusInfo:
    vertex_id: str
    task_name: str
    subtask_index: int
    attempt_number: int
    execution_attempt_id: str
    state: str
    resource_id: str = ""
    failure_cause: str = ""


@dataclass(frozen=True, slots=True)
class JobDetailsInfo:
    job_id: str
    job_name: str
    status: str
    start_time_ms: int = 0
    end_time_ms: int = 0
    failure_cause: str = ""
    tasks: tuple[TaskStatusInfo, ...] = field(default_factory=tuple)
    jobmaster_address: str = ""
    status_version: int = 0

    def to_proto(self) -> common_pb2.JobDetails:
        message = common_pb2.JobDetails(**_scalars(self, exclude=("tasks",)))
        for t in self.tasks:
            message.tasks.add(**_scalars(t))
        return message

    @staticmethod
    def from_proto(message: common_pb2.JobDetails) -> JobDetailsInfo:
        return JobDetailsInfo(
            **_from_message(JobDetailsInfo, message, exclude=("tasks",)),
            tasks=tuple(TaskStatusInfo(**_from_message(TaskStatusInfo, t)) for t in message.tasks),
        )


@dataclass(frozen=True, slots=True)
class CheckpointStatisticsEntry:
    """One checkpoint in a job's history (Flink's checkpoint details): durations are the
    longest over the subtasks, sizes the sum over them."""

    checkpoint_id: int
    status: str
    checkpoint_type: str = "CHECKPOINT"
    trigger_timestamp_ms: int = 0
    end_to_end_duration_ms: int = 0
    sync_duration_ms: int = 0
    async_duration_ms: int = 0
    alignment_duration_ms: int = 0
    state_size_bytes: int = 0
    persisted_in_flight_bytes: int = 0
    num_subtasks: int = 0
    num_acknowledged: int = 0
    external_path: str = ""
    failure_message: str = ""


@dataclass(frozen=True, slots=True)
class CheckpointStatisticsInfo:
    """A job's checkpoint counts and latest history, newest first (Flink's
    CheckpointingStatistics)."""

    job_id: str
    checkpointing_enabled: bool = False
    num_in_progress: int = 0
    num_completed: int = 0
    num_failed: int = 0
    num_restored: int = 0
    history: tuple[CheckpointStatisticsEntry, ...] = ()
    latest_completed_path: str = ""
    latest_restored_id: int = 0
    latest_restored_path: str = ""

    @property
    def num_triggered(self) -> int:
        return self.num_in_progress + self.num_completed + self.num_failed

    def to_proto(self) -> common_pb2.CheckpointStatistics:
        message = common_pb2.CheckpointStatistics(
            **_scalars(self, exclude=("history",)), num_triggered=self.num_triggered
        )
        for e in self.history:
            message.history.add(**_scalars(e))
        return message

    @staticmethod
    def from_proto(message: common_pb2.CheckpointStatistics) -> CheckpointStatisticsInfo:
        return CheckpointStatisticsInfo(
            **_from_message(CheckpointStatisticsInfo, message, exclude=("history",)),
            history=tuple(
                CheckpointStatisticsEntry(**_from_message(CheckpointStatisticsEntry, e))
                for e in message.history
            ),
        )


def _scalars(info: Any, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The dataclass's fields by name: the proto messages use the same field names."""
    return {f.name: getattr(info, f.name) for f in fields(info) if f.name not in exclude}


def _from_message(cls: type, message: Any, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    return {f.name: getattr(message, f.name) for f in fields(cls) if f.name not in exclude}
