"""``CheckpointStatsSnapshot`` to and from common.proto's ``CheckpointStatistics``: the
one place the statistics meet protobuf (the JobMaster's and the Dispatcher's servicers
encode, the Dispatcher and the client decode).

The message carries less than the JobMaster knows: the latest completed checkpoint
only by its path, neither the latest failed checkpoint nor the time of the latest
restore. A decoded snapshot takes its latest completed checkpoint from the history
entry with that path; one that left the history comes back with its path and status
only (``checkpoint_id`` 0). Its ``latest_failed`` is None and its restore time 0.
"""

from __future__ import annotations

from weir.core.checkpoint.checkpoint_stats import (
    CheckpointStats,
    CheckpointStatsSnapshot,
    CheckpointStatus,
    RestoredCheckpointStats,
)
from weir.core.checkpoint.metadata import CheckpointType
from weir.proto import common_pb2


def encode_checkpoint_stats(
    stats: CheckpointStatsSnapshot, job_id: str
) -> common_pb2.CheckpointStatistics:
    message = common_pb2.CheckpointStatistics(
        job_id=job_id,
        checkpointing_enabled=stats.checkpointing_enabled,
        num_triggered=stats.num_triggered,
        num_in_progress=stats.num_in_progress,
        num_completed=stats.num_completed,
        num_failed=stats.num_failed,
        num_restored=stats.num_restored,
        latest_completed_path=stats.latest_completed_path,
        latest_restored_id=stats.latest_restored_id,
        latest_restored_path=stats.latest_restored_path,
    )
    for s in stats.history:
        message.history.add(
            checkpoint_id=s.checkpoint_id,
            status=s.status.value,
            checkpoint_type=s.checkpoint_type.value,
            trigger_timestamp_ms=s.trigger_timestamp_ms,
            end_to_end_duration_ms=s.end_to_end_duration_ms,
            sync_duration_ms=s.sync_duration_ms,
            async_duration_ms=s.async_duration_ms,
            alignment_duration_ms=s.alignment_duration_ms,
            state_size_bytes=s.state_size_bytes,
            persisted_in_flight_bytes=s.persisted_in_flight_bytes,
            num_subtasks=s.num_subtasks,
            num_acknowledged=s.num_acknowledged,
            external_path=s.external_pointer,
            failure_message=s.failure_message,
        )
    return message


def decode_checkpoint_stats(message: common_pb2.CheckpointStatistics) -> CheckpointStatsSnapshot:
    history = tuple(_decode_entry(e) for e in message.history)
    return CheckpointStatsSnapshot(
        checkpointing_enabled=message.checkpointing_enabled,
        num_completed=message.num_completed,
        num_failed=message.num_failed,
        num_in_progress=message.num_in_progress,
        history=history,
        latest_completed=_latest_completed(history, message.latest_completed_path),
        num_restored=message.num_restored,
        latest_restored=(
            RestoredCheckpointStats(message.latest_restored_id, 0, message.latest_restored_path)
            if message.num_restored
            else None
        ),
    )


def _decode_entry(entry: common_pb2.CheckpointStatisticsEntry) -> CheckpointStats:
    return CheckpointStats(
        checkpoint_id=entry.checkpoint_id,
        status=CheckpointStatus(entry.status),
        checkpoint_type=CheckpointType(entry.checkpoint_type),
        trigger_timestamp_ms=entry.trigger_timestamp_ms,
        num_subtasks=entry.num_subtasks,
        num_acknowledged=entry.num_acknowledged,
        end_to_end_duration_ms=entry.end_to_end_duration_ms,
        sync_duration_ms=entry.sync_duration_ms,
        async_duration_ms=entry.async_duration_ms,
        alignment_duration_ms=entry.alignment_duration_ms,
        state_size_bytes=entry.state_size_bytes,
        persisted_in_flight_bytes=entry.persisted_in_flight_bytes,
        external_pointer=entry.external_path,
        failure_message=entry.failure_message,
    )


def _latest_completed(history: tuple[CheckpointStats, ...], path: str) -> CheckpointStats | None:
    if not path:
        return None
    for s in history:
        if s.status is CheckpointStatus.COMPLETED and s.external_pointer == path:
            return s
    return CheckpointStats(
        checkpoint_id=0, status=CheckpointStatus.COMPLETED, external_pointer=path
    )
