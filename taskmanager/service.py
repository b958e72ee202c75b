"""The TaskExecutor's gRPC face: its servicer, and its clients of the ResourceManager and
JobMaster services. The only TaskExecutor module that touches protobuf types."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from weir.core import rpc
from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointType,
    TaskStateSnapshot,
    encode_task_state,
)
from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, ResourceId
from weir.proto import (
    common_pb2,
    jobmaster_pb2,
    jobmaster_pb2_grpc,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)

if TYPE_CHECKING:
    from weir.taskmanager.task_executor import TaskExecutor


class TaskExecutorServicer(taskexecutor_pb2_grpc.TaskExecutorServicer):
    """Decodes each request, calls the TaskExecutor, encodes its answer."""

    def __init__(self, task_executor: TaskExecutor) -> None:
        self._te = task_executor

    @rpc.translate_server_errors
    def AllocateSlot(
        self, request: taskexecutor_pb2.AllocateSlotRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._te.allocate_slot(
            AllocationId(request.allocation_id), JobId(request.job_id), request.jobmaster_address
        )
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def FreeSlot(
        self, request: taskexecutor_pb2.FreeSlotRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._te.free_slot(AllocationId(request.allocation_id))
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def SubmitTask(
        self, request: taskexecutor_pb2.SubmitTaskRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._te.submit_task(request.task_deployment_descriptor, request.jobmaster_address)
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def CancelTask(
        self, request: taskexecutor_pb2.CancelTaskRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        found = self._te.cancel_task(ExecutionAttemptId(request.execution_attempt_id))
        return common_pb2.Ack(ok=True, message="" if found else "no such task (already ended)")

    @rpc.translate_server_errors
    def TriggerCheckpoint(
        self, request: taskexecutor_pb2.TriggerCheckpointRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        checkpoint_type = CheckpointType(request.options.checkpoint_type or "CHECKPOINT")
        found = self._te.trigger_checkpoint(
            ExecutionAttemptId(request.execution_attempt_id),
            request.checkpoint_id,
            request.timestamp_ms,
            checkpoint_type,
        )
        return common_pb2.Ack(ok=found, message="" if found else "no such task")

    @rpc.translate_server_errors
    def NotifyCheckpointComplete(
        self, request: taskexecutor_pb2.CheckpointNotification, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        found = self._te.notify_checkpoint(
            ExecutionAttemptId(request.execution_attempt_id), request.checkpoint_id, complete=True
        )
        return common_pb2.Ack(ok=found)

    @rpc.translate_server_errors
    def NotifyCheckpointAborted(
        self, request: taskexecutor_pb2.CheckpointNotification, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        found = self._te.notify_checkpoint(
            ExecutionAttemptId(request.execution_attempt_id), request.checkpoint_id, complete=False
        )
        return common_pb2.Ack(ok=found)

    @rpc.translate_server_errors
    def Stop(
        self, request: taskexecutor_pb2.StopRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._te.stop(request.reason or "told to stop")
        return common_pb2.Ack(ok=True)


def add_to_server(task_executor: TaskExecutor, server: grpc.Server) -> None:
    taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(
        TaskExecutorServicer(task_executor), server
    )


@dataclass(frozen=True, slots=True)
class RegistrationAnswer:
    accepted: bool
    message: str
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int


class ResourceManagerGateway:
    """The TaskExecutor's client of the ResourceManager."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = rpc.create_channel(address)
        self._stub = resourcemanager_pb2_grpc.ResourceManagerStub(self._channel)

    def register(
        self,
        *,
        resource_id: ResourceId,
        rpc_address: str,
        data_host: str,
        data_port: int,
        num_slots: int,
        spark_executor_id: str,
        pid: int,
        lease_id: str,
        timeout_s: float,
    ) -> RegistrationAnswer:
        answer = rpc.call(
            "ResourceManager.RegisterTaskExecutor",
            self._stub.RegisterTaskExecutor,
            resourcemanager_pb2.RegisterTaskExecutorRequest(
                resource_id=resource_id,
                rpc_address=rpc_address,
                data_host=data_host,
                data_port=data_port,
                num_slots=num_slots,
                spark_executor_id=spark_executor_id,
                pid=pid,
                lease_id=lease_id,
            ),
            timeout=timeout_s,
        )
        return RegistrationAnswer(
            answer.accepted,
            answer.message,
            answer.heartbeat_interval_ms,
            answer.heartbeat_timeout_ms,
        )

    def heartbeat(
        self, resource_id: ResourceId, allocated: list[AllocationId], timeout_s: float
    ) -> list[AllocationId] | None:
        """The slots of ``allocated`` the ResourceManager has freed, or None if it no
        longer knows this TaskExecutor."""
        answer = rpc.call(
            "ResourceManager.Heartbeat",
            self._stub.Heartbeat,
            resourcemanager_pb2.TaskExecutorHeartbeat(
                resource_id=resource_id, allocated_slots=list(allocated)
            ),
            timeout=timeout_s,
        )
        return [AllocationId(a) for a in answer.stale_slots] if answer.known else None

    def close(self) -> None:
        self._channel.close()


