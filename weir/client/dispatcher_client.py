"""The client's view of a Dispatcher: typed calls over gRPC, Weir errors on failure."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from weir.core import rpc
from weir.core.checkpoint import CheckpointStatsSnapshot
from weir.core.checkpoint.checkpoint_stats_codec import decode_checkpoint_stats
from weir.core.errors import ServiceUnavailableError
from weir.core.job_info import JobDetailsInfo
from weir.core.security import Endpoint, SecurityConfig
from weir.core.task_manager_files import TaskManagerFile, TaskManagerFileType
from weir.proto import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc

logger = logging.getLogger(__name__)

# A call follows at most this many changes of leader before it gives up: each is a
# failover (seconds), and a cluster whose leader changes more often than that is sick.
_LEADER_CHANGES = 3


LeaderLookup = Callable[[str | None], str]
"""Given the address that failed (None at first), the address of the Dispatcher that leads
now, waiting for one if need be; raises ServiceUnavailableError when none appears."""


class DispatcherGateway:
    """``leader``: with high availability, how to find the leading Dispatcher; a call that
    finds its Dispatcher gone or no longer leading asks it again and is retried there
    (a change of leader), up to ``_LEADER_CHANGES`` times per call. ``security``: how to
    reach the Dispatcher (its REST endpoint settings, and the token); plaintext without a
    token unless given."""

    def __init__(
        self,
        address: str | None = None,
        leader: LeaderLookup | None = None,
        security: SecurityConfig | None = None,
    ) -> None:
        if address is None:
            if leader is None:
                msg = "a DispatcherGateway needs an address or a leader lookup"
                raise ValueError(msg)
            address = leader(None)
        self.address = address
        self._leader = leader
        self._security = security or SecurityConfig()
        self._channel = rpc.create_channel(address, self._security, Endpoint.REST)
        self._stub = dispatcher_pb2_grpc.DispatcherStub(self._channel)

    def _call(self, method: str, request: Any, timeout: float | None = 30.0) -> Any:
        changes = 0
        while True:
            try:
                return rpc.call(
                    f"{method} on the Dispatcher at {self.address}",
                    getattr(self._stub, method),
                    request,
                    timeout=timeout,
                )
            except ServiceUnavailableError:
                if self._leader is None or changes >= _LEADER_CHANGES:
                    raise
                changes += 1
                self._follow(self._leader(self.address))

    def _follow(self, address: str) -> None:
        if address == self.address:
            return
        logger.info("following the Dispatcher leader from %s to %s", self.address, address)
        self._channel.close()
        self.address = address
        self._channel = rpc.create_channel(address, self._security, Endpoint.REST)
        self._stub = dispatcher_pb2_grpc.DispatcherStub(self._channel)

    def submit_job(self, job_graph: bytes) -> str:
        reply = self._call(
            "SubmitJob",
            dispatcher_pb2.SubmitJobRequest(job_graph=job_graph),
            timeout=60,
        )
        return reply.job_id

    def list_jobs(self, include_terminated: bool = False) -> list[JobDetailsInfo]:
        reply = self._call(
            "ListJobs",
            dispatcher_pb2.ListJobsRequest(include_terminated=include_terminated),
        )
        return [JobDetailsInfo.from_proto(j) for j in reply.jobs]

    def job_details(self, job_id: str) -> JobDetailsInfo:
        reply = self._call(
            "GetJobDetails",
            common_pb2.JobIdRequest(job_id=job_id),
        )
        return JobDetailsInfo.from_proto(reply)

    def checkpoint_statistics(self, job_id: str) -> CheckpointStatsSnapshot:
        reply = self._call(
            "GetCheckpointStatistics",
            common_pb2.JobIdRequest(job_id=job_id),
        )
        return decode_checkpoint_stats(reply)

    def job_plan(self, job_id: str) -> tuple[str, dict[str, str]]:
        """The job's plan (Flink's JobPlanInfo as JSON) and its configuration."""
        reply = rpc.call(
            f"GetJobPlan on the Dispatcher at {self.address}",
            self._stub.GetJobPlan,
            common_pb2.JobIdRequest(job_id=job_id),
        )
        return reply.plan_json, dict(reply.config)

    def shut_down_cluster(self) -> None:
        """Stop the cluster (its master process, with its jobs and TaskManagers), as
        ``stop-cluster.sh`` does; returns once the stop is under way."""
        self._call("ShutDownCluster", common_pb2.Empty())

    def cancel_job(self, job_id: str) -> None:
        self._call(
            "CancelJob",
            common_pb2.JobIdRequest(job_id=job_id),
        )

    def trigger_savepoint(
        self,
        job_id: str,
        target_directory: str | None = None,
        *,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        """Take a savepoint of a running job (with ``stop``, then stop it) and return the
        savepoint's directory once it completed. Waits as long as the savepoint takes
        (bounded by the job's checkpoint timeout on the cluster's side)."""
        reply = rpc.call(
            f"TriggerSavepoint on the Dispatcher at {self.address}",
            self._stub.TriggerSavepoint,
            common_pb2.TriggerSavepointRequest(
                job_id=job_id, target_directory=target_directory or "", stop=stop, drain=drain
            ),
            timeout=None,
        )
        return str(reply.savepoint_path)

    def wait_for_result(
        self, job_id: str, timeout_ms: int, known_version: int = 0
    ) -> JobDetailsInfo:
        """The job's details once they differ from ``known_version`` (their
        ``status_version``; 0: once the job is globally terminal), or after ``timeout_ms``
        (the server bounds it). Re-ask with the version you got."""
        reply = self._call(
            "WaitForJobResult",
            dispatcher_pb2.WaitForJobResultRequest(
                job_id=job_id, timeout_ms=timeout_ms, known_version=known_version
            ),
            timeout=timeout_ms / 1000 + 30,
        )
        return JobDetailsInfo.from_proto(reply)

    def fetch_collect(
        self, job_id: str, operator_id: str, max_batches: int, timeout_ms: int
    ) -> common_pb2.FetchCollectResponse:
        return self._call(
            "FetchCollectBatches",
            common_pb2.FetchCollectRequest(
                job_id=job_id,
                operator_id=operator_id,
                max_batches=max_batches,
                timeout_ms=timeout_ms,
            ),
            timeout=timeout_ms / 1000 + 30,
        )

    def list_task_managers(self) -> list[common_pb2.TaskManagerInfo]:
        return list(
            self._call(
                "ListTaskManagers",
                common_pb2.Empty(),
            ).task_managers
        )

    def task_manager_file(
        self, resource_id: str, file_type: TaskManagerFileType, max_bytes: int = 0
    ) -> TaskManagerFile:
        """The end of a TaskManager's taskmanager.out (``STDOUT``) or taskmanager.log
        (at most ``max_bytes``; 0: as much as the cluster sends, a few MiB)."""
        answer = self._call(
            "RequestTaskManagerFile",
            common_pb2.TaskManagerFileRequest(
                resource_id=resource_id,
                file_type=common_pb2.TaskManagerFileType.Name(file_type.value),
                max_bytes=max_bytes,
            ),
            timeout=60,
        )
        return TaskManagerFile(answer.content, answer.truncated, answer.path)

    def overview(self) -> dispatcher_pb2.ClusterOverviewResponse:
        return self._call(
            "ClusterOverview",
            common_pb2.Empty(),
        )

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> DispatcherGateway:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
