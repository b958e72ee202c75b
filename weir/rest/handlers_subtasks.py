"""A vertex's subtasks beyond its details page: one subtask (and attempt), their
metrics aggregated (Flink's AggregatingSubtasksMetricsHandler, which the dashboard's
graph reads for busy and back-pressured time), their state times, the vertex's
TaskManagers, accumulators and flame graph, in Flink 2's shapes."""

from __future__ import annotations

import time
from typing import Any

from weir.core.job_info import TaskStatusInfo
from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.handlers_jobs import aggregate_state, duration, state_counts, vertex_io_metrics
from weir.rest.handlers_vertices import aggregated, subtask_row, vertex_of
from weir.rest.metric_queries import aggregated_metric_values, metric_values
from weir.rest.routes import RestRequest, route

# Flink answers a flame graph request with this when rest.flamegraph.enabled is off
# (VertexFlameGraph.disabled()); a Python task has no JVM stacks to sample.
_FLAME_GRAPH_DISABLED = -2


def _selected(subtasks: list[TaskStatusInfo], spec: str) -> list[TaskStatusInfo]:
    """Flink's ``?subtasks=0,2-4`` filter (all when empty)."""
    if not spec:
        return subtasks
    wanted: set[int] = set()
    try:
        for part in spec.split(","):
            first, _, last = part.strip().partition("-")
            wanted.update(range(int(first), int(last or first) + 1))
    except ValueError:
        msg = f"subtasks={spec!r}: give subtask indexes and ranges, like 0,2-4"
        raise RestHandlerError(msg, 400) from None
    return [t for t in subtasks if t.subtask_index in wanted]


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics",
    "The vertex's task metrics aggregated over its subtasks; ?get=a,b&agg=max,avg "
    "&subtasks=0-2 (min, max, avg, sum, skew).",
    response="AggregatedMetrics",
)
def get_subtasks_metrics(view: ClusterView, req: RestRequest) -> Any:
    _, _, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    chosen = _selected(subtasks, req.query.get("subtasks", ""))
    components = [metrics.get(t.execution_attempt_id, {}) for t in chosen]
    return aggregated_metric_values(components, req.query.get("get", ""), req.query.get("agg", ""))


