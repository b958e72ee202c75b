"""TaskManager REST handlers: ``/taskmanagers``, one TaskManager's details, metrics, log
files, thread dump and profiler, in the shapes of Flink 2's TaskManagerInfo and
TaskManagerDetailsInfo.

A TaskManager here is a Python process, not a JVM: where Flink shows the JVM's heap, we
show the process's resident memory; its threads and CPU are the process's; what has no
meaning for it (non-heap, direct and mapped memory, managed memory, the memory
configuration of a JVM's pools, garbage collectors) is 0, never missing, as Flink's
clients read every field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from weir.core import config as cfg
from weir.core.job_info import JobDetailsInfo
from weir.rest.cluster_view import ClusterView, TaskManagerMetricsView
from weir.rest.errors import RestHandlerError
from weir.rest.log_files import list_log_files, read_log_file
from weir.rest.metric_queries import metric_values
from weir.rest.routes import RestRequest, RestResponse, route

_TERMINAL_TASK_STATES = ("FINISHED", "CANCELED", "FAILED")
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_MEMORY_CONFIGURATION_KEYS = (
    "frameworkHeap",
    "taskHeap",
    "frameworkOffHeap",
    "taskOffHeap",
    "networkMemory",
    "managedMemory",
    "jvmMetaspace",
    "jvmOverhead",
    "totalFlinkMemory",
    "totalProcessMemory",
)
_NOT_A_JVM = (
    "Status.JVM.Memory.NonHeap.Used",
    "Status.JVM.Memory.NonHeap.Committed",
    "Status.JVM.Memory.NonHeap.Max",
    "Status.JVM.Memory.Metaspace.Used",
    "Status.JVM.Memory.Metaspace.Committed",
    "Status.JVM.Memory.Metaspace.Max",
    "Status.JVM.Memory.Direct.Count",
    "Status.JVM.Memory.Direct.MemoryUsed",
    "Status.JVM.Memory.Direct.TotalCapacity",
    "Status.JVM.Memory.Mapped.Count",
    "Status.JVM.Memory.Mapped.MemoryUsed",
    "Status.JVM.Memory.Mapped.TotalCapacity",
    "Status.Flink.Memory.Managed.Used",
    "Status.Flink.Memory.Managed.Total",
)


def _own_metrics(tm: TaskManagerMetricsView) -> dict[str, float]:
    return {s.name: s.value for s in tm.samples if s.scope == ("taskmanager",)}


def _host(tm: TaskManagerMetricsView) -> str:
    return tm.info.rpc_address.rsplit(":", 1)[0]


def _host_memory(tm: TaskManagerMetricsView, view: ClusterView) -> tuple[int, int]:
    """(physical, available) bytes of the TaskManager's host when it is the master's
    (-1, -1: a host the master cannot see, as Flink reports what it cannot measure)."""
    master_host = view.dispatcher.address.rsplit(":", 1)[0]
    if _host(tm) not in (*_LOCAL_HOSTS, master_host):
        return -1, -1
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo if ":" in line)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, ValueError, KeyError):
        return -1, -1
    return physical, available


def flink_status_metrics(tm: TaskManagerMetricsView, view: ClusterView) -> dict[str, float]:
    """The TaskManager's ``Status.*`` metrics under Flink's names (what Flink's dashboard
    asks for), from the Python process's own."""
    own = _own_metrics(tm)
    resident = own.get("Status.Python.Memory.RSS", 0.0)
    physical, _ = _host_memory(tm, view)
    segments = own.get("Status.Shuffle.Netty.UsedMemorySegments", 0.0)
    segment_size = cfg.get(view.config, cfg.SEGMENT_SIZE)
    values = dict.fromkeys(_NOT_A_JVM, 0.0)
    values.update(
        {
            "Status.JVM.Memory.Heap.Used": resident,
            "Status.JVM.Memory.Heap.Committed": resident,
            "Status.JVM.Memory.Heap.Max": float(physical),
            "Status.JVM.Threads.Count": own.get("Status.Python.Threads.Count", 0.0),
            "Status.JVM.CPU.Load": own.get("Status.Python.CPU.Load", 0.0),
            # Flink's JVM CPU time is in nanoseconds; ours is counted in seconds.
            "Status.JVM.CPU.Time": own.get("Status.Python.CPU.Time", 0.0) * 1e9,
            "Status.Shuffle.Netty.UsedMemorySegments": segments,
            "Status.Shuffle.Netty.UsedMemory": segments * segment_size,
            "Status.Shuffle.Netty.AvailableMemorySegments": 0.0,
            "Status.Shuffle.Netty.AvailableMemory": 0.0,
            "Status.Shuffle.Netty.TotalMemorySegments": segments,
            "Status.Shuffle.Netty.TotalMemory": segments * segment_size,
        }
    )
    values.update(own)
    return values


