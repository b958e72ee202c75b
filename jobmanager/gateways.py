"""The JobMaster's clients of the ResourceManager and of the TaskExecutors that run its
tasks: one channel each, reused for every call and closed when the job's JobMaster
closes. The only JobMaster module besides the servicer that touches protobuf types."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import grpc

from weir.core import rpc
from weir.core.deployment import TaskDeploymentDescriptor
from weir.core.deployment_codec import encode_deployment
from weir.core.errors import SlotAllocationError, WeirError
from weir.core.ids import AllocationId, ResourceId
from weir.core.security import SecurityConfig
from weir.jobmanager.execution_graph import SlotInfo
from weir.proto import (
    common_pb2,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)

# The JobMaster's calls to TaskExecutors and the ResourceManager are short control
# messages; a peer that needs longer is gone.
TASK_RPC_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class CancelDelivery:
    """The outcome of one CancelTask: None error means the TaskExecutor got it."""

    attempt_id: str
    address: str
    error: WeirError | None


def slots_from_proto(slots: Sequence[common_pb2.SlotAssignment]) -> list[SlotInfo]:
    return [
        SlotInfo(
            AllocationId(s.allocation_id),
            ResourceId(s.resource_id),
            s.rpc_address,
            s.data_host,
            s.data_port,
        )
        for s in slots
    ]


class ResourceManagerGateway:
    """The JobMaster's client of the ResourceManager; ``address`` may change (a new
    leader), the channel follows it. Thread-safe."""

    def __init__(
        self, security: SecurityConfig, fencing_token: Callable[[], str] = lambda: ""
    ) -> None:
        self._security = security
        self._lock = threading.Lock()
        self._address = ""
        self._channel: grpc.Channel | None = None
        self._closed = False
        # The JobMaster's leader session, sent with every call: the ResourceManager of
        # another session (a new leader's, after this JobMaster was deposed) refuses it.
        self._fencing_token = fencing_token

    def _stub(self, address: str) -> resourcemanager_pb2_grpc.ResourceManagerStub:
        with self._lock:
            if self._closed:
                msg = "the JobMaster is closed; it asks the ResourceManager nothing more"
                raise WeirError(msg)
            if self._channel is None or address != self._address:
                if self._channel is not None:
                    self._channel.close()
                self._channel = rpc.create_channel(address, self._security)
                self._address = address
            return resourcemanager_pb2_grpc.ResourceManagerStub(self._channel)

    def request_slots(
        self,
        address: str,
        *,
        job_id: str,
        request_id: str,
        count: int,
        jobmaster_address: str,
        timeout_ms: int,
        rpc_timeout_s: float,
    ) -> int:
        """Queue the request; returns how many requests are ahead of it. The slots come
        later through JobMaster.OfferSlots."""
        answer = rpc.call(
            "ResourceManager.RequestSlots",
            self._stub(address).RequestSlots,
            resourcemanager_pb2.RequestSlotsRequest(
                job_id=job_id,
                count=count,
                jobmaster_address=jobmaster_address,
                timeout_ms=timeout_ms,
                request_id=request_id,
                protocol_version=rpc.SLOT_PROTOCOL_VERSION,
                fencing_token=self._fencing_token(),
            ),
            timeout=rpc_timeout_s,
        )
        if answer.protocol_version != rpc.SLOT_PROTOCOL_VERSION:
            msg = (
                f"job {job_id}: the ResourceManager at {address} speaks slot protocol "
                f"{answer.protocol_version or 1}, this JobMaster {rpc.SLOT_PROTOCOL_VERSION}; "
                "run the JobMasters and the ResourceManager of one Weir version"
            )
            raise SlotAllocationError(msg)
        return int(answer.requests_ahead)

    def cancel_slot_request(
        self, address: str, *, job_id: str, request_id: str, rpc_timeout_s: float
    ) -> str | None:
        """Withdraw a queued request; the ResourceManager's reason it was not met, or None
        when it was no longer queued."""
        answer = rpc.call(
            "ResourceManager.CancelSlotRequest",
            self._stub(address).CancelSlotRequest,
            resourcemanager_pb2.CancelSlotRequestRequest(
                job_id=job_id, request_id=request_id, fencing_token=self._fencing_token()
            ),
            timeout=rpc_timeout_s,
        )
        return answer.explanation if answer.cancelled else None

    def release_slots(
        self,
        address: str,
        *,
        job_id: str,
        rpc_timeout_s: float,
        allocation_ids: Sequence[str] = (),
    ) -> None:
        """Give the job's slots ``allocation_ids`` back; none named: all of them, and the
        job's queued requests."""
        rpc.call(
            "ResourceManager.ReleaseSlots",
            self._stub(address).ReleaseSlots,
            resourcemanager_pb2.ReleaseSlotsRequest(
                job_id=job_id,
                allocation_ids=list(allocation_ids),
                fencing_token=self._fencing_token(),
            ),
            timeout=rpc_timeout_s,
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()


class TaskExecutorGateways:
    """The JobMaster's clients of TaskExecutors: one channel per TaskExecutor, for the
    deployments and cancellations of every attempt. Thread-safe; ``close()`` closes them
    all (the job's JobMaster closes)."""

    def __init__(self, security: SecurityConfig) -> None:
        self._security = security
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._closed = False

    def _stub(self, address: str) -> taskexecutor_pb2_grpc.TaskExecutorStub:
        with self._lock:
            if self._closed:
                msg = f"the JobMaster is closed; no more calls to the TaskExecutor at {address}"
                raise WeirError(msg)
            channel = self._channels.get(address)
            if channel is None:
                channel = rpc.create_channel(address, self._security)
                self._channels[address] = channel
            return taskexecutor_pb2_grpc.TaskExecutorStub(channel)

    def forget(self, address: str) -> None:
        """Close the channel to a TaskExecutor that is gone."""
        with self._lock:
            channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    @property
    def open_channels(self) -> int:
        with self._lock:
            return len(self._channels)

    def submit_task(
        self,
        address: str,
        tdd: TaskDeploymentDescriptor,
        jobmaster_address: str,
        timeout_s: float,
    ) -> None:
        rpc.call(
            "TaskExecutor.SubmitTask",
            self._stub(address).SubmitTask,
            taskexecutor_pb2.SubmitTaskRequest(
                deployment=encode_deployment(tdd),
                jobmaster_address=jobmaster_address,
            ),
            timeout=timeout_s,
        )

    def cancel_tasks(
        self, targets: Sequence[tuple[str, str]], timeout_s: float
    ) -> list[CancelDelivery]:
        """CancelTask for every (attempt id, address), all in flight at once; returns each
        outcome once all are answered or timed out (so at most ``timeout_s`` for all)."""
        pending: list[tuple[str, str, Future[object] | None, WeirError | None]] = []
        for attempt_id, address in targets:
            try:
                stub = self._stub(address)
            except WeirError as exc:
                pending.append((attempt_id, address, None, exc))
                continue
            future = stub.CancelTask.future(
                taskexecutor_pb2.CancelTaskRequest(execution_attempt_id=attempt_id),
                timeout=timeout_s,
            )
            pending.append((attempt_id, address, future, None))
        outcomes = []
        for attempt_id, address, future, refused in pending:
            outcome = refused
            if future is not None:
                try:
                    future.result()
                except grpc.RpcError as exc:
                    outcome = rpc.map_rpc_error(exc, f"TaskExecutor.CancelTask to {address}")
            outcomes.append(CancelDelivery(attempt_id, address, outcome))
        return outcomes

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
