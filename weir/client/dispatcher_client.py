"""The client's view of a Dispatcher: typed calls over gRPC, Weir errors on failure."""

from __future__ import annotations

from weir.core import rpc
from weir.core.checkpoint import CheckpointStatsSnapshot
from weir.core.checkpoint.checkpoint_stats_codec import decode_checkpoint_stats
from weir.core.job_info import JobDetailsInfo
from weir.proto import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc


class DispatcherGateway:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = rpc.create_channel(address)
        self._stub = dispatcher_pb2_grpc.DispatcherStub(self._channel)

    def submit_job(self, job_graph: bytes) -> str:
        reply = rpc.call(
            f"SubmitJob to the Dispatcher at {self.address}",
            self._stub.SubmitJob,
            dispatcher_pb2.SubmitJobRequest(job_graph=job_graph),
            timeout=60,
        )
        return reply.job_id

    def list_jobs(self, include_terminated: bool = False) -> list[JobDetailsInfo]:
        reply = rpc.call(
            f"ListJobs on the Dispatcher at {self.address}",
            self._stub.ListJobs,
            dispatcher_pb2.ListJobsRequest(include_terminated=include_terminated),
        )
        return [JobDetailsInfo.from_proto(j) for j in reply.jobs]

    def job_details(self, job_id: str) -> JobDetailsInfo:
        reply = rpc.call(
            f"GetJobDetails on the Dispatcher at {self.address}",
            self._stub.GetJobDetails,
            common_pb2.JobIdRequest(job_id=job_id),
        )
        return JobDetailsInfo.from_proto(reply)

    def checkpoint_statistics(self, job_id: str) -> CheckpointStatsSnapshot:
        reply = rpc.call(
            f"GetCheckpointStatistics on the Dispatcher at {self.address}",
            self._stub.GetCheckpointStatistics,
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

    def cancel_job(self, job_id: str) -> None:
        rpc.call(
            f"CancelJob on the Dispatcher at {self.address}",
            self._stub.CancelJob,
            common_pb2.JobIdRequest(job_id=job_id),
        )

    def wait_for_result(
        self, job_id: str, timeout_ms: int, known_version: int = 0
    ) -> JobDetailsInfo:
        """The job's details once they differ from ``known_version`` (their
        ``status_version``; 0: once the job is globally terminal), or after ``timeout_ms``
        (the server bounds it). Re-ask with the version you got."""
        reply = rpc.call(
            f"WaitForJobResult on the Dispatcher at {self.address}",
            self._stub.WaitForJobResult,
            dispatcher_pb2.WaitForJobResultRequest(
                job_id=job_id, timeout_ms=timeout_ms, known_version=known_version
            ),
            timeout=timeout_ms / 1000 + 30,
        )
        return JobDetailsInfo.from_proto(reply)

    def fetch_collect(
        self, job_id: str, operator_id: str, max_batches: int, timeout_ms: int
    ) -> common_pb2.FetchCollectResponse:
        return rpc.call(
            f"FetchCollectBatches on the Dispatcher at {self.address}",
            self._stub.FetchCollectBatches,
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
            rpc.call(
                f"ListTaskManagers on the Dispatcher at {self.address}",
                self._stub.ListTaskManagers,
                common_pb2.Empty(),
            ).task_managers
        )

    def overview(self) -> dispatcher_pb2.ClusterOverviewResponse:
        return rpc.call(
            f"ClusterOverview on the Dispatcher at {self.address}",
            self._stub.ClusterOverview,
            common_pb2.Empty(),
        )

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> DispatcherGateway:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
