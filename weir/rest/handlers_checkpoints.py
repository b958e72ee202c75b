"""Checkpoint REST handlers: ``/jobs/{jobid}/checkpoints`` (counts, summary, latest,
history) and ``/jobs/{jobid}/checkpoints/config``, in Flink's shapes."""

from __future__ import annotations

from typing import Any

from weir.core.checkpoint import CheckpointStats, CheckpointStatsSnapshot, CheckpointType
from weir.core.checkpoint.checkpoint_config import CheckpointingConfig
from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.handlers_jobs import job_config, job_plan
from weir.rest.routes import RestRequest, route

_CLASS_NAMES = {
    "COMPLETED": ".CompletedCheckpointStatistics",
    "FAILED": ".FailedCheckpointStatistics",
    "IN_PROGRESS": ".PendingCheckpointStatistics",
}
# Weir writes savepoints in one format, which any state backend restores (Flink's
# SavepointFormatType.CANONICAL); checkpoints have no savepoint format.
_SAVEPOINT_FORMAT = "CANONICAL"


def _is_savepoint(stats: CheckpointStats) -> bool:
    return stats.checkpoint_type is CheckpointType.SAVEPOINT


def _checkpoint_type(stats: CheckpointStats) -> str:
    """Flink's RestAPICheckpointType."""
    if _is_savepoint(stats):
        return "SAVEPOINT"
    return "UNALIGNED_CHECKPOINT" if stats.persisted_in_flight_bytes else "CHECKPOINT"


def _latest_ack_ms(stats: CheckpointStats) -> int:
    if not stats.num_acknowledged:
        return -1  # Flink's "n/a": nothing acknowledged yet
    return stats.trigger_timestamp_ms + stats.end_to_end_duration_ms


def _task_entries(stats: CheckpointStats, vertices: list[dict[str, Any]]) -> dict[str, Any]:
    """Flink's per-vertex TaskCheckpointStatistics. The JobMaster keeps a checkpoint's
    statistics whole, not per vertex: a vertex shows the checkpoint's status and
    acknowledgement, its subtasks all acknowledged once the checkpoint completed, and
    its sizes as 0 (unknown per vertex)."""
    done = str(stats.status) == "COMPLETED"
    return {
        v["id"]: {
            "id": stats.checkpoint_id,
            "status": str(stats.status),
            "latest_ack_timestamp": _latest_ack_ms(stats) if done else -1,
            "checkpointed_size": 0,
            "state_size": 0,
            "end_to_end_duration": stats.end_to_end_duration_ms if done else 0,
            "alignment_buffered": 0,
            "processed_data": 0,
            "persisted_data": 0,
            "num_subtasks": int(v["parallelism"]),
            "num_acknowledged_subtasks": int(v["parallelism"]) if done else 0,
        }
        for v in vertices
    }


def _entry(stats: CheckpointStats, vertices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Flink's CheckpointStatistics of one checkpoint (Completed-, Failed- or
    PendingCheckpointStatistics by its status); ``tasks`` per vertex when the job's
    vertices are given (the details endpoint), empty otherwise as in Flink's history."""
    status = str(stats.status)
    body: dict[str, Any] = {
        "className": _CLASS_NAMES.get(status, ".CheckpointStatistics"),
        "id": stats.checkpoint_id,
        "status": status,
        "is_savepoint": _is_savepoint(stats),
        "savepointFormat": _SAVEPOINT_FORMAT if _is_savepoint(stats) else None,
        "trigger_timestamp": stats.trigger_timestamp_ms,
        "latest_ack_timestamp": _latest_ack_ms(stats),
        "checkpointed_size": stats.state_size_bytes,
        "state_size": stats.state_size_bytes,
        "end_to_end_duration": stats.end_to_end_duration_ms,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": stats.persisted_in_flight_bytes,
        "num_subtasks": stats.num_subtasks,
        "num_acknowledged_subtasks": stats.num_acknowledged,
        "checkpoint_type": _checkpoint_type(stats),
        "tasks": _task_entries(stats, vertices) if vertices is not None else {},
    }
    if status == "COMPLETED":
        body["external_path"] = stats.external_pointer or None
        body["discarded"] = False
    if status == "FAILED":
        body["failure_timestamp"] = stats.trigger_timestamp_ms + stats.end_to_end_duration_ms
        body["failure_message"] = stats.failure_message or None
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


def _latest_completed_checkpoint(snapshot: CheckpointStatsSnapshot) -> CheckpointStats | None:
    """The latest completed checkpoint that is not a savepoint (Flink shows savepoints
    apart, as ``latest.savepoint``)."""
    latest = snapshot.latest_completed
    if latest is not None and not _is_savepoint(latest):
        return latest
    return next(
        (s for s in snapshot.history if str(s.status) == "COMPLETED" and not _is_savepoint(s)),
        None,
    )


