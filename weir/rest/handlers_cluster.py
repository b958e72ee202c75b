"""Cluster-wide REST handlers: ``/config``, ``/overview``, ``/taskmanagers`` and a
TaskManager's details, metrics and log files (Flink's shapes and field names)."""

from __future__ import annotations

import os
import time
from importlib import metadata
from typing import Any

from weir.core import config as cfg
from weir.core.metrics import MetricSample
from weir.rest.cluster_view import ClusterView, TaskManagerMetricsView
from weir.rest.errors import RestHandlerError
from weir.rest.routes import RestRequest, RestResponse, route

# The dashboard polls this often (Flink's web.refresh-interval default).
REFRESH_INTERVAL_MS = 3000
# A log file is served from its end: at most this much of it (the page shows the tail).
_LOG_TAIL_BYTES = 1 << 20


def weir_version() -> str:
    try:
        return metadata.version("weir")
    except metadata.PackageNotFoundError:
        return "unknown"


@route("GET", "/config", "The dashboard's configuration: refresh interval, version, features.")
def get_config(view: ClusterView, req: RestRequest) -> Any:
    offset = -time.timezone * 1000
    return {
        "refresh-interval": REFRESH_INTERVAL_MS,
        "timezone-name": time.tzname[0],
        "timezone-offset": offset,
        "flink-version": weir_version(),
        "flink-revision": "weir",
        "features": {
            "web-submit": True,
            "web-cancel": True,
            "web-rescale": False,
            "web-history": False,
        },
    }


@route("GET", "/overview", "TaskManagers, slots and jobs by state.")
def get_overview(view: ClusterView, req: RestRequest) -> Any:
    o = view.dispatcher.overview()
    return {
        "taskmanagers": o.task_managers,
        "slots-total": o.slots_total,
        "slots-available": o.slots_available,
        "jobs-running": o.jobs_running,
        "jobs-finished": o.jobs_finished,
        "jobs-cancelled": o.jobs_cancelled,
        "jobs-failed": o.jobs_failed,
        "flink-version": weir_version(),
        "flink-commit": "weir",
    }


def _tm_metric(view: TaskManagerMetricsView, name: str) -> float:
    for sample in view.samples:
        if sample.scope == ("taskmanager",) and sample.name == name:
            return sample.value
    return 0.0


def _task_manager_info(view: TaskManagerMetricsView) -> dict[str, Any]:
    info = view.info
    now_ms = int(time.time() * 1000)
    host = info.rpc_address.rsplit(":", 1)[0]
    return {
        "id": info.resource_id,
        "path": info.rpc_address,
        "dataPort": info.data_port,
        "jmxPort": -1,
        "timeSinceLastHeartbeat": max(0, now_ms - info.last_heartbeat_ms)
        if info.last_heartbeat_ms
        else 0,
        "slotsNumber": info.num_slots,
        "freeSlots": info.free_slots,
        "totalResource": {"cpuCores": float(info.num_slots)},
        "freeResource": {"cpuCores": float(info.free_slots)},
        "hardware": {
            "cpuCores": os.cpu_count() or 1,
            "physicalMemory": -1,
            "freeMemory": -1,
            "managedMemory": 0,
        },
        # Beyond Flink's fields: where the TaskManager runs.
        "host": host,
        "dataHost": info.data_host,
        "sparkExecutorId": info.spark_executor_id,
        "pid": info.pid,
        "prometheusAddress": view.prometheus_address,
    }


@route("GET", "/taskmanagers", "The registered TaskManagers.")
def get_task_managers(view: ClusterView, req: RestRequest) -> Any:
    views = view.task_managers()
    return {"taskmanagers": [_task_manager_info(v) for v in views.values()]}


def _find_task_manager(view: ClusterView, req: RestRequest) -> TaskManagerMetricsView:
    tm_id = req.path_params["taskmanagerid"]
    found = view.task_managers().get(tm_id)
    if found is None:
        msg = f"TaskManager {tm_id} not found; GET /taskmanagers lists the registered ones"
        raise RestHandlerError(msg, 404)
    return found


@route(
    "GET", "/taskmanagers/{taskmanagerid}", "One TaskManager: its host, Spark executor, metrics."
)
def get_task_manager(view: ClusterView, req: RestRequest) -> Any:
    tm = _find_task_manager(view, req)
    body = _task_manager_info(tm)
    body["metrics"] = {
        "cpuLoad": _tm_metric(tm, "Status.Python.CPU.Load"),
        "cpuTime": _tm_metric(tm, "Status.Python.CPU.Time"),
        "residentMemory": _tm_metric(tm, "Status.Python.Memory.RSS"),
        "threads": _tm_metric(tm, "Status.Python.Threads.Count"),
        "usedNetworkBuffers": _tm_metric(tm, "Status.Shuffle.Netty.UsedMemorySegments"),
    }
    body["allocatedSlots"] = []
    return body


def _metric_name(sample: MetricSample) -> str:
    """A metric's name as Flink's metrics endpoints list it: the scope below the
    component, then the name (``0.numRecordsIn`` style ids are for vertices)."""
    return sample.name


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/metrics",
    "The TaskManager's own metrics; ?get=a,b returns their values.",
    response="array",
)
def get_task_manager_metrics(view: ClusterView, req: RestRequest) -> Any:
    tm = _find_task_manager(view, req)
    own = [s for s in tm.samples if s.scope == ("taskmanager",)]
    wanted = [n for n in req.query.get("get", "").split(",") if n]
    if not wanted:
        return [{"id": _metric_name(s)} for s in own]
    return [{"id": s.name, "value": str(s.value)} for s in own if s.name in wanted]


def _log_file(view: ClusterView, req: RestRequest, file_name: str) -> RestResponse:
    tm = _find_task_manager(view, req)
    log_dir = cfg.get(view.config, cfg.CLUSTER_LOG_DIR)
    if not log_dir:
        msg = (
            f"TaskManager {tm.info.resource_id} keeps no {file_name}: set env.log.dir in the "
            "cluster's configuration to have TaskManagers write their log files there"
        )
        raise RestHandlerError(msg, 404)
    path = os.path.join(log_dir, f"taskmanager-{tm.info.resource_id}", file_name)
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - _LOG_TAIL_BYTES))
            data = file.read()
    except FileNotFoundError:
        host = tm.info.rpc_address.rsplit(":", 1)[0]
        msg = (
            f"{path} does not exist on the master's host; TaskManager "
            f"{tm.info.resource_id} runs on {host}, where its {file_name} is"
        )
        raise RestHandlerError(msg, 404) from None
    return RestResponse(data.decode("utf-8", "replace"), content_type="text/plain")


@route("GET", "/taskmanagers/{taskmanagerid}/log", "The TaskManager's log.", response="text")
def get_task_manager_log(view: ClusterView, req: RestRequest) -> Any:
    return _log_file(view, req, "taskmanager.log")


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/stdout",
    "What the TaskManager's jobs printed.",
    response="text",
)
def get_task_manager_stdout(view: ClusterView, req: RestRequest) -> Any:
    return _log_file(view, req, "taskmanager.out")