def _resource_profile(cpu_cores: float) -> dict[str, Any]:
    """Flink's ResourceProfileInfo: slots are counted, not sized, here."""
    return {
        "cpuCores": cpu_cores,
        "taskHeapMemory": 0,
        "taskOffHeapMemory": 0,
        "managedMemory": 0,
        "networkMemory": 0,
        "extendedResources": {},
    }


def _running_tasks(jobs: list[JobDetailsInfo], resource_id: str) -> dict[str, list[str]]:
    """The vertex ids of each job's tasks that run on the TaskManager, by job id."""
    found: dict[str, list[str]] = {}
    for job in jobs:
        for task in job.tasks:
            if task.resource_id == resource_id and task.state not in _TERMINAL_TASK_STATES:
                found.setdefault(job.job_id, []).append(task.vertex_id)
    return found


def _task_manager_info(
    tm: TaskManagerMetricsView, view: ClusterView, jobs: list[JobDetailsInfo]
) -> dict[str, Any]:
    info = tm.info
    physical, available = _host_memory(tm, view)
    tasks = _running_tasks(jobs, info.resource_id)
    return {
        "id": info.resource_id,
        "path": info.rpc_address,
        "dataPort": info.data_port,
        "jmxPort": -1,
        # Flink's name, but the time of the last heartbeat (ms since the epoch).
        "timeSinceLastHeartbeat": info.last_heartbeat_ms,
        "slotsNumber": info.num_slots,
        "freeSlots": info.free_slots,
        "assignedTasks": sum(len(v) for v in tasks.values()),
        "totalResource": _resource_profile(float(info.num_slots)),
        "freeResource": _resource_profile(float(info.free_slots)),
        "hardware": {
            "cpuCores": (os.cpu_count() or 1) if physical >= 0 else -1,
            "physicalMemory": physical,
            "freeMemory": available,
            "managedMemory": 0,
        },
        "memoryConfiguration": dict.fromkeys(_MEMORY_CONFIGURATION_KEYS, 0),
        "blocked": False,
        # Beyond Flink's fields: where the TaskManager runs.
        "host": _host(tm),
        "dataHost": info.data_host,
        "sparkExecutorId": info.spark_executor_id,
        "pid": info.pid,
        "prometheusAddress": tm.prometheus_address,
    }


@route("GET", "/taskmanagers", "The registered TaskManagers.")
def get_task_managers(view: ClusterView, req: RestRequest) -> Any:
    views = view.task_managers()
    jobs = view.dispatcher.list_jobs(include_terminated=False)
    return {"taskmanagers": [_task_manager_info(v, view, jobs) for v in views.values()]}


def find_task_manager(view: ClusterView, req: RestRequest) -> TaskManagerMetricsView:
    tm_id = req.path_params["taskmanagerid"]
    found = view.task_managers().get(tm_id)
    if found is None:
        msg = f"TaskManager {tm_id} not found; GET /taskmanagers lists the registered ones"
        raise RestHandlerError(msg, 404)
    return found


