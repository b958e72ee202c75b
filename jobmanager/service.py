"""The JobMaster's gRPC face: decodes requests, calls the JobMaster, encodes answers. A
field it cannot decode answers INVALID_ARGUMENT naming it (``rpc.decode_field``)."""

from __future__ import annotations

import grpc

from weir.core import rpc
from weir.core.checkpoint import CheckpointMetrics, decode_task_state
from weir.core.checkpoint.checkpoint_stats_codec import encode_checkpoint_stats
from weir.core.deployment import ExecutionState
from weir.core.errors import JobNotFoundError
from weir.core.job_info import IOMetricsInfo
from weir.core.rpc import translate_server_errors
from weir.core.throwable_classifier import ThrowableType
from weir.jobmanager.gateways import slots_from_proto
from weir.jobmanager.job_master import COLLECT_RETRY_AFTER_MS, JobMaster
from weir.jobmanager.kv_state_location_registry import KvStateLocationEntry
from weir.proto import common_pb2, jobmaster_pb2, jobmaster_pb2_grpc


class JobMasterServicer(jobmaster_pb2_grpc.JobMasterServicer):
    def __init__(self, job_master: JobMaster) -> None:
        self._jm = job_master

    @classmethod
    def register(cls, job_master: JobMaster, server: grpc.Server) -> None:
        jobmaster_pb2_grpc.add_JobMasterServicer_to_server(cls(job_master), server)

    def _check_job(self, job_id: str) -> None:
        if job_id and job_id != self._jm.job_id:
            msg = f"this JobMaster runs job {self._jm.job_id}, not {job_id}"
            raise JobNotFoundError(msg)

    @translate_server_errors
    def UpdateTaskExecutionState(self, request, context):
        self._check_job(request.job_id)
        io_metrics = (
            IOMetricsInfo.from_proto(request.io_metrics) if request.HasField("io_metrics") else None
        )
        accepted = self._jm.update_task_execution_state(
            request.execution_attempt_id,
            rpc.decode_field("state", ExecutionState, request.state),
            request.failure_cause,
            io_metrics,
            throwable_type=rpc.decode_field(
                "throwable_type", _decode_throwable_type, request.throwable_type
            ),
        )
        return common_pb2.Ack(ok=accepted)

    @translate_server_errors
    def PushCollectBatch(self, request, context):
        self._check_job(request.job_id)
        accepted = self._jm.push_collect(
            request.operator_id,
            request.subtask_index,
            request.batch,
            request.end_of_data,
            epoch=request.checkpoint_epoch,
            attempt_id=request.execution_attempt_id,
        )
        if accepted:
            return jobmaster_pb2.PushCollectBatchResponse(accepted=True)
        return jobmaster_pb2.PushCollectBatchResponse(
            accepted=False,
            message="the collect buffer is full; retry after the given delay",
            retry_after_ms=COLLECT_RETRY_AFTER_MS,
        )

    @translate_server_errors
    def OfferSlots(self, request, context):
        self._check_job(request.job_id)
        accepted, message = self._jm.offer_slots(
            request.request_id, slots_from_proto(request.slots)
        )
        return jobmaster_pb2.OfferSlotsResponse(accepted=accepted, message=message)

    @translate_server_errors
    def FetchCollectBatches(self, request, context):
        self._check_job(request.job_id)
        result = self._jm.fetch_collect(
            request.operator_id, request.max_batches, request.timeout_ms / 1000
        )
        return common_pb2.FetchCollectResponse(
            batches=result.batches,
            end_of_data=result.end_of_data,
            job_status=self._jm.details().status,
        )

    @translate_server_errors
    def GetJobDetails(self, request, context):
        self._check_job(request.job_id)
        return self._jm.details().to_proto()

    @translate_server_errors
    def GetCheckpointStatistics(self, request, context):
        self._check_job(request.job_id)
        return encode_checkpoint_stats(self._jm.checkpoint_statistics(), self._jm.job_id)

    @translate_server_errors
    def CancelJob(self, request, context):
        self._check_job(request.job_id)
        self._jm.cancel()
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def AcknowledgeCheckpoint(self, request, context):
        self._check_job(request.job_id)
        m = request.metrics
        self._jm.acknowledge_checkpoint(
            request.execution_attempt_id,
            request.checkpoint_id,
            rpc.decode_field("task_state", decode_task_state, request.task_state),
            CheckpointMetrics(
                sync_duration_ms=m.sync_duration_ms,
                async_duration_ms=m.async_duration_ms,
                alignment_duration_ms=m.alignment_duration_ms,
                persisted_in_flight_bytes=m.persisted_in_flight_bytes,
                state_size_bytes=m.state_size_bytes,
            ),
        )
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def DeclineCheckpoint(self, request, context):
        self._check_job(request.job_id)
        self._jm.decline_checkpoint(
            request.execution_attempt_id, request.checkpoint_id, request.reason
        )
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def NotifyEndOfData(self, request, context):
        self._check_job(request.job_id)
        self._jm.end_of_data(request.execution_attempt_id)
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def TriggerSavepoint(self, request, context):
        self._check_job(request.job_id)
        savepoint = self._jm.trigger_savepoint(
            request.target_directory or None, stop=request.stop, drain=request.drain
        )
        # Bounded by the checkpoint timeout, after which the coordinator aborts it.
        return common_pb2.TriggerSavepointResponse(savepoint_path=savepoint.result())

    @translate_server_errors
    def NotifyTaskManagerLost(self, request, context):
        self._jm.task_manager_lost(request.resource_id, request.reason)
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def NotifyKvStateRegistered(self, request, context):
        self._check_job(request.job_id)
        self._jm.kv_state_locations.notify_kv_state_registered(
            operator_id=request.operator_id,
            registration_name=request.registration_name,
            num_key_groups=request.num_key_groups,
            key_type=request.key_type,
            entry=KvStateLocationEntry(
                subtask_index=request.subtask_index,
                key_groups=range(request.start_key_group, request.end_key_group + 1),
                kv_state_id=request.kv_state_id,
                server_address=request.server_address,
                attempt_id=request.execution_attempt_id,
            ),
        )
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    def RequestKvStateLocation(self, request, context):
        self._check_job(request.job_id)
        location = self._jm.kv_state_locations.location(request.registration_name)
        return common_pb2.KvStateLocation(
            job_id=self._jm.job_id,
            registration_name=location.registration_name,
            operator_id=location.operator_id,
            num_key_groups=location.num_key_groups,
            key_type=location.key_type,
            entries=[
                common_pb2.KvStateLocationEntry(
                    start_key_group=e.key_groups.start,
                    end_key_group=e.key_groups.stop - 1,
                    kv_state_id=e.kv_state_id,
                    server_address=e.server_address,
                    subtask_index=e.subtask_index,
                )
                for e in location.entries.values()
            ],
        )


def _decode_throwable_type(value: int) -> ThrowableType:
    """The proto enum's value as ours; a value of a newer sender raises ValueError."""
    name = jobmaster_pb2.ThrowableType.Name(value)
    return ThrowableType[name.removeprefix("THROWABLE_TYPE_")]
