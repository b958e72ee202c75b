"""Checkpoint REST handlers: ``/jobs/{jobid}/checkpoints`` (counts, summary, latest,
history) and ``/jobs/{jobid}/checkpoints/config``, in Flink's shapes."""

from __future__ import annotations

from typing import Any

from weir.core.checkpoint import CheckpointStats, CheckpointStatsSnapshot
from weir.core.checkpoint.checkpoint_config import CheckpointingConfig
from weir.rest.cluster_view import ClusterView
from weir.rest.handlers_jobs import job_config
from weir.rest.routes import RestRequest, route

_CLASS_NAMES = {
    "COMPLETED": ".CompletedCheckpointStatistics",
    "FAILED": ".FailedCheckpointStatistics",
    "IN_PROGRESS": ".PendingCheckpointStatistics",
}


def _entry(stats: CheckpointStats) -> dict[str, Any]:
    status = str(stats.status)
    body: dict[str, Any] = {
        "className": _CLASS_NAMES.get(status, ".CheckpointStatistics"),
        "id": stats.checkpoint_id,
        "status": status,
        "is_savepoint": stats.checkpoint_type.name != "CHECKPOINT",
        "savepointFormat": None,
        "trigger_timestamp": stats.trigger_timestamp_ms,
        "latest_ack_timestamp": stats.trigger_timestamp_ms + stats.end_to_end_duration_ms,
        "checkpointed_size": stats.state_size_bytes,
        "state_size": stats.state_size_bytes,
        "end_to_end_duration": stats.end_to_end_duration_ms,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": stats.persisted_in_flight_bytes,
        "num_subtasks": stats.num_subtasks,
        "num_acknowledged_subtasks": stats.num_acknowledged,
        "checkpoint_type": (
            "UNALIGNED_CHECKPOINT" if stats.persisted_in_flight_bytes else "CHECKPOINT"
        )
        if stats.checkpoint_type.name == "CHECKPOINT"
        else "SAVEPOINT",
        "tasks": {},
    }
    if status == "COMPLETED":
        body["external_path"] = stats.external_pointer
        body["discarded"] = False
    if status == "FAILED":
        body["failure_timestamp"] = body["latest_ack_timestamp"]
        body["failure_message"] = stats.failure_message
    return body


def _summary(values: list[int]) -> dict[str, Any]:
    if not values:
        return dict.fromkeys(("min", "max", "avg", "p50", "p90", "p95", "p99", "p999"), 0)
    ordered = sorted(values)

    def quantile(q: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])

    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": sum(ordered) // len(ordered),
        "p50": quantile(0.5),
        "p90": quantile(0.9),
        "p95": quantile(0.95),
        "p99": quantile(0.99),
        "p999": quantile(0.999),
    }


def checkpoints_body(snapshot: CheckpointStatsSnapshot) -> dict[str, Any]:
    completed = [s for s in snapshot.history if str(s.status) == "COMPLETED"]
    restored = snapshot.latest_restored
    return {
        "counts": {
            "restored": snapshot.num_restored,
            "total": snapshot.num_triggered,
            "in_progress": snapshot.num_in_progress,
            "completed": snapshot.num_completed,
            "failed": snapshot.num_failed,
        },
        "summary": {
            "checkpointed_size": _summary([s.state_size_bytes for s in completed]),
            "state_size": _summary([s.state_size_bytes for s in completed]),
            "end_to_end_duration": _summary([s.end_to_end_duration_ms for s in completed]),
            "alignment_buffered": _summary([]),
            "processed_data": _summary([]),
            "persisted_data": _summary([s.persisted_in_flight_bytes for s in completed]),
        },
        "latest": {
            "completed": _entry(snapshot.latest_completed) if snapshot.latest_completed else None,
            "savepoint": None,
            "failed": _entry(snapshot.latest_failed) if snapshot.latest_failed else None,
            "restored": {
                "id": restored.checkpoint_id,
                "restore_timestamp": restored.restore_timestamp_ms,
                "is_savepoint": False,
                "external_path": restored.external_pointer,
            }
            if restored
            else None,
        },
        "history": [_entry(s) for s in snapshot.history],
    }


@route("GET", "/jobs/{jobid}/checkpoints", "Checkpoint counts, summary, latest and history.")
def get_checkpoints(view: ClusterView, req: RestRequest) -> Any:
    return checkpoints_body(view.dispatcher.checkpoint_statistics(req.path_params["jobid"]))


@route("GET", "/jobs/{jobid}/checkpoints/config", "The job's checkpointing configuration.")
def get_checkpoint_config(view: ClusterView, req: RestRequest) -> Any:
    config = job_config(view, req.path_params["jobid"])
    c = CheckpointingConfig.from_config(config)
    retention = c.retention.name
    return {
        "mode": c.mode.name.lower(),
        "interval": c.interval_ms if c.enabled else 0x7FFFFFFFFFFFFFFF,
        "timeout": c.timeout_ms,
        "min_pause": c.min_pause_ms,
        "max_concurrent": c.max_concurrent,
        "externalization": {
            "enabled": retention != "NO_EXTERNALIZED_CHECKPOINTS",
            "delete_on_cancellation": retention != "RETAIN_ON_CANCELLATION",
        },
        "state_backend": config.get("state.backend.type", "hashmap"),
        "checkpoint_storage": config.get("execution.checkpointing.storage", "")
        or (
            "FileSystemCheckpointStorage"
            if config.get("execution.checkpointing.dir")
            else "JobManagerCheckpointStorage"
        ),
        "unaligned_checkpoints": c.unaligned,
        "tolerable_failed_checkpoints": c.tolerable_failures,
        "aligned_checkpoint_timeout": 0,
        "checkpoints_after_tasks_finish": c.after_tasks_finish,
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": 0,
        "changelog_storage": "memory",
    }
