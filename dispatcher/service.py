"""The Dispatcher's gRPC face."""

from __future__ import annotations

import grpc

from weir.core.checkpoint.checkpoint_stats_codec import encode_checkpoint_stats
from weir.core.ids import parse_job_id
from weir.core.job_status import JobStatus
from weir.core.rpc import translate_server_errors
from weir.dispatcher.dispatcher import Dispatcher
from weir.proto import common_pb2, dispatcher_pb2, dispatcher_pb2_grpc

# A client waiting for a result re-asks at least this often, so a server thread is never
# held for long and a lost client frees it.
MAX_WAIT_MS = 30_000


class DispatcherServicer(dispatcher_pb2_grpc.DispatcherServicer):
    def __init__(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher

    @classmethod
    def register(cls, dispatcher: Dispatcher, server: grpc.Server) -> None:
        dispatcher_pb2_grpc.add_DispatcherServicer_to_server(cls(dispatcher), server)

    @translate_server_errors
    def SubmitJob(self, request, context):
        return dispatcher_pb2.SubmitJobResponse(
            job_id=self._dispatcher.submit_job(request.job_graph)
        )

    @translate_server_errors
    def ListJobs(self, request, context):
        jobs = self._dispatcher.list_jobs(request.include_terminated)
        return dispatcher_pb2.ListJobsResponse(jobs=[j.to_proto() for j in jobs])

    @translate_server_errors
    def GetJobDetails(self, request, context):
        return self._dispatcher.job_details(parse_job_id(request.job_id)).to_proto()

    @translate_server_errors
    def GetCheckpointStatistics(self, request, context):
        stats = self._dispatcher.checkpoint_statistics(parse_job_id(request.job_id))
        return encode_checkpoint_stats(stats, request.job_id)

    @translate_server_errors
    def CancelJob(self, request, context):
        self._dispatcher.cancel_job(parse_job_id(request.job_id))
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def WaitForJobResult(self, request, context):
        timeout_ms = min(max(request.timeout_ms, 0), MAX_WAIT_MS)
        return self._dispatcher.wait_for_result(
            parse_job_id(request.job_id), timeout_ms / 1000
        ).to_proto()

    @translate_server_errors
    def FetchCollectBatches(self, request, context):
        timeout_ms = min(max(request.timeout_ms, 0), MAX_WAIT_MS)
        return self._dispatcher.fetch_collect(
            parse_job_id(request.job_id),
            request.operator_id,
            request.max_batches or 16,
            timeout_ms,
        )

    @translate_server_errors
    def ListTaskManagers(self, request, context):
        return self._dispatcher.list_task_managers()

    @translate_server_errors
    def ClusterOverview(self, request, context):
        jobs = self._dispatcher.list_jobs(include_terminated=True)
        tms = self._dispatcher.list_task_managers().task_managers
        count = {s: sum(1 for j in jobs if j.status == s.name) for s in JobStatus}
        ended = sum(count[s] for s in JobStatus if s.is_globally_terminal_state())
        return dispatcher_pb2.ClusterOverviewResponse(
            task_managers=len(tms),
            slots_total=sum(t.num_slots for t in tms),
            slots_available=sum(t.free_slots for t in tms),
            jobs_running=len(jobs) - ended,
            jobs_finished=count[JobStatus.FINISHED],
            jobs_cancelled=count[JobStatus.CANCELED],
            jobs_failed=count[JobStatus.FAILED],
        )
