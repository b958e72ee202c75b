"""JobManager REST handlers: the master's configuration, environment, log files,
metrics, thread dump and profiler (Flink's ``/jobmanager/...``).

The master is a Python process (its Spark driver's JVM is a child of it): its
``Status.JVM.*`` metrics are the Python process's, as the TaskManagers' are (heap = its
resident memory, threads, CPU, the collections of Python's garbage collector), and what
has no meaning for it is 0. Its log is the file ``web.log.path`` names (start-cluster.sh
sets it); a master without one answers as Flink's does, ``File not found.``, which the
dashboard shows as an empty log.
"""

from __future__ import annotations

import gc
import os
import platform
import sys
import threading
import traceback
from typing import Any

from weir.core import config as cfg
from weir.core.metrics import RateView
from weir.core.sensitive_keys import HIDDEN_VALUE, hide_sensitive_arguments, is_sensitive
from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.log_files import list_log_files, read_log_file
from weir.rest.metric_queries import metric_values
from weir.rest.routes import RestRequest, route

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# CPU load over the last few seconds, as Flink's Status.JVM.CPU.Load is a recent value.
_CPU_SPAN_S = 5.0
# What Flink answers when the JobManager has no log file; its dashboard shows no error.
_NO_LOG_FILE = "File not found."


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


_cpu_lock = threading.Lock()
_cpu_load = RateView(_cpu_seconds, _CPU_SPAN_S)


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except OSError:
        return 0


def master_metrics(view: ClusterView) -> dict[str, float]:
    """The master's metrics under Flink's names: the cluster's counts (scope
    ``jobmanager``) and the Python process's ``Status`` gauges."""
    overview = view.dispatcher.overview()
    with _cpu_lock:
        load = _cpu_load.get_rate()
    resident = float(_resident_bytes())
    values: dict[str, float] = {
        "numRegisteredTaskManagers": overview.task_managers,
        "taskSlotsTotal": overview.slots_total,
        "taskSlotsAvailable": overview.slots_available,
        "numRunningJobs": overview.jobs_running,
        "Status.JVM.Memory.Heap.Used": resident,
        "Status.JVM.Memory.Heap.Committed": resident,
        "Status.JVM.Memory.Heap.Max": float(
            os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        ),
        "Status.JVM.Threads.Count": threading.active_count(),
        "Status.JVM.CPU.Load": load,
        "Status.JVM.CPU.Time": _cpu_seconds() * 1e9,  # Flink counts it in nanoseconds
    }
    for pool in ("NonHeap", "Metaspace"):
        for part in ("Used", "Committed", "Max"):
            values[f"Status.JVM.Memory.{pool}.{part}"] = 0.0
    for pool in ("Direct", "Mapped"):
        for part in ("Count", "MemoryUsed", "TotalCapacity"):
            values[f"Status.JVM.Memory.{pool}.{part}"] = 0.0
    for generation, stats in enumerate(gc.get_stats()):
        name = f"Python-generation-{generation}"
        values[f"Status.JVM.GarbageCollector.{name}.Count"] = float(stats["collections"])
        values[f"Status.JVM.GarbageCollector.{name}.Time"] = 0.0  # not measured
    return values


@route(
    "GET",
    "/jobmanager/config",
    "The cluster's configuration as key/value entries (secrets hidden).",
    response="array",
)
def get_job_manager_config(view: ClusterView, req: RestRequest) -> Any:
    return [
        {
            "key": key,
            "value": HIDDEN_VALUE if is_sensitive(key) else value,
        }
        for key, value in sorted(view.config.items())
    ]


@route("GET", "/jobmanager/environment", "The master process's runtime and module path.")
def get_job_manager_environment(view: ClusterView, req: RestRequest) -> Any:
    return {
        "jvm": {
            "version": f"{platform.python_implementation()} {platform.python_version()}",
            "arch": platform.machine(),
            "options": hide_sensitive_arguments(sys.argv),
        },
        "classpath": [p for p in sys.path if p],
    }


@route(
    "GET",
    "/jobmanager/metrics",
    "The master's metrics; ?get=a,b returns their values.",
    response="Metrics",
)
def get_job_manager_metrics(view: ClusterView, req: RestRequest) -> Any:
    return metric_values(master_metrics(view), req.query.get("get", ""))


def _log_path(view: ClusterView) -> str:
    path = cfg.get(view.config, cfg.WEB_LOG_PATH)
    if not path:
        raise RestHandlerError(_NO_LOG_FILE, 404)
    return path


def _where(path: str) -> str:
    return f"the master writes its log to {path} when start-cluster.sh starts it"


@route("GET", "/jobmanager/log", "The master's log.", response="text")
def get_job_manager_log(view: ClusterView, req: RestRequest) -> Any:
    path = _log_path(view)
    return read_log_file(os.path.dirname(path), os.path.basename(path), _where(path))


@route(
    "GET",
    "/jobmanager/stdout",
    "What the master printed (the same file as its log: the scripts send both there).",
    response="text",
)
def get_job_manager_stdout(view: ClusterView, req: RestRequest) -> Any:
    path = _log_path(view)
    out = os.path.splitext(path)[0] + ".out"
    if os.path.isfile(out):
        path = out
    return read_log_file(os.path.dirname(path), os.path.basename(path), _where(path))


@route("GET", "/jobmanager/logs", "The files in the master's log directory.")
def get_job_manager_logs(view: ClusterView, req: RestRequest) -> Any:
    path = cfg.get(view.config, cfg.WEB_LOG_PATH)
    return {"logs": list_log_files(os.path.dirname(path)) if path else []}


@route(
    "GET",
    "/jobmanager/logs/{filename}",
    "One file of the master's log directory.",
    response="text",
)
def get_job_manager_log_file(view: ClusterView, req: RestRequest) -> Any:
    path = _log_path(view)
    return read_log_file(os.path.dirname(path), req.path_params["filename"], _where(path))


@route("GET", "/jobmanager/thread-dump", "What each thread of the master is doing.")
def get_job_manager_thread_dump(view: ClusterView, req: RestRequest) -> Any:
    names = {t.ident: t for t in threading.enumerate()}
    infos = []
    for ident, frame in sorted(sys._current_frames().items()):
        thread = names.get(ident)
        name = thread.name if thread is not None else f"thread-{ident}"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        stack = "".join(traceback.format_stack(frame))
        infos.append(
            {
                "threadName": name,
                "stringifiedThreadInfo": f'"{name}"{daemon} Id={ident}\n{stack}\n',
            }
        )
    return {"threadInfos": infos}


@route(
    "GET",
    "/jobmanager/profiler",
    "The master's profiling results: none, Flink's profiler is for JVMs.",
)
def get_job_manager_profiler(view: ClusterView, req: RestRequest) -> Any:
    return {"profilingList": []}


@route(
    "POST",
    "/jobmanager/profiler",
    "Profile the master: refused, Flink's profiler is for JVMs.",
    request_body="json",
)
def post_job_manager_profiler(view: ClusterView, req: RestRequest) -> Any:
    msg = (
        f"the master is a Python process (pid {os.getpid()}): Flink's profiler (async-"
        f"profiler in a JVM) cannot profile it; `py-spy record --pid {os.getpid()}` does"
    )
    raise RestHandlerError(msg, 400)
