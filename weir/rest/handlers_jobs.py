"""Job REST handlers: ``/jobs``, ``/jobs/overview``, ``/jobs/{jobid}`` and its plan,
configuration and exceptions; ``PATCH /jobs/{jobid}`` cancels, ``POST /jobs`` submits a
Python job file (Flink's shapes and field names)."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from weir.core.job_info import JobDetailsInfo, TaskStatusInfo
from weir.core.job_status import JobStatus
from weir.rest.cluster_view import ClusterView, TaskMetrics
from weir.rest.errors import RestHandlerError
from weir.rest.job_file_submission import JobFileRun, run_job_file
from weir.rest.request_fields import query_string, without_nul
from weir.rest.routes import RestRequest, RestResponse, route

EXECUTION_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
)


def state_counts(tasks: list[TaskStatusInfo]) -> dict[str, int]:
    counts = dict.fromkeys(EXECUTION_STATES, 0)
    for task in tasks:
        counts[task.state] = counts.get(task.state, 0) + 1
    return counts


def aggregate_state(tasks: list[TaskStatusInfo]) -> str:
    """A vertex's state from its subtasks' (Flink's getAggregateJobVertexState)."""
    counts = state_counts(tasks)
    if tasks and counts["FINISHED"] == len(tasks):
        return "FINISHED"
    for state in ("FAILED", "CANCELING", "CANCELED", "RECONCILING", "RUNNING", "INITIALIZING"):
        if counts[state]:
            return state
    for state in ("DEPLOYING", "SCHEDULED", "FINISHED"):
        if counts[state]:
            return "RUNNING" if state == "FINISHED" else state
    return "CREATED"


def duration(start_ms: int, end_ms: int) -> int:
    if start_ms <= 0:
        return -1
    return (end_ms if end_ms > 0 else int(time.time() * 1000)) - start_ms


def job_plan(view: ClusterView, job_id: str) -> dict[str, Any]:
    plan_json, _ = view.dispatcher.job_plan(job_id)
    return json.loads(plan_json)


def job_config(view: ClusterView, job_id: str) -> dict[str, str]:
    return view.dispatcher.job_plan(job_id)[1]


def job_overview_entry(details: JobDetailsInfo) -> dict[str, Any]:
    tasks = list(details.tasks)
    return {
        "jid": details.job_id,
        "name": details.job_name,
        "state": details.status,
        "start-time": details.start_time_ms,
        "end-time": details.end_time_ms or -1,
        "duration": duration(details.start_time_ms, details.end_time_ms),
        "last-modification": details.end_time_ms or details.start_time_ms,
        "tasks": {"total": len(tasks), **{k.lower(): v for k, v in state_counts(tasks).items()}},
        # Operators not yet in the job's graph (Flink 2's adaptive graph): a Weir job's
        # graph is whole from its submission.
        "pending-operators": 0,
    }


def slot_sharing_group_id(job_id: str) -> str:
    """The id of a job's one slot sharing group (every vertex shares slots), as Flink
    spells an id: 32 hex digits."""
    return hashlib.md5(f"{job_id}/default".encode(), usedforsecurity=False).hexdigest()


@route("GET", "/jobs", "Every job's id and status.")
def get_jobs(view: ClusterView, req: RestRequest) -> Any:
    jobs = view.dispatcher.list_jobs(include_terminated=True)
    return {"jobs": [{"id": j.job_id, "status": j.status} for j in jobs]}


@route("GET", "/jobs/overview", "Every job with its times and task counts.")
def get_jobs_overview(view: ClusterView, req: RestRequest) -> Any:
    jobs = view.dispatcher.list_jobs(include_terminated=True)
    return {"jobs": [job_overview_entry(j) for j in jobs]}


def vertex_io_metrics(subtasks: list[TaskStatusInfo], metrics: TaskMetrics) -> dict[str, Any]:
    """Flink's IOMetricsInfo of a vertex: sums over its subtasks' task metrics, live from
    their TaskManagers, or for a subtask that has ended, the counts it ended with. Beside
    Flink's fields, ``stale``: some live values are the last that a TaskManager which no
    longer answers sent (Flink's clients ignore fields they do not know)."""
    names = {
        "read-bytes": "numBytesIn",
        "write-bytes": "numBytesOut",
        "read-records": "numRecordsIn",
        "write-records": "numRecordsOut",
        "accumulated-backpressured-time": "accumulatedBackPressuredTime",
        "accumulated-idle-time": "accumulatedIdleTime",
    }
    found: list[Mapping[str, float]] = []
    stale = False
    for t in subtasks:
        live = metrics.get(t.execution_attempt_id)
        if live is not None:
            found.append(live)
            stale = stale or t.execution_attempt_id in metrics.stale
        elif t.io_metrics is not None:
            io = t.io_metrics
            found.append(
                {
                    "numBytesIn": io.num_bytes_in,
                    "numBytesOut": io.num_bytes_out,
                    "numRecordsIn": io.num_records_in,
                    "numRecordsOut": io.num_records_out,
                    "accumulatedBackPressuredTime": io.accumulated_back_pressured_ms,
                    "accumulatedIdleTime": io.accumulated_idle_ms,
                }
            )
    body: dict[str, Any] = {}
    for field, name in names.items():
        body[field] = int(sum(m.get(name, 0) for m in found))
        body[f"{field}-complete"] = len(found) == len(subtasks)
    # A double in Flink's IOMetricsInfo, which its Java clients read as a primitive: 0
    # when no subtask reports it, never null.
    body["accumulated-busy-time"] = float(sum(m.get("accumulatedBusyTime", 0) for m in found))
    body["stale"] = stale
    return body


@route("GET", "/jobs/{jobid}", "A job with its vertices: state, parallelism, records and bytes.")
def get_job(view: ClusterView, req: RestRequest) -> Any:
    job_id = req.path_params["jobid"]
    details = view.dispatcher.job_details(job_id)
    plan = job_plan(view, job_id)
    metrics = view.task_metrics()
    vertices = []
    for node in plan["nodes"]:
        subtasks = [t for t in details.tasks if t.vertex_id == node["id"]]
        vertices.append(
            {
                "id": node["id"],
                "slotSharingGroupId": slot_sharing_group_id(job_id),
                "name": node["description"],
                "maxParallelism": node.get("maxParallelism", -1),
                "parallelism": node["parallelism"],
                "status": aggregate_state(subtasks),
                "start-time": details.start_time_ms,
                "end-time": -1,
                "duration": duration(details.start_time_ms, details.end_time_ms),
                "tasks": state_counts(subtasks),
                "metrics": vertex_io_metrics(subtasks, metrics),
            }
        )
    now = int(time.time() * 1000)
    status = JobStatus[details.status]
    return {
        "jid": details.job_id,
        # Flink 2 runs every job in an application; a job submitted on its own is its
        # own application, with the job's id.
        "application-id": details.job_id,
        "name": details.job_name,
        "isStoppable": False,
        "state": details.status,
        "job-type": plan.get("type", "STREAMING"),
        "schedulerType": "Default",
        "start-time": details.start_time_ms,
        "end-time": details.end_time_ms or -1,
        "duration": duration(details.start_time_ms, details.end_time_ms),
        "maxParallelism": max((v["maxParallelism"] for v in vertices), default=-1),
        "now": now,
        "timestamps": {
            "INITIALIZING": details.start_time_ms,
            **({status.name: details.end_time_ms} if details.end_time_ms else {}),
        },
        "vertices": vertices,
        "status-counts": state_counts(list(details.tasks)),
        "plan": plan,
        "pending-operators": 0,
    }


@route("GET", "/jobs/{jobid}/plan", "The job's dataflow plan.")
def get_job_plan(view: ClusterView, req: RestRequest) -> Any:
    return {"plan": job_plan(view, req.path_params["jobid"])}


@route("GET", "/jobs/{jobid}/config", "The job's execution configuration.")
def get_job_config(view: ClusterView, req: RestRequest) -> Any:
    job_id = req.path_params["jobid"]
    details = view.dispatcher.job_details(job_id)
    config = job_config(view, job_id)
    return {
        "jid": job_id,
        "name": details.job_name,
        "execution-config": {
            "execution-mode": config.get("execution.runtime-mode", "STREAMING"),
            "restart-strategy": config.get("restart-strategy.type", "default"),
            "job-parallelism": int(config.get("parallelism.default", "1") or 1),
            "object-reuse-mode": config.get("pipeline.object-reuse", "false") == "true",
            "user-config": {},
        },
    }


def exception_entries(details: JobDetailsInfo) -> list[dict[str, Any]]:
    """Flink 2's exception history entries (RootExceptionInfo) of a job, newest first: one
    per failover, dated when it began, and the job's own failure when no failover was it
    (its slots never came, say). A job that knows no failover (one archived by an older
    version) shows its failed tasks, dated at the job's end, or while it runs, its start."""
    when = details.end_time_ms or details.start_time_ms
    history = details.exception_history
    entries: list[dict[str, Any]] = [
        _entry(e.failure_cause, e.timestamp_ms, e.task_name or None, e.resource_id)
        for e in reversed(history)
    ]
    if not history:
        entries = [
            _entry(t.failure_cause, when, f"{t.task_name} ({t.subtask_index + 1})", t.resource_id)
            for t in details.tasks
            if t.failure_cause
        ]
    ended_otherwise = bool(history) and history[-1].restarted and details.status == "FAILED"
    if details.failure_cause and (not entries or ended_otherwise):
        entries.insert(0, _entry(details.failure_cause, when, None, ""))
    return entries


def _entry(stacktrace: str, timestamp: int, task: str | None, location: str) -> dict[str, Any]:
    return {
        "exceptionName": _exception_name(stacktrace),
        "stacktrace": stacktrace,
        "timestamp": timestamp,
        "failureLabels": {},
        "taskName": task,
        "endpoint": location or None,
        "location": location or None,
        "taskManagerId": location or None,
        "concurrentExceptions": [],
    }


@route("GET", "/jobs/{jobid}/exceptions", "The job's failures: the root cause and history.")
def get_job_exceptions(view: ClusterView, req: RestRequest) -> Any:
    """Flink 2's JobExceptionsInfoWithHistory (``exceptionHistory``), with Flink 1's
    ``root-exception``, ``timestamp`` and ``all-exceptions`` beside it, which older
    clients read: null only when the job has not failed."""
    details = view.dispatcher.job_details(req.path_params["jobid"])
    entries = exception_entries(details)
    limit = req.query.get("maxExceptions", "")
    shown = entries[: int(limit)] if limit.isdigit() else entries
    root = entries[0] if entries else None
    return {
        "root-exception": details.failure_cause or (root["stacktrace"] if root else None),
        "timestamp": root["timestamp"] if root else None,
        "all-exceptions": [
            {
                "exception": e["stacktrace"],
                "task": e["taskName"],
                "location": e["endpoint"],
                "timestamp": e["timestamp"],
                "taskManagerId": e["taskManagerId"],
            }
            for e in shown
        ],
        "truncated": len(shown) < len(entries),
        "exceptionHistory": {"entries": shown, "truncated": len(shown) < len(entries)},
    }


def _exception_name(trace: str) -> str:
    """The class of the last exception in a formatted traceback."""
    for line in reversed(trace.strip().splitlines()):
        head = line.split(":", 1)[0].strip()
        if head and " " not in head and not line.startswith(" "):
            return head
    return "Exception"


@route(
    "PATCH",
    "/jobs/{jobid}",
    "Cancel the job (?mode=cancel, Flink's default).",
    status=202,
)
def patch_job(view: ClusterView, req: RestRequest) -> Any:
    mode = req.query.get("mode", "cancel")
    if mode != "cancel":
        msg = f"unsupported mode {mode!r}: PATCH /jobs/{{jobid}} takes ?mode=cancel"
        raise RestHandlerError(msg, 400)
    view.dispatcher.cancel_job(req.path_params["jobid"])
    return RestResponse({}, status=202)


@route(
    "POST",
    "/jobs",
    "Submit a Python job file (multipart field 'jobfile'); answers with the job's URL.",
    status=202,
    request_body="multipart",
)
def post_job(view: ClusterView, req: RestRequest) -> Any:
    upload = req.body
    if not isinstance(upload, dict) or "content" not in upload:
        msg = "POST /jobs takes a multipart/form-data body with the Python job file as 'jobfile'"
        raise RestHandlerError(msg, 400)
    args = [a for a in (query_string(req, "programArg") or "").split(",") if a]
    filename = without_nul(str(upload.get("filename") or "job.py"), "the file name")
    with tempfile.TemporaryDirectory(prefix="weir-rest-submit-") as work:
        name = Path(filename).name
        if not name.endswith(".py"):
            name += ".py"
        path = Path(work) / name
        path.write_bytes(upload["content"])
        job_id = run_job_file(view.dispatcher.address, path, JobFileRun(args))
    return RestResponse({"jobUrl": f"/jobs/{job_id}"}, status=202)
