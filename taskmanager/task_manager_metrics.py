"""The metrics of one TaskManager: its registry, its own gauges (Flink's
``Status.*``), a group per job and task, and the Prometheus endpoint when
``metrics.reporter.prom.factory.class`` names it.

Flink's TaskManager reports JVM memory and CPU; ours is a Python process, so the same
``Status`` scope carries the process's resident memory, CPU time and load, threads, and
the network buffers its tasks hold.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable, Mapping

from weir.core.deployment import TaskDeploymentDescriptor
from weir.core.metrics import MetricRegistry, MetricSample, RateView, ScopedMetricGroup
from weir.core.metrics.metric_types import GaugeImpl
from weir.core.metrics.prometheus import PrometheusReporter, start_prometheus_reporter
from weir.core.security import SecurityConfig

__all__ = ["TaskManagerMetrics"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# CPU load over the last few seconds, as Flink's Status.JVM.CPU.Load is a recent value.
_CPU_SPAN_S = 5.0


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except OSError:  # not Linux: the peak is the best the standard library offers
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class TaskManagerMetrics:
    """Owned by the TaskExecutor: ``start`` with it, ``close`` with it."""

    def __init__(
        self,
        resource_id: str,
        host: str,
        config: Mapping[str, str],
        buffers_in_use: Callable[[], int] = lambda: 0,
        security: SecurityConfig | None = None,
    ) -> None:
        self.registry = MetricRegistry()
        self._host = host
        self._config = dict(config)
        self._security = security or SecurityConfig.from_config(self._config)
        self._resource_id = resource_id
        self._lock = threading.Lock()
        self._jobs: dict[str, tuple[ScopedMetricGroup, int]] = {}
        self.group = ScopedMetricGroup(
            self.registry, ("taskmanager",), {"host": host, "tm_id": resource_id}
        )
        started = time.monotonic()
        cpu_load = RateView(_cpu_seconds, _CPU_SPAN_S)
        for name, read in {
            "Status.Python.Memory.RSS": _resident_bytes,
            "Status.Python.CPU.Time": _cpu_seconds,
            "Status.Python.CPU.Load": cpu_load.get_rate,
            "Status.Python.Threads.Count": threading.active_count,
            "Status.Python.Uptime": lambda: (time.monotonic() - started) * 1000,
            "Status.Shuffle.Netty.UsedMemorySegments": buffers_in_use,
        }.items():
            self.group.register_metric(name, GaugeImpl(read))
        self._reporter: PrometheusReporter | None = None

    @property
    def prometheus_address(self) -> str:
        return self._reporter.address if self._reporter is not None else ""

    def start(self, host: str = "") -> None:
        """Start the Prometheus endpoint if it is configured, on ``host`` (the TaskManager's
        address once it is known; taskmanager.host may be empty until then) unless
        ``metrics.reporter.prom.host`` or the cluster's security say otherwise; the
        address is also the ``host`` every metric of this TaskManager carries from now on
        (before any task runs)."""
        if host:
            self._host = host
            self.group.set_variable("host", host)
        self._reporter = start_prometheus_reporter(
            self._config, self._security, host or self._host, self.registry.snapshot
        )

    def task_group(self, tdd: TaskDeploymentDescriptor) -> ScopedMetricGroup:
        """A new task's group (scope taskmanager.job.task), under its job's group."""
        job_id = str(tdd.job_id)
        with self._lock:
            job, tasks = self._jobs.get(job_id, (None, 0))
            if job is None:
                job = self.group.child("job", {"job_id": job_id, "job_name": tdd.job_name})
            self._jobs[job_id] = (job, tasks + 1)
        return job.child(
            "task",
            {
                "task_id": str(tdd.vertex.vertex_id),
                "task_name": tdd.vertex.name,
                "task_attempt_id": str(tdd.execution_attempt_id),
                "task_attempt_num": str(tdd.attempt_number),
                "subtask_index": str(tdd.subtask_index),
            },
        )

    def task_ended(self, tdd: TaskDeploymentDescriptor, group: ScopedMetricGroup) -> None:
        """Drop the task's metrics (and its job's group after its last task)."""
        group.close()
        job_id = str(tdd.job_id)
        with self._lock:
            job, tasks = self._jobs.get(job_id, (None, 0))
            if job is None:
                return
            if tasks <= 1:
                del self._jobs[job_id]
                job.close()
            else:
                self._jobs[job_id] = (job, tasks - 1)

    def snapshot(self) -> list[MetricSample]:
        return self.registry.snapshot()

    def close(self) -> None:
        if self._reporter is not None:
            self._reporter.close()
            self._reporter = None