def _subtask(view: ClusterView, req: RestRequest) -> tuple[Any, TaskStatusInfo]:
    details, _, subtasks = vertex_of(view, req)
    raw = req.path_params["subtaskindex"]
    found = next((t for t in subtasks if str(t.subtask_index) == raw), None)
    if found is None:
        msg = (
            f"the vertex has no subtask {raw!r}: its subtasks are 0 to {len(subtasks) - 1} "
            "(GET /jobs/{jobid}/vertices/{vertexid} lists them)"
        )
        raise RestHandlerError(msg, 404)
    return details, found


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}",
    "One subtask's current attempt.",
)
def get_subtask(view: ClusterView, req: RestRequest) -> Any:
    details, task = _subtask(view, req)
    return subtask_row(task, details, view.task_metrics(), view.task_managers())


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/attempts/{attempt}",
    "One attempt of a subtask (only its current attempt is kept).",
)
def get_subtask_attempt(view: ClusterView, req: RestRequest) -> Any:
    details, task = _subtask(view, req)
    if req.path_params["attempt"] != str(task.attempt_number):
        msg = (
            f"subtask {task.subtask_index} has no attempt {req.path_params['attempt']} on "
            f"record: only its current attempt, {task.attempt_number}, is kept"
        )
        raise RestHandlerError(msg, 404)
    return subtask_row(task, details, view.task_metrics(), view.task_managers())


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics",
    "One subtask's task metrics; ?get=a,b returns their values.",
    response="Metrics",
)
def get_subtask_metrics(view: ClusterView, req: RestRequest) -> Any:
    _, task = _subtask(view, req)
    values = view.task_metrics().get(task.execution_attempt_id, {})
    return metric_values(values, req.query.get("get", ""))


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasktimes",
    "When each subtask entered its states (as far as they are known).",
)
def get_subtask_times(view: ClusterView, req: RestRequest) -> Any:
    details, node, subtasks = vertex_of(view, req)
    tms = view.task_managers()
    rows = []
    for t in subtasks:
        tm = tms.get(t.resource_id)
        timestamps = {"CREATED": details.start_time_ms}
        if t.state == "RUNNING" or t.state in ("FINISHED", "CANCELED", "FAILED"):
            timestamps["RUNNING"] = details.start_time_ms
        if t.state in ("FINISHED", "CANCELED", "FAILED") and details.end_time_ms:
            timestamps[t.state] = details.end_time_ms
        rows.append(
            {
                "subtask": t.subtask_index,
                "endpoint": tm.info.rpc_address if tm is not None else "(unassigned)",
                "duration": duration(details.start_time_ms, details.end_time_ms),
                "timestamps": timestamps,
            }
        )
    return {
        "id": node["id"],
        "name": node["description"],
        "now": int(time.time() * 1000),
        "subtasks": rows,
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/taskmanagers",
    "The vertex's subtasks grouped by the TaskManager they run on.",
)
def get_vertex_task_managers(view: ClusterView, req: RestRequest) -> Any:
    details, node, subtasks = vertex_of(view, req)
    metrics = view.task_metrics()
    tms = view.task_managers()
    by_tm: dict[str, list[TaskStatusInfo]] = {}
    for t in subtasks:
        by_tm.setdefault(t.resource_id, []).append(t)
    entries = []
    for resource_id, tasks in sorted(by_tm.items()):
        tm = tms.get(resource_id)
        rows = [subtask_row(t, details, metrics, tms) for t in tasks]
        entries.append(
            {
                "endpoint": tm.info.rpc_address if tm is not None else "(unassigned)",
                "status": aggregate_state(tasks),
                "start-time": details.start_time_ms,
                "end-time": details.end_time_ms or -1,
                "duration": duration(details.start_time_ms, details.end_time_ms),
                "metrics": vertex_io_metrics(tasks, metrics),
                "status-counts": state_counts(tasks),
                "taskmanager-id": resource_id or "(unassigned)",
                "aggregated": aggregated(rows),
            }
        )
    return {
        "id": node["id"],
        "name": node["description"],
        "now": int(time.time() * 1000),
        "taskmanagers": entries,
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/accumulators",
    "The vertex's user accumulators (a Weir job has none).",
)
def get_vertex_accumulators(view: ClusterView, req: RestRequest) -> Any:
    _, node, _ = vertex_of(view, req)
    return {"id": node["id"], "user-accumulators": []}


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/subtasks/accumulators",
    "Each subtask's user accumulators (a Weir job has none).",
)
def get_subtasks_accumulators(view: ClusterView, req: RestRequest) -> Any:
    _, node, subtasks = vertex_of(view, req)
    tms = view.task_managers()
    return {
        "id": node["id"],
        "parallelism": node["parallelism"],
        "subtasks": [
            {
                "subtask": t.subtask_index,
                "attempt": t.attempt_number,
                "endpoint": tms[t.resource_id].info.rpc_address
                if t.resource_id in tms
                else "(unassigned)",
                "user-accumulators": [],
            }
            for t in subtasks
        ],
    }


@route(
    "GET",
    "/jobs/{jobid}/vertices/{vertexid}/flamegraph",
    "The vertex's flame graph: disabled, as Flink's is by default (no JVM stacks here).",
)
def get_flame_graph(view: ClusterView, req: RestRequest) -> Any:
    vertex_of(view, req)
    return {"endTimestamp": _FLAME_GRAPH_DISABLED, "data": None}


@route(
    "GET",
    "/jobs/{jobid}/accumulators",
    "The job's accumulators (a Weir job has none).",
)
def get_job_accumulators(view: ClusterView, req: RestRequest) -> Any:
    view.dispatcher.job_details(req.path_params["jobid"])
    return {
        "job-accumulators": [],
        "user-task-accumulators": [],
        "serialized-user-task-accumulators": {},
    }
