"""The ResourceManager's gRPC face: its servicer, and its clients of the TaskExecutor and
JobMaster services. The only module of the package that touches protobuf types."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import grpc

from weir.core import rpc
from weir.core.errors import SlotAllocationError
from weir.core.ids import AllocationId, JobId, ResourceId
from weir.core.process_status import ProcessStatus
from weir.core.security import SecurityConfig
from weir.core.task_manager_files import TaskManagerFile, TaskManagerFileType
from weir.proto import (
    common_pb2,
    jobmaster_pb2,
    jobmaster_pb2_grpc,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)
from weir.resourcemanager.slot_manager import SlotAssignment, SlotRequest, TaskManagerRegistration

if TYPE_CHECKING:
    from weir.resourcemanager.resource_manager import ResourceManager


class ResourceManagerServicer(resourcemanager_pb2_grpc.ResourceManagerServicer):
    """Decodes each request, calls the ResourceManager, encodes its answer."""

    def __init__(self, resource_manager: ResourceManager) -> None:
        self._rm = resource_manager

    @rpc.translate_server_errors
    def RegisterTaskExecutor(
        self,
        request: resourcemanager_pb2.RegisterTaskExecutorRequest,
        context: grpc.ServicerContext,
    ) -> resourcemanager_pb2.RegisterTaskExecutorResponse:
        result = self._rm.register_task_executor(
            TaskManagerRegistration(
                resource_id=ResourceId(request.resource_id),
                rpc_address=request.rpc_address,
                data_host=request.data_host,
                data_port=request.data_port,
                num_slots=request.num_slots,
                spark_executor_id=request.spark_executor_id,
                pid=request.pid,
                lease_id=request.lease_id,
            )
        )
        return resourcemanager_pb2.RegisterTaskExecutorResponse(
            accepted=result.accepted,
            message=result.message,
            heartbeat_interval_ms=result.heartbeat_interval_ms,
            heartbeat_timeout_ms=result.heartbeat_timeout_ms,
        )

    @rpc.translate_server_errors
    def Heartbeat(
        self, request: resourcemanager_pb2.TaskExecutorHeartbeat, context: grpc.ServicerContext
    ) -> resourcemanager_pb2.HeartbeatResponse:
        process = (
            ProcessStatus(
                request.process.threads, request.process.open_fds, request.process.grpc_channels
            )
            if request.HasField("process")
            else None
        )
        stale = self._rm.heartbeat(
            ResourceId(request.resource_id),
            [AllocationId(a) for a in request.allocated_slots],
            process,
        )
        return resourcemanager_pb2.HeartbeatResponse(
            known=stale is not None, stale_slots=stale or []
        )

    @rpc.translate_server_errors
    def RequestSlots(
        self, request: resourcemanager_pb2.RequestSlotsRequest, context: grpc.ServicerContext
    ) -> resourcemanager_pb2.RequestSlotsResponse:
        if request.protocol_version != rpc.SLOT_PROTOCOL_VERSION:
            msg = (
                f"job {request.job_id}: its JobMaster speaks slot protocol "
                f"{request.protocol_version or 1}, this ResourceManager "
                f"{rpc.SLOT_PROTOCOL_VERSION} (it offers slots with JobMaster.OfferSlots); "
                "run the JobMasters and the ResourceManager of one Weir version"
            )
            raise SlotAllocationError(msg)
        self._rm.check_fencing_token(request.job_id, request.fencing_token)
        ahead = self._rm.request_slots(
            SlotRequest(
                job_id=JobId(request.job_id),
                count=request.count,
                jobmaster_address=request.jobmaster_address,
                timeout_ms=request.timeout_ms,
                request_id=request.request_id,
            )
        )
        return resourcemanager_pb2.RequestSlotsResponse(
            protocol_version=rpc.SLOT_PROTOCOL_VERSION, requests_ahead=ahead
        )

    @rpc.translate_server_errors
    def CancelSlotRequest(
        self,
        request: resourcemanager_pb2.CancelSlotRequestRequest,
        context: grpc.ServicerContext,
    ) -> resourcemanager_pb2.CancelSlotRequestResponse:
        self._rm.check_fencing_token(request.job_id, request.fencing_token)
        explanation = self._rm.cancel_slot_request(JobId(request.job_id), request.request_id)
        return resourcemanager_pb2.CancelSlotRequestResponse(
            cancelled=explanation is not None, explanation=explanation or ""
        )

    @rpc.translate_server_errors
    def ReleaseSlots(
        self, request: resourcemanager_pb2.ReleaseSlotsRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._rm.check_fencing_token(request.job_id, request.fencing_token)
        self._rm.release_slots(
            JobId(request.job_id), [AllocationId(a) for a in request.allocation_ids]
        )
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def NotifySlotAvailable(
        self, request: resourcemanager_pb2.SlotAvailableRequest, context: grpc.ServicerContext
    ) -> common_pb2.Ack:
        self._rm.slot_available(
            ResourceId(request.resource_id), AllocationId(request.allocation_id)
        )
        return common_pb2.Ack(ok=True)

    @rpc.translate_server_errors
    def ListTaskManagers(
        self,
        request: common_pb2.Empty,
        context: grpc.ServicerContext,
    ) -> common_pb2.ListTaskManagersResponse:
        return common_pb2.ListTaskManagersResponse(
            task_managers=[
                common_pb2.TaskManagerInfo(
                    resource_id=s.registration.resource_id,
                    rpc_address=s.registration.rpc_address,
                    data_host=s.registration.data_host,
                    data_port=s.registration.data_port,
                    num_slots=s.registration.num_slots,
                    free_slots=s.free_slots,
                    last_heartbeat_ms=s.last_heartbeat_ms,
                    spark_executor_id=s.registration.spark_executor_id,
                    pid=s.registration.pid,
                    process=(
                        common_pb2.ProcessStatus(
                            threads=s.process.threads,
                            open_fds=s.process.open_fds,
                            grpc_channels=s.process.grpc_channels,
                        )
                        if s.process is not None
                        else None
                    ),
                )
                for s in self._rm.task_managers()
            ]
        )

    @rpc.translate_server_errors
    def RequestTaskManagerFile(
        self,
        request: common_pb2.TaskManagerFileRequest,
        context: grpc.ServicerContext,
    ) -> common_pb2.TaskManagerFileResponse:
        found = self._rm.request_task_manager_file(
            ResourceId(request.resource_id),
            rpc.decode_field("file_type", TaskManagerFileType, request.file_type),
            request.max_bytes,
        )
        return common_pb2.TaskManagerFileResponse(
            content=found.content, truncated=found.truncated, path=found.path
        )


def add_to_server(resource_manager: ResourceManager, server: grpc.Server) -> None:
    resourcemanager_pb2_grpc.add_ResourceManagerServicer_to_server(
        ResourceManagerServicer(resource_manager), server
    )


class Gateways:
    """Clients of the TaskExecutors and JobMasters the ResourceManager talks to, one
    channel per address. Thread-safe; ``close()`` closes every channel."""

    def __init__(self, security: SecurityConfig) -> None:
        self._security = security
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}

    def _channel(self, address: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = rpc.create_channel(address, self._security)
                self._channels[address] = channel
            return channel

    def forget(self, address: str) -> None:
        with self._lock:
            channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()

    # --- TaskExecutor ------------------------------------------------------------------
    def allocate_slot(
        self,
        address: str,
        allocation_id: AllocationId,
        job_id: JobId,
        jobmaster_address: str,
        timeout_s: float,
    ) -> None:
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(self._channel(address))
        request = taskexecutor_pb2.AllocateSlotRequest(
            allocation_id=allocation_id, job_id=job_id, jobmaster_address=jobmaster_address
        )
        rpc.call("TaskExecutor.AllocateSlot", stub.AllocateSlot, request, timeout=timeout_s)

    def free_slot(self, address: str, allocation_id: AllocationId, timeout_s: float) -> bool:
        """True when the slot is free; False when it is RELEASING (tasks still ending)."""
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(self._channel(address))
        answer = rpc.call(
            "TaskExecutor.FreeSlot",
            stub.FreeSlot,
            taskexecutor_pb2.FreeSlotRequest(allocation_id=allocation_id),
            timeout=timeout_s,
        )
        return bool(answer.ok)

    def stop_task_executor(
        self, address: str, resource_id: str, reason: str, timeout_s: float
    ) -> None:
        """Stop TaskManager ``resource_id`` at ``address`` (another one there ignores it)."""
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(self._channel(address))
        rpc.call(
            "TaskExecutor.Stop",
            stub.Stop,
            taskexecutor_pb2.StopRequest(reason=reason, resource_id=resource_id),
            timeout=timeout_s,
        )

    def request_file_upload(
        self, address: str, file_type: TaskManagerFileType, max_bytes: int, timeout_s: float
    ) -> TaskManagerFile:
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(self._channel(address))
        answer = rpc.call(
            "TaskExecutor.RequestFileUpload",
            stub.RequestFileUpload,
            common_pb2.TaskManagerFileRequest(
                file_type=common_pb2.TaskManagerFileType.Name(file_type.value), max_bytes=max_bytes
            ),
            timeout=timeout_s,
        )
        return TaskManagerFile(answer.content, answer.truncated, answer.path)

    # --- JobMaster -----------------------------------------------------------------------
    def offer_slots(
        self,
        address: str,
        job_id: JobId,
        request_id: str,
        slots: tuple[SlotAssignment, ...],
        timeout_s: float,
    ) -> tuple[bool, str]:
        """Offer a request's slots; returns whether the JobMaster took them, and why not."""
        stub = jobmaster_pb2_grpc.JobMasterStub(self._channel(address))
        answer = rpc.call(
            "JobMaster.OfferSlots",
            stub.OfferSlots,
            jobmaster_pb2.OfferSlotsRequest(
                job_id=job_id,
                request_id=request_id,
                slots=[
                    common_pb2.SlotAssignment(
                        allocation_id=a.allocation_id,
                        resource_id=a.resource_id,
                        rpc_address=a.rpc_address,
                        data_host=a.data_host,
                        data_port=a.data_port,
                    )
                    for a in slots
                ],
            ),
            timeout=timeout_s,
        )
        return answer.accepted, answer.message

    def notify_task_manager_lost(
        self, address: str, resource_id: ResourceId, reason: str, timeout_s: float
    ) -> None:
        stub = jobmaster_pb2_grpc.JobMasterStub(self._channel(address))
        rpc.call(
            "JobMaster.NotifyTaskManagerLost",
            stub.NotifyTaskManagerLost,
            jobmaster_pb2.TaskManagerLostNotice(resource_id=resource_id, reason=reason),
            timeout=timeout_s,
        )
