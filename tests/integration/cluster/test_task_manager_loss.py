"""Killing the Spark Python worker that hosts a TaskExecutor fails the job with a
TaskManager-lost cause; the ResourceManager notices and the cluster keeps serving."""

from __future__ import annotations

import os
import signal
import time

import pytest

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import WatermarkStrategy
from weir.core.errors import JobExecutionError
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark


def _await(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_task_manager_fails_the_job_and_the_cluster_serves_on(cluster):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    (
        env.from_source(
            NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "endless"
        )
        .map(lambda x: x + 1)
        .add_sink(lambda x: None)
    )
    client = env.execute_async("endless")

    with DispatcherGateway(cluster.address) as gateway:

        def running_on():
            details = gateway.job_details(str(client.get_job_id()))
            tasks = [t for t in details.tasks if t.state == "RUNNING"]
            return tasks[0].resource_id if tasks else None

        resource_id = _await(running_on, "the job to run")
        (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == resource_id]
        os.kill(victim.pid, signal.SIGKILL)

        with pytest.raises(JobExecutionError) as info:
            client.get_job_execution_result().result()
        assert "TaskManager" in info.value.cause and "lost" in info.value.cause
        assert resource_id in info.value.cause
        _await(
            lambda: resource_id not in {tm.resource_id for tm in gateway.list_task_managers()},
            "the ResourceManager to drop the lost TaskManager",
        )

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    assert sorted(
        env.from_collection([1, 2, 3]).rebalance().map(lambda x: -x).execute_and_collect()
    ) == [-3, -2, -1]
