"""A MiniCluster shared by the cluster tests: real Dispatcher, ResourceManager and
JobMasters over gRPC, TaskManagers leased from the session's SparkContext."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from weir.client.mini_cluster import MiniCluster
from weir.core.executor import register_executor

# Short heartbeats so a killed TaskManager is noticed within seconds; a long idle timeout
# so TaskManagers stay leased between tests (leasing takes seconds).
CLUSTER_CONFIG = {
    # Three TaskManagers (jobs up to parallelism 3) of the shared session's task slots;
    # the others stay free for the compat cluster and the ResourceManager suite, which
    # run while this cluster keeps its leases (tests/conftest.py counts them).
    "resourcemanager.taskmanager.max": "3",
    "heartbeat.interval": "500 ms",
    "heartbeat.timeout": "6 s",
    "slot.request.timeout": "60 s",
    "resourcemanager.taskmanager-timeout": "10 min",
    # The REST API, the dashboard and Prometheus endpoints on any free port: the REST,
    # dashboard and metrics tests read this cluster's.
    "rest.port": "0",
    "metrics.reporter.prom.factory.class": (
        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
    ),
    "metrics.reporter.prom.port": "0",
    # Queryable state: the proxy on the master and a server on every TaskManager, each on
    # any free loopback port (the queryable state tests read a running job's state).
    "queryable-state.enable": "true",
    "queryable-state.proxy.ports": "0",
    "queryable-state.server.ports": "0",
}


# TaskManagers keep taskmanager.log and taskmanager.out in a directory of the session,
# rolled over small enough that a test can print past the cap.
TASK_MANAGER_LOG_CAP = 256 * 1024
TASK_MANAGER_LOG_BACKUPS = 2


@pytest.fixture(scope="session")
def mini_cluster(spark_context, tmp_path_factory) -> Iterator[MiniCluster]:
    config = {
        **CLUSTER_CONFIG,
        "env.log.dir": str(tmp_path_factory.mktemp("task-manager-logs")),
        "env.log.max-file-size": str(TASK_MANAGER_LOG_CAP),
        "env.log.max": str(TASK_MANAGER_LOG_BACKUPS),
    }
    cluster = MiniCluster(config, spark_context=spark_context).start()
    yield cluster
    cluster.close()


@pytest.fixture
def cluster(mini_cluster) -> Iterator[MiniCluster]:
    """The shared MiniCluster, registered as the executor of ``env.execute()``."""
    register_executor(mini_cluster.executor())
    yield mini_cluster
    register_executor(None)


@pytest.fixture(autouse=True)
def _leave_the_shared_cluster_idle(request) -> Iterator[None]:
    """After a test that used the shared cluster: cancel the jobs it started and left
    running, and wait until they have ended, so that one failed test cannot starve the
    next ones of slots. Jobs of module-scoped fixtures (started before the test) are left
    alone. A job that will not end fails this test's teardown."""
    if "mini_cluster" not in request.fixturenames:
        yield
        return
    dispatcher = request.getfixturevalue("mini_cluster").dispatcher
    if dispatcher is None:
        yield
        return
    before = {job.job_id for job in dispatcher.list_jobs(include_terminated=False)}
    yield

    def left_running() -> list[str]:
        jobs = dispatcher.list_jobs(include_terminated=False)
        return [job.job_id for job in jobs if job.job_id not in before]

    for job_id in left_running():
        dispatcher.cancel_job(job_id)
    deadline = time.monotonic() + 60
    while left := left_running():
        if time.monotonic() > deadline:
            msg = f"jobs {left} of this test did not end within 60 s of being cancelled"
            raise AssertionError(msg)
        time.sleep(0.1)