class JobMasterGateways:
    """Clients of the JobMasters whose tasks run here, one channel per address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._closed = False

    def _stub(self, address: str) -> jobmaster_pb2_grpc.JobMasterStub:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = rpc.create_channel(address)
                self._channels[address] = channel
            return jobmaster_pb2_grpc.JobMasterStub(channel)

    def update_task_execution_state(
        self,
        address: str,
        *,
        job_id: JobId,
        attempt_id: ExecutionAttemptId,
        state: str,
        failure_cause: str | None,
        timeout_s: float,
    ) -> None:
        rpc.call(
            "JobMaster.UpdateTaskExecutionState",
            self._stub(address).UpdateTaskExecutionState,
            jobmaster_pb2.TaskExecutionStateUpdate(
                job_id=job_id,
                execution_attempt_id=attempt_id,
                state=state,
                failure_cause=failure_cause or "",
            ),
            timeout=timeout_s,
        )

    def push_collect_batch(
        self,
        address: str,
        *,
        job_id: JobId,
        attempt_id: ExecutionAttemptId,
        operator_id: str,
        subtask_index: int,
        batch: bytes,
        end: bool,
        epoch: int,
        timeout_s: float,
    ) -> bool:
        """One push; False when the JobMaster's buffer stayed full (retry it)."""
        response = rpc.call(
            "JobMaster.PushCollectBatch",
            self._stub(address).PushCollectBatch,
            jobmaster_pb2.PushCollectBatchRequest(
                job_id=job_id,
                operator_id=operator_id,
                subtask_index=subtask_index,
                batch=batch,
                end_of_data=end,
                execution_attempt_id=attempt_id,
                checkpoint_epoch=epoch,
            ),
            timeout=timeout_s,
        )
        return bool(response.ok)

    def acknowledge_checkpoint(
        self,
        address: str,
        *,
        job_id: JobId,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        task_state: TaskStateSnapshot,
        metrics: CheckpointMetrics,
        timeout_s: float,
    ) -> None:
        rpc.call(
            "JobMaster.AcknowledgeCheckpoint",
            self._stub(address).AcknowledgeCheckpoint,
            jobmaster_pb2.AcknowledgeCheckpointRequest(
                job_id=job_id,
                execution_attempt_id=attempt_id,
                checkpoint_id=checkpoint_id,
                task_state=encode_task_state(task_state),
                metrics=jobmaster_pb2.CheckpointMetrics(
                    sync_duration_ms=metrics.sync_duration_ms,
                    async_duration_ms=metrics.async_duration_ms,
                    alignment_duration_ms=metrics.alignment_duration_ms,
                    persisted_in_flight_bytes=metrics.persisted_in_flight_bytes,
                    state_size_bytes=metrics.state_size_bytes,
                ),
            ),
            timeout=timeout_s,
        )

    def decline_checkpoint(
        self,
        address: str,
        *,
        job_id: JobId,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        reason: str,
        timeout_s: float,
    ) -> None:
        rpc.call(
            "JobMaster.DeclineCheckpoint",
            self._stub(address).DeclineCheckpoint,
            jobmaster_pb2.DeclineCheckpointRequest(
                job_id=job_id,
                execution_attempt_id=attempt_id,
                checkpoint_id=checkpoint_id,
                reason=reason,
            ),
            timeout=timeout_s,
        )

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