def checkpoints_body(snapshot: CheckpointStatsSnapshot) -> dict[str, Any]:
    completed = [s for s in snapshot.history if str(s.status) == "COMPLETED"]
    restored = snapshot.latest_restored
    latest_completed = _latest_completed_checkpoint(snapshot)
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
            "completed": _entry(latest_completed) if latest_completed else None,
            "savepoint": _entry(snapshot.latest_savepoint) if snapshot.latest_savepoint else None,
            "failed": _entry(snapshot.latest_failed) if snapshot.latest_failed else None,
            "restored": {
                "id": restored.checkpoint_id,
                "restore_timestamp": restored.restore_timestamp_ms,
                "is_savepoint": restored.is_savepoint,
                "external_path": restored.external_pointer or None,
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


def _checkpoint(
    view: ClusterView, req: RestRequest
) -> tuple[CheckpointStats, list[dict[str, Any]]]:
    """The checkpoint of the path, from the job's history, and the job's vertices."""
    job_id, raw = req.path_params["jobid"], req.path_params["checkpointid"]
    try:
        checkpoint_id = int(raw)
    except ValueError:
        msg = f"{raw!r} is not a checkpoint id: give the number of a checkpoint"
        raise RestHandlerError(msg, 400) from None
    snapshot = view.dispatcher.checkpoint_statistics(job_id)
    known = [
        *snapshot.history,
        *(s for s in (snapshot.latest_completed, snapshot.latest_savepoint) if s is not None),
        *(s for s in (snapshot.latest_failed,) if s is not None),
    ]
    found = next((s for s in known if s.checkpoint_id == checkpoint_id), None)
    if found is None:
        msg = (
            f"job {job_id} has no statistics of checkpoint {checkpoint_id}: it was never "
            "taken, or it is older than the history that is kept (GET "
            f"/jobs/{job_id}/checkpoints lists the ones there are)"
        )
        raise RestHandlerError(msg, 404)
    return found, list(job_plan(view, job_id)["nodes"])


@route(
    "GET",
    "/jobs/{jobid}/checkpoints/details/{checkpointid}",
    "One checkpoint's statistics, with an entry per vertex.",
)
def get_checkpoint_details(view: ClusterView, req: RestRequest) -> Any:
    stats, vertices = _checkpoint(view, req)
    return _entry(stats, vertices)


@route(
    "GET",
    "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}",
    "One checkpoint's statistics for the subtasks of one vertex.",
)
def get_checkpoint_subtask_details(view: ClusterView, req: RestRequest) -> Any:
    """Flink's TaskCheckpointStatisticsWithSubtaskDetails. The JobMaster keeps the
    slowest acknowledgement of a checkpoint, not each subtask's: once the checkpoint
    completed, every subtask shows those durations (sizes 0, unknown per subtask);
    before, every subtask is pending."""
    stats, vertices = _checkpoint(view, req)
    vertex_id = req.path_params["vertexid"]
    vertex = next((v for v in vertices if v["id"] == vertex_id), None)
    if vertex is None:
        msg = f"the job has no vertex {vertex_id}; GET /jobs/{{jobid}} lists its vertices"
        raise RestHandlerError(msg, 404)
    body = _task_entries(stats, [vertex])[vertex_id]
    done = str(stats.status) == "COMPLETED"
    parallelism = int(vertex["parallelism"])
    subtasks: list[dict[str, Any]] = []
    for index in range(parallelism):
        if not done:
            subtasks.append({"index": index, "status": "pending_or_failed"})
            continue
        subtasks.append(
            {
                "index": index,
                "status": "completed",
                "ack_timestamp": _latest_ack_ms(stats),
                "end_to_end_duration": stats.end_to_end_duration_ms,
                "checkpointed_size": 0,
                "state_size": 0,
                "checkpoint": {"sync": stats.sync_duration_ms, "async": stats.async_duration_ms},
                "alignment": {
                    "buffered": 0,
                    "processed": 0,
                    "persisted": 0,
                    "duration": stats.alignment_duration_ms,
                },
                "start_delay": 0,
                "unaligned_checkpoint": stats.persisted_in_flight_bytes > 0,
                "aborted": False,
            }
        )
    times = [stats.end_to_end_duration_ms] * parallelism if done else []
    body["summary"] = {
        "checkpointed_size": _summary([0] * len(times)),
        "state_size": _summary([0] * len(times)),
        "end_to_end_duration": _summary(times),
        "checkpoint_duration": {
            "sync": _summary([stats.sync_duration_ms] * len(times)),
            "async": _summary([stats.async_duration_ms] * len(times)),
        },
        "alignment": {
            "buffered": _summary([0] * len(times)),
            "processed": _summary([0] * len(times)),
            "persisted": _summary([0] * len(times)),
            "duration": _summary([stats.alignment_duration_ms] * len(times)),
        },
        "start_delay": _summary([0] * len(times)),
    }
    body["subtasks"] = subtasks
    return body
