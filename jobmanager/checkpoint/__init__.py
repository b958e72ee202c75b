"""The JobMaster's side of checkpointing: the CheckpointCoordinator and what it tracks."""

# The statistics the tracker reports are weir.core's, shared with the Dispatcher and client.
from weir.core.checkpoint import CheckpointStats, CheckpointStatsSnapshot, CheckpointStatus
from weir.jobmanager.checkpoint.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointOptions,
    CheckpointPlanProvider,
    CheckpointTriggerGateway,
)
from weir.jobmanager.checkpoint.checkpoint_plan import (
    CheckpointPlan,
    CheckpointTask,
    FinishedOperator,
    plan_checkpoint,
)
from weir.jobmanager.checkpoint.checkpoint_stats_tracker import CheckpointStatsTracker
from weir.jobmanager.checkpoint.completed_checkpoint import CompletedCheckpoint
from weir.jobmanager.checkpoint.pending_checkpoint import PendingCheckpoint
from weir.jobmanager.checkpoint.scheduling import (
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
    "FinishedOperator",
    "PendingCheckpoint",
    "ScheduledExecutor",
    "ScheduledTask",
    "ThreadScheduledExecutor",
    "plan_checkpoint",
    "system_clock_ms",
]
