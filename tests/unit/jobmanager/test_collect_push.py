"""A collect push to a full buffer is answered at once with a delay to retry after; the
JobMaster's thread does not wait for the client to read (JobMaster not started: no
server, no sockets)."""

from __future__ import annotations

from weir.core.highavailability import StandaloneHaServices
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.jobmanager.collect_buffer import DEFAULT_MAX_BATCHES
from weir.jobmanager.job_master import JobMaster
from weir.jobmanager.service import JobMasterServicer
from weir.proto import jobmaster_pb2


def test_a_push_to_a_full_buffer_is_answered_at_once_with_a_retry_delay() -> None:
    collect = OperatorDescriptor("collect", "collect", OperatorKind.COLLECT, b"")
    graph = JobGraph("c" * 32, "collect", (JobVertex("v", "v", 1, 128, (collect,), "default"),), ())
    job_master = JobMaster(graph, {}, StandaloneHaServices(), on_terminated=lambda _: None)
    servicer = JobMasterServicer(job_master)

    def push() -> jobmaster_pb2.PushCollectBatchResponse:
        request = jobmaster_pb2.PushCollectBatchRequest(
            job_id=graph.job_id, operator_id="collect", subtask_index=0, batch=b"x"
        )
        return servicer.PushCollectBatch(request, context=None)

    try:
        for _ in range(DEFAULT_MAX_BATCHES):
            assert push().accepted
        full = push()
        assert not full.accepted
        assert full.retry_after_ms > 0
        assert "full" in full.message
    finally:
        job_master.close()
