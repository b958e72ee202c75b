"""``CheckpointStatsSnapshot`` to and from common.proto's ``CheckpointStatistics``: the
one place the statistics meet protobuf (the JobMaster's and the Dispatcher's servicers
encode, the Dispatcher and the client decode).

The message carries the latest completed checkpoint only by its path: a decoded
snapshot takes it from the history entry with that path; one that left the history comes
back with its path and status only (``checkpoint_id`` 0). The latest failed checkpoint
and the latest savepoint travel whole.
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
    if stats.latest_restored is not None:
        message.latest_restored_timestamp_ms = stats.latest_restored.restore_timestamp_ms
        message.latest_restored_is_savepoint = stats.latest_restored.is_savepoint
    if stats.latest_failed is not None:
        _encode_entry(message.latest_failed, stats.latest_failed)
    if stats.latest_savepoint is not None:
        _encode_entry(message.latest_savepoint, stats.latest_savepoint)
    for s in stats.history:
        _encode_entry(message.history.add(), s)
    return message


def _encode_entry(entry: common_pb2.CheckpointStatisticsEntry, s: CheckpointStats) -> None:
    entry.CopyFrom(
        common_pb2.CheckpointStatisticsEntry(
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
    )


def decode_checkpoint_stats(message: common_pb2.CheckpointStatistics) -> CheckpointStatsSnapshot:
    history = tuple(_decode_entry(e) for e in message.history)
    return CheckpointStatsSnapshot(
        checkpointing_enabled=message.checkpointing_enabled,
        num_completed=message.num_completed,
        num_failed=message.num_failed,
        num_in_progress=message.num_in_progress,
        history=history,
        latest_completed=_latest_completed(history, message.latest_completed_path),
        latest_failed=(
            _decode_entry(message.latest_failed) if message.HasField("latest_failed") else None
        ),
        latest_savepoint=(
            _decode_entry(message.latest_savepoint)
            if message.HasField("latest_savepoint")
            else None
        ),
        num_restored=message.num_restored,
        latest_restored=(
            RestoredCheckpointStats(
                message.latest_restored_id,
                message.latest_restored_timestamp_ms,
                message.latest_restored_path,
                is_savepoint=message.latest_restored_is_savepoint,
            )
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
