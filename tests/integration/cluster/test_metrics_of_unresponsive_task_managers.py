"""``GET /jobs/{jobid}`` while a TaskManager is stopped (SIGSTOP: it neither answers nor
dies, and is not declared lost): the REST endpoint asks it once, serves its last values
marked ``stale`` on every call without waiting for it again, and serves fresh values once
it answers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from test_checkpoint_recovery import await_condition

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.mini_cluster import MiniCluster
from weir.common import WatermarkStrategy
from weir.core.executor import register_executor
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

# Calls made while the TaskManager is stopped, beyond the first that finds it stale.
CALLS = 10


@pytest.fixture(scope="module")
def patient_cluster(spark_context) -> Iterator[MiniCluster]:
    """Two TaskManagers and a heartbeat timeout far beyond the test: a stopped TaskManager
    stays registered, unreachable, for as long as the test keeps it stopped."""
    config = {
        "resourcemanager.taskmanager.max": "2",
        "heartbeat.interval": "500 ms",
        "heartbeat.timeout": "10 min",
        "slot.request.timeout": "60 s",
        "rest.port": "0",
    }
    cluster = MiniCluster(config, spark_context=spark_context).start()
    yield cluster
    cluster.close(stop_spark=False)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture
def running_job(patient_cluster: MiniCluster) -> Iterator[str]:
    """An endless job at parallelism 2, one subtask of each vertex on each TaskManager."""
    register_executor(patient_cluster.executor())
    try:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        (
            env.from_source(
                NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "endless"
            )
            .rebalance()
            .map(lambda x: x + 1)
            .add_sink(lambda x: None)
        )
        job_id = str(env.execute_async("metrics while stopped").get_job_id())
    finally:
        register_executor(None)
    yield job_id
    with DispatcherGateway(patient_cluster.address) as gateway:
        gateway.cancel_job(job_id)
        await_condition(
            lambda: gateway.job_details(job_id).status == "CANCELED", "the job to cancel"
        )


def _stale(job: dict[str, Any]) -> set[str]:
    return {v["id"] for v in job["vertices"] if v["metrics"]["stale"]}


def _complete(job: dict[str, Any]) -> bool:
    """Every subtask's values are there (Flink's ``*-complete`` flags)."""
    return all(
        v["metrics"]["read-records-complete"] and v["metrics"]["write-records-complete"]
        for v in job["vertices"]
    )


def test_a_stopped_task_manager_is_asked_once_and_served_stale(
    patient_cluster: MiniCluster, running_job: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{patient_cluster.rest_url}/jobs/{running_job}"
    with DispatcherGateway(patient_cluster.address) as gateway:

        def both_reporting() -> bool:
            details = gateway.job_details(running_job)
            if not all(t.state == "RUNNING" for t in details.tasks):
                return False
            job = _get(url)
            return not _stale(job) and _complete(job)

        await_condition(both_reporting, "both TaskManagers to report the job's metrics")
        tasks = gateway.job_details(running_job).tasks
        victim = next(t.resource_id for t in tasks if t.subtask_index == 0)
        on_victim = {t.vertex_id for t in tasks if t.resource_id == victim}
        (info,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim]

    asked = f"asking TaskManager {victim} for its metrics"
    with caplog.at_level(logging.DEBUG, logger="weir.rest.metric_fetcher"):
        caplog.clear()
        os.kill(info.pid, signal.SIGSTOP)
        try:

            def stale_answer() -> dict[str, Any] | None:
                job = _get(url)
                return job if _stale(job) else None

            first = await_condition(
                stale_answer, "the stopped TaskManager's values to be marked stale"
            )
            answers = [_get(url) for _ in range(CALLS)]
            attempts = [r for r in caplog.records if r.getMessage() == asked]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(info.pid, signal.SIGCONT)

    # One fetch at most went to the stopped TaskManager, whatever the number of calls: it
    # stayed outstanding, and no call waited for it again.
    assert len(attempts) <= 1, [r.getMessage() for r in attempts]
    for job in [first, *answers]:
        # Exactly the vertices with a subtask there are stale, and their values are the
        # last it sent, not missing ones.
        assert _stale(job) == on_victim
        assert _complete(job)
        assert job["state"] == "RUNNING"
    # It answers the outstanding fetch once it runs again: fresh values, and more of them.
    await_condition(lambda: not _stale(_get(url)), "fresh values from the resumed TaskManager")
