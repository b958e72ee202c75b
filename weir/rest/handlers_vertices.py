"""Vertex REST handlers: a vertex's subtasks with their metrics, its back-pressure (from
busy and back-pressured time, as Flink computes it since 1.13) and its watermarks."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from weir.core.job_info import JobDetailsInfo, TaskStatusInfo
from weir.rest.cluster_view import ClusterView
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


def _vertex(
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


def _subtask_metrics(task: TaskStatusInfo, metrics: Mapping[str, Mapping[str, float]]) -> Any:
    return vertex_io_metrics([task], metrics)


@route("GET", "/jobs/{jobid}/vertices/{vertexid}", "A vertex's subtasks with their metrics.")
def get_vertex(view: ClusterView, req: RestRequest) -> Any:
    details, node, subtasks = _vertex(view, req)
    metrics = view.task_metrics()
    tms = view.task_managers()
    rows = []
    for t in subtasks:
        tm = tms.get(t.resource_id)
        rows.append(
            {
                "subtask": t.subtask_index,
                "status": t.state,
                "attempt": t.attempt_number,
                "endpoint": tm.info.rpc_address if tm is not None else "(unassigned)",
                "start-time": details.start_time_ms,
                "end-time": -1,
                "duration": duration(details.start_time_ms, details.end_time_ms),
                "metrics": _subtask_metrics(t, metrics),
                "taskmanager-id": t.resource_id or "(unassigned)",
                "start_time": details.start_time_ms,
            }
        )
    return {
        "id": node["id"],
        "name": node["description"],
        "parallelism": node["parallelism"],
        "maxParallelism": node.get("maxParallelism", -1),
        "status": aggregate_state(subtasks),
        "now": int(time.time() * 1000),
        "subtasks": rows,
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/backpressure",
    "Back-pressure of each subtask: ratio of back-pressured time and its level.",
)
def get_back_pressure(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = _vertex(view, req)
    metrics = view.task_metrics()
    rows: list[dict[str, Any]] = []
    worst = 0.0
    for t in subtasks:
        m = metrics.get(t.execution_attempt_id, {})
        ratio = m.get("backPressuredTimeMsPerSecond", 0.0) / 1000
        idle = m.get("idleTimeMsPerSecond", 0.0) / 1000
        busy = m.get("busyTimeMsPerSecond", math.nan) / 1000
        rows.append(
            {
                "subtask": t.subtask_index,
                "attempt-number": t.attempt_number,
                "backpressure-level": back_pressure_level(ratio),
                "ratio": round(ratio, 4),
                "idleRatio": round(idle, 4),
                "busyRatio": round(busy, 4) if not math.isnan(busy) else None,
            }
        )
        worst = max(worst, ratio)
    return {
        "status": "ok",
        "backpressure-level": back_pressure_level(worst),
        "end-timestamp": int(time.time() * 1000),
        "subtasks": rows,
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/watermarks",
    "Each subtask's current input watermark.",
    response="array",
)
def get_watermarks(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = _vertex(view, req)
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
    response="array",
)
def get_vertex_metrics(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = _vertex(view, req)
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
