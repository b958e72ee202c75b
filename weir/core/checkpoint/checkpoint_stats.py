"""Checkpoint statistics of a job (Flink's ``CheckpointStatsSnapshot`` and its parts).

One model from end to end: the JobMaster's ``CheckpointStatsTracker`` builds it, the
Dispatcher archives it, ``weir checkpoints`` prints it. Between processes it travels
as common.proto's ``CheckpointStatistics``, encoded and decoded only by
``checkpoint_stats_codec``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from weir.core.checkpoint.metadata import CheckpointType


class CheckpointStatus(enum.StrEnum):
    """Where one checkpoint is. A ``StrEnum``: a status is its name on the wire and in
    ``weir checkpoints``, and compares equal to it (``status == "COMPLETED"``)."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """One checkpoint in a job's history (Flink's ``AbstractCheckpointStats``):
    durations are the longest over the subtasks that acknowledged, sizes the sum."""

    checkpoint_id: int
    status: CheckpointStatus
    checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT
    trigger_timestamp_ms: int = 0
    num_subtasks: int = 0
    num_acknowledged: int = 0
    end_to_end_duration_ms: int = 0
    """Trigger to completion (or to failure, or to the latest acknowledgement meanwhile)."""
    sync_duration_ms: int = 0
    async_duration_ms: int = 0
    alignment_duration_ms: int = 0
    state_size_bytes: int = 0
    persisted_in_flight_bytes: int = 0
    external_pointer: str = ""
    failure_message: str = ""


@dataclass(frozen=True, slots=True)
class RestoredCheckpointStats:
    """A checkpoint the job restored from (after a failure, or ``weir run -s``)."""

    checkpoint_id: int
    restore_timestamp_ms: int
    external_pointer: str
    is_savepoint: bool = False


@dataclass(frozen=True, slots=True)
class CheckpointStatsSnapshot:
    """A job's checkpoint counts and latest history, newest first. The default one is
    that of a job without checkpointing."""

    checkpointing_enabled: bool = False
    num_completed: int = 0
    num_failed: int = 0
    num_in_progress: int = 0
    history: tuple[CheckpointStats, ...] = ()
    latest_completed: CheckpointStats | None = None
    latest_failed: CheckpointStats | None = None
    latest_savepoint: CheckpointStats | None = None
    num_restored: int = 0
    latest_restored: RestoredCheckpointStats | None = None

    @property
    def num_triggered(self) -> int:
        return self.num_completed + self.num_failed + self.num_in_progress

    @property
    def latest_completed_path(self) -> str:
        """Where the latest completed checkpoint is (``""``: none yet)."""
        return self.latest_completed.external_pointer if self.latest_completed else ""

    @property
    def latest_restored_id(self) -> int:
        """The checkpoint the job last restored from (0: none)."""
        return self.latest_restored.checkpoint_id if self.latest_restored else 0

    @property
    def latest_restored_path(self) -> str:
        return self.latest_restored.external_pointer if self.latest_restored else ""
