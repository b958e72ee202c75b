"""What one read of the metrics costs, in CPU time of each process: a MiniCluster with the
Prometheus reporter and the REST API (two TaskManagers, local[2]) runs a slow keyed job,
so that its TaskManagers are nearly idle and every CPU millisecond they spend beyond
their idle rate is the read's. Each kind of read is repeated, and the CPU time of the
master process (which here also runs the client that reads) and of each TaskManager
process is divided by the number of reads:

* a scrape of both TaskManagers' Prometheus endpoints,
* ``GET /jobs/<id>`` (the job's vertices with their metrics),
* one refresh of the dashboard's job page: ``/jobs/<id>``, its checkpoints and
  exceptions, and each vertex's back pressure and watermarks,
* ``GET /jobs/overview`` and ``GET /taskmanagers`` (the overview page).

    .venv/bin/python benchmarks/metrics_read_cost.py [--reads 50]

Divide by the interval between reads for the share of a core: Prometheus scrapes every
15 s by default, a dashboard refreshes every few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from collections.abc import Callable

from weir.client.mini_cluster import MiniCluster
from weir.common import Types, WatermarkStrategy
from weir.core.executor import register_executor
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

CONFIG = {
    "resourcemanager.taskmanager.max": "2",
    "metrics.reporter.prom.factory.class": (
        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
    ),
    "metrics.reporter.prom.port": "0",
    "rest.port": "0",
}
_TICKS = os.sysconf("SC_CLK_TCK")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _slowly(value: int) -> int:
    time.sleep(0.01)  # the job's pace: its TaskManagers stay nearly idle
    return value


def _running(rest: str) -> tuple[str, list[dict]]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = json.loads(_get(f"{rest}/jobs/overview"))["jobs"]
        tms = json.loads(_get(f"{rest}/taskmanagers"))["taskmanagers"]
        if jobs and jobs[0]["state"] == "RUNNING" and len(tms) == 2:
            return jobs[0]["jid"], tms
        time.sleep(0.2)  # polling interval; the condition decides
    msg = "the job did not reach RUNNING on two TaskManagers within 120 s"
    raise RuntimeError(msg)


def _job_page(rest: str, job_id: str) -> None:
    """One refresh of the dashboard's job page (weir/rest/web/dashboard.js, jobPage)."""
    job = json.loads(_get(f"{rest}/jobs/{job_id}"))
    _get(f"{rest}/jobs/{job_id}/checkpoints")
    _get(f"{rest}/jobs/{job_id}/exceptions")
    for vertex in job["vertices"]:
        _get(f"{rest}/jobs/{job_id}/vertices/{vertex['id']}/backpressure")
        _get(f"{rest}/jobs/{job_id}/vertices/{vertex['id']}/watermarks")


def _measure(pids: list[int], reads: int, read: Callable[[], object]) -> list[float]:
    """CPU milliseconds per read of each process in ``pids``."""
    before = [_cpu_seconds(p) for p in pids]
    for _ in range(reads):
        read()
    after = [_cpu_seconds(p) for p in pids]
    return [(a - b) / reads * 1000 for a, b in zip(after, before, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    with MiniCluster(CONFIG) as cluster:
        register_executor(cluster.executor())
        try:
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_parallelism(2)
            (
                env.from_source(
                    NumberSequenceSource(0, 10**9), WatermarkStrategy.no_watermarks(), "numbers"
                )
                .map(_slowly, output_type=Types.LONG())
                .key_by(lambda n: n % 100)
                .reduce(lambda a, b: a + b)
                .filter(lambda _: False)
                .print()
            )
            client = env.execute_async("metrics read cost")
            rest = cluster.rest_url
            job_id, tms = _running(rest)
            time.sleep(2)  # let the job's start settle before the idle rate is taken
            pids = [os.getpid()] + [
                json.loads(_get(f"{rest}/taskmanagers/{tm['id']}"))["pid"] for tm in tms
            ]
            scrapes = [f"http://{tm['prometheusAddress']}/metrics" for tm in tms]
            exposition = _get(scrapes[0])
            lines = exposition.count(b"\n")
            print(f"one TaskManager's exposition: {len(exposition):,} bytes, {lines:,} lines")
            idle = _measure(pids, 20, lambda: time.sleep(0.1))
            idle_per_s = [ms * 10 for ms in idle]
            print("CPU ms per read     master (and client)   TaskManager 1   TaskManager 2")
            for label, read in (
                ("scrape both", lambda: [_get(url) for url in scrapes]),
                ("GET /jobs/<id>", lambda: _get(f"{rest}/jobs/{job_id}")),
                ("dashboard job page", lambda: _job_page(rest, job_id)),
                (
                    "overview + TMs",
                    lambda: (_get(f"{rest}/jobs/overview"), _get(f"{rest}/taskmanagers")),
                ),
            ):
                started = time.perf_counter()
                cost = _measure(pids, args.reads, read)
                wall_s = (time.perf_counter() - started) / args.reads
                # What the processes spend anyway (the slow job) is taken off.
                net = [c - rate * wall_s for c, rate in zip(cost, idle_per_s, strict=True)]
                print(f"{label:18s} {net[0]:12.2f} {net[1]:18.2f} {net[2]:15.2f}")
            print(
                f"idle rate, CPU ms per second: {', '.join(f'{r:.1f}' for r in idle_per_s)} "
                f"({args.reads} reads each; cores: {os.cpu_count()})"
            )
            client.cancel().result()
        finally:
            register_executor(None)


if __name__ == "__main__":
    main()
