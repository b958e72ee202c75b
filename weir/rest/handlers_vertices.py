"""Vertex REST handlers: a vertex's subtasks with their metrics, its back-pressure (from
busy and back-pressured time, as Flink computes it since 1.13) and its watermarks."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from weir.core.job_info import JobDetailsInfo, TaskStatusInfo
from weir.rest.cluster_view import ClusterView, TaskManagerMetricsView, TaskMetrics
from weir.rest.errors import RestHandlerError
from weir.rest.handlers_jobs import aggregate_state, duration, job_plan, vertex_io_metrics
from weir.rest.routes import RestRequest, route

# Flink's thresholds of backPressuredTimeMsPerSecond / 1000 (JobVertexBackPressureHandler).
_LOW_RATIO = 0.10
_HIGH_RATIO = 0.5


def back_pressure_level(ratio: float) -> str:
    if ratio <= _LOW_RATIO:
        return "ok"
    if ratio <= _HIGH_RATIO:
        return "low"
    return "high"


def vertex_of(
    view: ClusterView, req: RestRequest
) -> tuple[JobDetailsInfo, dict[str, Any], list[TaskStatusInfo]]:
    job_id, vertex_id = req.path_params["jobid"], req.path_params["vertexid"]
    details = view.dispatcher.job_details(job_id)
    plan = job_plan(view, job_id)
    node = next((n for n in plan["nodes"] if n["id"] == vertex_id), None)
    if node is None:
        msg = (
            f"job {job_id} has no vertex {vertex_id}; GET /jobs/{job_id} lists its vertices "
            "with their ids"
        )
        raise RestHandlerError(msg, 404)
    subtasks = sorted(
        (t for t in details.tasks if t.vertex_id == vertex_id), key=lambda t: t.subtask_index
    )
    return details, node, subtasks


# The states whose durations Flink's dashboard shows per subtask, in its order.
_TIMED_STATES = ("CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING")
_ENDED_STATES = ("FINISHED", "CANCELED", "FAILED")
_AGGREGATED_METRICS = (
    "read-bytes",
    "write-bytes",
    "read-records",
    "write-records",
    "accumulated-backpressured-time",
    "accumulated-busy-time",
    "accumulated-idle-time",
)


def status_durations(task: TaskStatusInfo, details: JobDetailsInfo) -> dict[str, int]:
    """How long the subtask was in each state. The JobMaster reports a task's state, not
    when it entered it: a subtask has run since the job started, the states before
    running read as 0."""
    ran = task.state == "RUNNING" or task.state in _ENDED_STATES
    running = max(0, duration(details.start_time_ms, details.end_time_ms)) if ran else 0
    return {**dict.fromkeys(_TIMED_STATES, 0), "RUNNING": running}


def subtask_row(
    task: TaskStatusInfo,
    details: JobDetailsInfo,
    metrics: TaskMetrics,
    tms: Mapping[str, TaskManagerMetricsView],
) -> dict[str, Any]:
    """Flink's SubtaskExecutionAttemptDetailsInfo of a subtask's current attempt."""
    tm = tms.get(task.resource_id)
    endpoint = tm.info.rpc_address if tm is not None else "(unassigned)"
    ended = task.state in _ENDED_STATES
    return {
        "subtask": task.subtask_index,
        "status": task.state,
        "attempt": task.attempt_number,
        "endpoint": endpoint,
        "host": endpoint.rsplit(":", 1)[0],
        "start-time": details.start_time_ms,
        "end-time": (details.end_time_ms or -1) if ended else -1,
        "duration": duration(details.start_time_ms, details.end_time_ms),
        "metrics": vertex_io_metrics([task], metrics),
        "taskmanager-id": task.resource_id or "(unassigned)",
        "status-duration": status_durations(task, details),
        # Weir runs no speculative attempts: the current attempt is the only one.
        "other-concurrent-attempts": [],
        "start_time": details.start_time_ms,
    }


def _statistics(values: list[int]) -> dict[str, int]:
    """Flink's MetricsStatistics: min, max, avg, sum and percentiles of longs."""
    if not values:
        return dict.fromkeys(("min", "max", "avg", "sum", "median", "p25", "p75", "p95"), 0)
    ordered = sorted(values)

    def percentile(p: int) -> int:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": sum(ordered) // len(ordered),
        "sum": sum(ordered),
        "median": percentile(50),
        "p25": percentile(25),
        "p75": percentile(75),
        "p95": percentile(95),
    }


