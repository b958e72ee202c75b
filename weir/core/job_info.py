"""Job and task status as the services report it (Flink's JobDetails / archived graph)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from weir.core.exception_history import ExceptionHistoryEntry
from weir.proto import common_pb2


@dataclass(frozen=True, slots=True)
class IOMetricsInfo:
    """A task's counts when it ended (Flink's IOMetrics): what the REST API shows for a
    subtask whose TaskManager no longer reports it."""

    num_records_in: int = 0
    num_records_out: int = 0
    num_bytes_in: int = 0
    num_bytes_out: int = 0
    accumulated_idle_ms: float = 0.0
    accumulated_back_pressured_ms: float = 0.0

    def to_proto(self) -> common_pb2.IOMetrics:
        return common_pb2.IOMetrics(**_scalars(self))

    @staticmethod
    def from_proto(message: common_pb2.IOMetrics) -> IOMetricsInfo:
        return IOMetricsInfo(**_from_message(IOMetricsInfo, message))


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
    io_metrics: IOMetricsInfo | None = None


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
    exception_history: tuple[ExceptionHistoryEntry, ...] = ()
    """Its failovers, oldest first (``web.exception-history-size`` of them at most)."""

    def to_proto(self) -> common_pb2.JobDetails:
        message = common_pb2.JobDetails(
            **_scalars(self, exclude=("tasks", "exception_history")),
            exception_history=[e.to_proto() for e in self.exception_history],
        )
        for t in self.tasks:
            task = message.tasks.add(**_scalars(t, exclude=("io_metrics",)))
            if t.io_metrics is not None:
                task.io_metrics.CopyFrom(t.io_metrics.to_proto())
        return message

    @staticmethod
    def from_proto(message: common_pb2.JobDetails) -> JobDetailsInfo:
        return JobDetailsInfo(
            **_from_message(JobDetailsInfo, message, exclude=("tasks", "exception_history")),
            tasks=tuple(_task_from_proto(t) for t in message.tasks),
            exception_history=tuple(
                ExceptionHistoryEntry.from_proto(e) for e in message.exception_history
            ),
        )


def _task_from_proto(message: common_pb2.TaskStatus) -> TaskStatusInfo:
    io = IOMetricsInfo.from_proto(message.io_metrics) if message.HasField("io_metrics") else None
    return TaskStatusInfo(
        **_from_message(TaskStatusInfo, message, exclude=("io_metrics",)), io_metrics=io
    )


def _scalars(info: Any, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The dataclass's fields by name: the proto messages use the same field names."""
    return {f.name: getattr(info, f.name) for f in fields(info) if f.name not in exclude}


def _from_message(cls: type, message: Any, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    return {f.name: getattr(message, f.name) for f in fields(cls) if f.name not in exclude}