def _metrics_info(values: Mapping[str, float]) -> dict[str, Any]:
    """Flink's TaskManagerMetricsInfo from the Flink-named metrics."""

    def get(name: str) -> int:
        return int(values.get(name, 0))

    return {
        "heapUsed": get("Status.JVM.Memory.Heap.Used"),
        "heapCommitted": get("Status.JVM.Memory.Heap.Committed"),
        "heapMax": get("Status.JVM.Memory.Heap.Max"),
        "nonHeapUsed": 0,
        "nonHeapCommitted": 0,
        "nonHeapMax": 0,
        "directCount": 0,
        "directUsed": 0,
        "directMax": 0,
        "mappedCount": 0,
        "mappedUsed": 0,
        "mappedMax": 0,
        "nettyShuffleMemorySegmentsAvailable": 0,
        "nettyShuffleMemorySegmentsUsed": get("Status.Shuffle.Netty.UsedMemorySegments"),
        "nettyShuffleMemorySegmentsTotal": get("Status.Shuffle.Netty.TotalMemorySegments"),
        "nettyShuffleMemoryAvailable": 0,
        "nettyShuffleMemoryUsed": get("Status.Shuffle.Netty.UsedMemory"),
        "nettyShuffleMemoryTotal": get("Status.Shuffle.Netty.TotalMemory"),
        "garbageCollectors": [],
        # Beyond Flink's fields: the Python process's own.
        "cpuLoad": values.get("Status.Python.CPU.Load", 0.0),
        "cpuTime": values.get("Status.Python.CPU.Time", 0.0),
        "residentMemory": values.get("Status.Python.Memory.RSS", 0.0),
        "threads": values.get("Status.Python.Threads.Count", 0.0),
        "usedNetworkBuffers": values.get("Status.Shuffle.Netty.UsedMemorySegments", 0.0),
    }


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}",
    "One TaskManager: its slots, resources, metrics, host and Spark executor.",
)
def get_task_manager(view: ClusterView, req: RestRequest) -> Any:
    tm = find_task_manager(view, req)
    jobs = view.dispatcher.list_jobs(include_terminated=False)
    body = _task_manager_info(tm, view, jobs)
    body["metrics"] = _metrics_info(flink_status_metrics(tm, view))
    # Slot sharing: a job's tasks on a TaskManager share as many slots as the most
    # subtasks of one of its vertices there.
    body["allocatedSlots"] = [
        {"jobId": job_id, "resource": _resource_profile(1.0), "assignedTasks": len(set(vertices))}
        for job_id, vertices in sorted(_running_tasks(jobs, tm.info.resource_id).items())
        for _ in range(max(vertices.count(v) for v in set(vertices)))
    ]
    return body


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/metrics",
    "The TaskManager's own metrics (and Flink's Status.JVM names for them); ?get=a,b "
    "returns their values.",
    response="Metrics",
)
def get_task_manager_metrics(view: ClusterView, req: RestRequest) -> Any:
    tm = find_task_manager(view, req)
    return metric_values(flink_status_metrics(tm, view), req.query.get("get", ""))


def _log_dir(view: ClusterView, tm: TaskManagerMetricsView) -> str:
    log_dir = cfg.get(view.config, cfg.CLUSTER_LOG_DIR)
    if not log_dir:
        msg = (
            f"TaskManager {tm.info.resource_id} keeps no log files: set env.log.dir in the "
            "cluster's configuration to have TaskManagers write them there"
        )
        raise RestHandlerError(msg, 404)
    return os.path.join(log_dir, f"taskmanager-{tm.info.resource_id}")


def _log_file(view: ClusterView, req: RestRequest, file_name: str) -> RestResponse:
    tm = find_task_manager(view, req)
    directory = _log_dir(view, tm)
    where = f"TaskManager {tm.info.resource_id} runs on {_host(tm)}, where its {file_name} is"
    return read_log_file(directory, file_name, where)


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


@route("GET", "/taskmanagers/{taskmanagerid}/logs", "The TaskManager's log files.")
def get_task_manager_logs(view: ClusterView, req: RestRequest) -> Any:
    tm = find_task_manager(view, req)
    log_dir = cfg.get(view.config, cfg.CLUSTER_LOG_DIR)
    if not log_dir:
        return {"logs": []}
    return {"logs": list_log_files(_log_dir(view, tm))}


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/logs/{filename}",
    "One of the TaskManager's log files.",
    response="text",
)
def get_task_manager_log_file(view: ClusterView, req: RestRequest) -> Any:
    return _log_file(view, req, req.path_params["filename"])


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/thread-dump",
    "What the TaskManager's threads are doing (not collected from Python TaskManagers).",
)
def get_task_manager_thread_dump(view: ClusterView, req: RestRequest) -> Any:
    tm = find_task_manager(view, req)
    text = (
        f"TaskManager {tm.info.resource_id} is a Python process (pid {tm.info.pid} on "
        f"{_host(tm)}); its thread dump is not collected over REST. On that host, "
        f"`py-spy dump --pid {tm.info.pid}` prints its threads' stacks.\n"
    )
    return {"threadInfos": [{"threadName": "not collected", "stringifiedThreadInfo": text}]}


@route(
    "GET",
    "/taskmanagers/{taskmanagerid}/profiler",
    "The TaskManager's profiling results: none, its profiler is the JVM's.",
)
def get_task_manager_profiler(view: ClusterView, req: RestRequest) -> Any:
    find_task_manager(view, req)
    return {"profilingList": []}


@route(
    "POST",
    "/taskmanagers/{taskmanagerid}/profiler",
    "Profile the TaskManager: refused, Flink's profiler is for JVMs.",
    request_body="json",
)
def post_task_manager_profiler(view: ClusterView, req: RestRequest) -> Any:
    tm = find_task_manager(view, req)
    msg = (
        f"TaskManager {tm.info.resource_id} is a Python process: Flink's profiler (async-"
        f"profiler in a JVM) cannot profile it; on {_host(tm)}, `py-spy record --pid "
        f"{tm.info.pid}` does"
    )
    raise RestHandlerError(msg, 400)
