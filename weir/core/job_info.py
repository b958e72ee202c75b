"""Job and task status as the services report it (Flink's JobDetails / archived graph)."""

from __future__ import annotations

from dataclasses import dataclass, field

from proto import common_pb2


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

    def to_proto(self) -> common_pb2.JobDetails:
        message = common_pb2.JobDetails(
            job_id=self.job_id,
            job_name=self.job_name,
            status=self.status,
            start_time_ms=self.start_time_ms,
            end_time_ms=self.end_time_ms,
            failure_cause=self.failure_cause,
            jobmaster_address=self.jobmaster_address,
        )
        for t in self.tasks:
            message.tasks.add(
                vertex_id=t.vertex_id,
                task_name=t.task_name,
                subtask_index=t.subtask_index,
                attempt_number=t.attempt_number,
                execution_attempt_id=t.execution_attempt_id,
                state=t.state,
                resource_id=t.resource_id,
                failure_cause=t.failure_cause,
            )
        return message

    @staticmethod
    def from_proto(message: common_pb2.JobDetails) -> JobDetailsInfo:
        return JobDetailsInfo(
            job_id=message.job_id,
            job_name=message.job_name,
            status=message.status,
            start_time_ms=message.start_time_ms,
            end_time_ms=message.end_time_ms,
            failure_cause=message.failure_cause,
            jobmaster_address=message.jobmaster_address,
            tasks=tuple(
                TaskStatusInfo(
                    vertex_id=t.vertex_id,
                    task_name=t.task_name,
                    subtask_index=t.subtask_index,
                    attempt_number=t.attempt_number,
                    execution_attempt_id=t.execution_attempt_id,
                    state=t.state,
                    resource_id=t.resource_id,
                    failure_cause=t.failure_cause,
                )
                for t in message.tasks
            ),
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
            job_id=self.job_id,
            checkpointing_enabled=self.checkpointing_enabled,
            num_triggered=self.num_triggered,
            num_in_progress=self.num_in_progress,
            num_completed=self.num_completed,
            num_failed=self.num_failed,
            num_restored=self.num_restored,
            latest_completed_path=self.latest_completed_path,
            latest_restored_id=self.latest_restored_id,
            latest_restored_path=self.latest_restored_path,
        )
        for e in self.history:
            message.history.add(
                checkpoint_id=e.checkpoint_id,
                status=e.status,
                checkpoint_type=e.checkpoint_type,
                trigger_timestamp_ms=e.trigger_timestamp_ms,
                end_to_end_duration_ms=e.end_to_end_duration_ms,
                sync_duration_ms=e.sync_duration_ms,
                async_duration_ms=e.async_duration_ms,
                alignment_duration_ms=e.alignment_duration_ms,
                state_size_bytes=e.state_size_bytes,
                persisted_in_flight_bytes=e.persisted_in_flight_bytes,
                num_subtasks=e.num_subtasks,
                num_acknowledged=e.num_acknowledged,
                external_path=e.external_path,
                failure_message=e.failure_message,
            )
        return message

    @staticmethod
    def from_proto(message: common_pb2.CheckpointStatistics) -> CheckpointStatisticsInfo:
        return CheckpointStatisticsInfo(
            job_id=message.job_id,
            checkpointing_enabled=message.checkpointing_enabled,
            num_in_progress=message.num_in_progress,
            num_completed=message.num_completed,
            num_failed=message.num_failed,
            num_restored=message.num_restored,
            latest_completed_path=message.latest_completed_path,
            latest_restored_id=message.latest_restored_id,
            latest_restored_path=message.latest_restored_path,
            history=tuple(
                CheckpointStatisticsEntry(
                    checkpoint_id=e.checkpoint_id,
                    status=e.status,
                    checkpoint_type=e.checkpoint_type,
                    trigger_timestamp_ms=e.trigger_timestamp_ms,
                    end_to_end_duration_ms=e.end_to_end_duration_ms,
                    sync_duration_ms=e.sync_duration_ms,
                    async_duration_ms=e.async_duration_ms,
                    alignment_duration_ms=e.alignment_duration_ms,
                    state_size_bytes=e.state_size_bytes,
                    persisted_in_flight_bytes=e.persisted_in_flight_bytes,
                    num_subtasks=e.num_subtasks,
                    num_acknowledged=e.num_acknowledged,
                    external_path=e.external_path,
                    failure_message=e.failure_message,
                )
                for e in message.history
            ),
        )
