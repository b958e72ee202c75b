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