def aggregated(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flink's AggregatedTaskDetailsInfo over subtask rows."""
    return {
        "metrics": {
            name: _statistics([int(r["metrics"][name]) for r in rows])
            for name in _AGGREGATED_METRICS
        },
        "status-duration": {
            state: _statistics([r["status-duration"][state] for r in rows])
            for state in _TIMED_STATES
        },
    }


@route("GET", "/jobs/{jobid}/vertices/{vertexid}", "A vertex's subtasks with their metrics.")
def get_vertex(view: ClusterView, req: RestRequest) -> Any:
    details, node, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    tms = view.task_managers()
    rows = [subtask_row(t, details, metrics, tms) for t in subtasks]
    return {
        "id": node["id"],
        "name": node["description"],
        "parallelism": node["parallelism"],
        "maxParallelism": node.get("maxParallelism", -1),
        "status": aggregate_state(subtasks),
        "now": int(time.time() * 1000),
        "subtasks": rows,
        "aggregated": aggregated(rows),
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/backpressure",
    "Back-pressure of each subtask: ratio of back-pressured time and its level.",
)
def get_back_pressure(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    rows: list[dict[str, Any]] = []
    worst = 0.0
    for t in subtasks:
        m = metrics.get(t.execution_attempt_id, {})
        ratio = m.get("backPressuredTimeMsPerSecond", 0.0) / 1000
        idle = m.get("idleTimeMsPerSecond", 0.0) / 1000
        busy = m.get("busyTimeMsPerSecond", math.nan) / 1000
        level = back_pressure_level(ratio)
        rows.append(
            {
                "subtask": t.subtask_index,
                "attempt-number": t.attempt_number,
                "backpressureLevel": level,
                "backpressure-level": level,
                "ratio": round(ratio, 4),
                "idleRatio": round(idle, 4),
                # A double Flink's clients read as a primitive: 0 until the subtask's
                # TaskManager has reported it.
                "busyRatio": round(busy, 4) if not math.isnan(busy) else 0.0,
                "other-concurrent-attempts": [],
            }
        )
        worst = max(worst, ratio)
    return {
        "status": "ok",
        "backpressureLevel": back_pressure_level(worst),
        "backpressure-level": back_pressure_level(worst),
        "end-timestamp": int(time.time() * 1000),
        "subtasks": rows,
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/watermarks",
    "Each subtask's current input watermark.",
    response="Metrics",
)
def get_watermarks(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    result = []
    for t in subtasks:
        m = metrics.get(t.execution_attempt_id)
        if m is None or "currentInputWatermark" not in m:
            continue
        result.append(
            {
                "id": f"{t.subtask_index}.currentInputWatermark",
                "value": str(int(m["currentInputWatermark"])),
            }
        )
    return result


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/metrics",
    "The vertex's task metrics as <subtask>.<name>; ?get=a,b returns their values.",
    response="Metrics",
)
def get_vertex_metrics(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    values = {
        f"{t.subtask_index}.{name}": value
        for t in subtasks
        for name, value in metrics.get(t.execution_attempt_id, {}).items()
    }
    wanted = [n for n in req.query.get("get", "").split(",") if n]
    if not wanted:
        return [{"id": name} for name in sorted(values)]
    return [{"id": n, "value": _number(values[n])} for n in wanted if n in values]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
