"""The JobMaster's side of checkpointing: the CheckpointCoordinator and what it tracks."""

from jobmanager.checkpoint.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointOptions,
    CheckpointPlanProvider,
    CheckpointTriggerGateway,
)
from jobmanager.checkpoint.checkpoint_stats import (
    CheckpointStats,
    CheckpointStatsSnapshot,
    CheckpointStatsTracker,
    CheckpointStatus,
)
from jobmanager.checkpoint.completed_checkpoint import CompletedCheckpoint
from jobmanager.checkpoint.pending_checkpoint import (
    CheckpointPlan,
    CheckpointTask,
    PendingCheckpoint,
)
from jobmanager.checkpoint.scheduling import (
    Clock,
    ScheduledExecutor,
    ScheduledTask,
    ThreadScheduledExecutor,
    system_clock_ms,
)

__all__ = [
    "CheckpointCoordinator",
    "CheckpointOptions",
    "CheckpointPlan",
    "CheckpointPlanProvider",
    "CheckpointStats",
    "CheckpointStatsSnapshot",
    "CheckpointStatsTracker",
    "CheckpointStatus",
    "CheckpointTask",
    "CheckpointTriggerGateway",
    "Clock",
    "CompletedCheckpoint",
    "PendingCheckpoint",
    "ScheduledExecutor",
    "ScheduledTask",
    "ThreadScheduledExecutor",
    "system_clock_ms",
]
