"""Cluster-wide REST handlers: ``/config`` and ``/overview`` (Flink's shapes and field
names)."""

from __future__ import annotations

import time
from importlib import metadata
from typing import Any

from weir.rest.cluster_view import ClusterView
from weir.rest.routes import RestRequest, route

# The dashboard polls this often (Flink's web.refresh-interval default).
REFRESH_INTERVAL_MS = 3000


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
        # Weir blocks no TaskManager (Flink's speculative execution does).
        "taskmanagers-blocked": 0,
        "slots-free-and-blocked": 0,
        "jobs-running": o.jobs_running,
        "jobs-finished": o.jobs_finished,
        "jobs-cancelled": o.jobs_cancelled,
        "jobs-failed": o.jobs_failed,
        "flink-version": weir_version(),
        "flink-commit": "weir",
    }
