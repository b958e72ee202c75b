"""The TaskExecutor's gRPC face: its servicer, and its clients of the ResourceManager and
JobMaster services. The only TaskExecutor module that touches protobuf types."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from weir.core import rpc
from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointType,
    TaskStateSnapshot,
    decode_task_state,
    encode_task_state,
)
from weir.core.deployment_codec import decode_deployment
from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, ResourceId
from weir.core.job_info import IOMetricsInfo
from weir.core.metrics.metric_codec import encode_metrics
from weir.core.process_status import current_process_status
from weir.core.security import SecurityConfig
from weir.core.task_manager_files import TaskManagerFileType
from weir.core.throwable_classifier import ThrowableType
from weir.proto import (
    common_pb2,
    jobmaster_pb2,
    jobmaster_pb2_grpc,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)
from weir.taskmanager.queryablestate.kv_state_registry import KvStateRegistration

if TYPE_CHECKING:
    from weir.taskmanager.task_executor import TaskExecutor


class TaskExecutorServicer(taskexecutor_pb2_grpc.TaskExecutorServicer):
    """Decodes each request, calls the TaskExecutor, encodes its answer. A field it cannot
    decode answers INVALID_ARGUMENT naming it (``rpc.decode_field``)."""

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
        released = self._te.free_slot(AllocationId(request.allocation_id))
        return common_pb2.Ack(ok=released, message="" if released else "releasing")

    @rpc.translate_server_errors
    def SubmitTask(
        self, request: taskexecutor_pb2.SubmitTaskRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        deployment = rpc.decode_field("deployment", decode_deployment, request.deployment)
        if request.deployment.has_restored_state:
            # Decoded here only to refuse what is no task state before anything is deployed;
            # the descriptor carries the bytes on, and the task decodes them as it restores.
            rpc.decode_field(
                "deployment.restored_state", decode_task_state, request.deployment.restored_state
            )
        self._te.submit_task(deployment, request.jobmaster_address)
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
        checkpoint_type = rpc.decode_field(
            "options.checkpoint_type",
            CheckpointType,
            request.options.checkpoint_type or "CHECKPOINT",
        )
        found = self._te.trigger_checkpoint(
            ExecutionAttemptId(request.execution_attempt_id),
            request.checkpoint_id,
            request.timestamp_ms,
            checkpoint_type,
            request.options.target_location,
            drain=request.options.drain,
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
    def RequestFileUpload(
        self, request: common_pb2.TaskManagerFileRequest, context: grpc.ServicerContext
    ) -> common_pb2.TaskManagerFileResponse:
        found = self._te.request_file_upload(
            rpc.decode_field("file_type", TaskManagerFileType, request.file_type),
            request.max_bytes,
        )
        return common_pb2.TaskManagerFileResponse(
            content=found.content, truncated=found.truncated, path=found.path
        )

    @rpc.translate_server_errors
    def Stop(
        self, request: taskexecutor_pb2.StopRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        if request.resource_id and request.resource_id != self._te.resource_id:
            # Meant for the TaskManager that had this address before this one.
            return common_pb2.Ack(
                ok=False, message=f"this is TaskManager {self._te.resource_id}, not that one"
            )
        self._te.stop(request.reason or "told to stop")
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def GetMetrics(
        self, request: common_pb2.Empty, context: grpc.ServicerContext
    ) -> taskexecutor_pb2.MetricsDump:
        metrics = self._te.metrics
        return encode_metrics(metrics.snapshot(), metrics.prometheus_address)


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

    def __init__(self, address: str, security: SecurityConfig) -> None:
        self.address = address
        self._channel = rpc.create_channel(address, security)
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
        process = current_process_status()
        answer = rpc.call(
            "ResourceManager.Heartbeat",
            self._stub.Heartbeat,
            resourcemanager_pb2.TaskExecutorHeartbeat(
                resource_id=resource_id,
                allocated_slots=list(allocated),
                process=common_pb2.ProcessStatus(
                    threads=process.threads,
                    open_fds=process.open_fds,
                    grpc_channels=process.grpc_channels,
                ),
            ),
            timeout=timeout_s,
        )
        return [AllocationId(a) for a in answer.stale_slots] if answer.known else None

    def notify_slot_available(
        self, resource_id: ResourceId, allocation_id: AllocationId, timeout_s: float
    ) -> None:
        rpc.call(
            "ResourceManager.NotifySlotAvailable",
            self._stub.NotifySlotAvailable,
            resourcemanager_pb2.SlotAvailableRequest(
                resource_id=resource_id, allocation_id=allocation_id
            ),
            timeout=timeout_s,
        )

    def close(self) -> None:
        self._channel.close()


@dataclass(slots=True)
class _Connection:
    channel: grpc.Channel
    slots: int = 0  # slots of the job held here
    calls: int = 0  # calls in flight on the channel


class JobMasterGateways:
    """Clients of the JobMasters whose tasks run here: one channel per JobMaster while
    this TaskExecutor holds a slot of its job (``connect`` when a slot is allocated,
    ``disconnect`` when it is freed; the channel closes with the job's last slot), as
    Flink's TaskExecutor keeps a JobMaster connection per job in its JobTable. Each job
    has a JobMaster of its own at a new address, so a channel kept past its job would
    leak. A call to a JobMaster without a slot here (a last state report after the slot
    was freed) goes over a channel of its own, closed after the call."""

    def __init__(self, security: SecurityConfig) -> None:
        self._security = security
        self._lock = threading.Lock()
        self._connections: dict[str, _Connection] = {}
        self._closed = False

    def connect(self, address: str) -> None:
        with self._lock:
            if self._closed:
                return
            connection = self._connections.get(address)
            if connection is None:
                connection = _Connection(rpc.create_channel(address, self._security))
                self._connections[address] = connection
            connection.slots += 1

    def disconnect(self, address: str) -> None:
        """One slot of the job at ``address`` is freed; the channel closes with the last
        (once the calls in flight on it are done)."""
        with self._lock:
            connection = self._connections.get(address)
            if connection is None:
                return
            connection.slots -= 1
            if connection.slots > 0:
                return
            del self._connections[address]
            close = connection.calls == 0
        if close:
            connection.channel.close()

    @property
    def open_channels(self) -> int:
        with self._lock:
            return len(self._connections)

    @contextlib.contextmanager
    def _stub(self, address: str) -> Iterator[jobmaster_pb2_grpc.JobMasterStub]:
        with self._lock:
            connection = self._connections.get(address)
            if connection is not None:
                connection.calls += 1
        if connection is None:
            with rpc.create_channel(address, self._security) as transient:
                yield jobmaster_pb2_grpc.JobMasterStub(transient)
            return
        try:
            yield jobmaster_pb2_grpc.JobMasterStub(connection.channel)
        finally:
            with self._lock:
                connection.calls -= 1
                close = connection.calls == 0 and self._connections.get(address) is not connection
            if close:
                connection.channel.close()

    def notify_kv_state_registered(
        self, address: str, registration: KvStateRegistration, timeout_s: float
    ) -> None:
        """Tell the JobMaster where a queryable state of one subtask is served; raises
        what it refuses (a registration name clash)."""
        r = registration
        with self._stub(address) as stub:
            rpc.call(
                "JobMaster.NotifyKvStateRegistered",
                stub.NotifyKvStateRegistered,
                jobmaster_pb2.KvStateRegistration(
                    job_id=r.job_id,
                    execution_attempt_id=r.attempt_id,
                    operator_id=r.operator_id,
                    registration_name=r.registration_name,
                    start_key_group=r.key_groups.start,
                    end_key_group=r.key_groups.stop - 1,
                    num_key_groups=r.num_key_groups,
                    key_type=r.key_type,
                    kv_state_id=r.kv_state_id,
                    server_address=r.server_address,
                    subtask_index=r.subtask_index,
                ),
                timeout=timeout_s,
            )

    def update_task_execution_state(
        self,
        address: str,
        *,
        job_id: JobId,
        attempt_id: ExecutionAttemptId,
        state: str,
        failure_cause: str | None,
        io_metrics: IOMetricsInfo | None = None,
        throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
        timeout_s: float,
    ) -> None:
        update = jobmaster_pb2.TaskExecutionStateUpdate(
            job_id=job_id,
            execution_attempt_id=attempt_id,
            state=state,
            failure_cause=failure_cause or "",
            throwable_type=jobmaster_pb2.ThrowableType.Value(
                f"THROWABLE_TYPE_{throwable_type.name}"
            ),
        )
        if io_metrics is not None:
            update.io_metrics.CopyFrom(io_metrics.to_proto())
        with self._stub(address) as stub:
            rpc.call(
                "JobMaster.UpdateTaskExecutionState",
                stub.UpdateTaskExecutionState,
                update,
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
    ) -> int | None:
        """One push; None when the JobMaster took the batch, else how many ms to wait
        before pushing it again (its buffer is full)."""
        with self._stub(address) as stub:
            response = rpc.call(
                "JobMaster.PushCollectBatch",
                stub.PushCollectBatch,
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
        return None if response.accepted else max(1, int(response.retry_after_ms))

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
        with self._stub(address) as stub:
            rpc.call(
                "JobMaster.AcknowledgeCheckpoint",
                stub.AcknowledgeCheckpoint,
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

    def notify_end_of_data(
        self, address: str, *, job_id: JobId, attempt_id: ExecutionAttemptId, timeout_s: float
    ) -> None:
        with self._stub(address) as stub:
            rpc.call(
                "JobMaster.NotifyEndOfData",
                stub.NotifyEndOfData,
                jobmaster_pb2.EndOfDataNotice(job_id=job_id, execution_attempt_id=attempt_id),
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
        with self._stub(address) as stub:
            rpc.call(
                "JobMaster.DeclineCheckpoint",
                stub.DeclineCheckpoint,
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
            self._closed = True
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.channel.close()
