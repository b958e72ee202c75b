"""Killing the Spark Python worker that hosts a TaskExecutor fails the job with a
TaskManager-lost cause; the ResourceManager notices and the cluster keeps serving."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time

import pytest

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, WatermarkStrategy
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


def test_a_stopped_task_manager_is_left_alone_once_lost_and_the_job_recovers(cluster, caplog):
    """SIGSTOP: the TaskManager neither answers nor dies. Once the ResourceManager declares
    it lost (heartbeat.timeout), the JobMaster makes no more calls to it (a cancel there
    could only time out) and redeploys the job on the other TaskManager."""
    config = Configuration()
    config.set_string("restart-strategy.type", "fixed-delay")
    config.set_string("restart-strategy.fixed-delay.attempts", "3")
    config.set_string("restart-strategy.fixed-delay.delay", "0 ms")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    (
        env.from_source(
            NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "endless"
        )
        .map(lambda x: x + 1)
        .disable_chaining()  # three tasks in the one slot: two still run when one is lost
        .add_sink(lambda x: None)
    )
    client = env.execute_async("stopped")
    job_id = str(client.get_job_id())

    with DispatcherGateway(cluster.address) as gateway:

        def running_on():
            tasks = gateway.job_details(job_id).tasks
            hosts = {t.resource_id for t in tasks}
            running = tasks and all(t.state == "RUNNING" for t in tasks)
            return next(iter(hosts)) if running and len(hosts) == 1 else None

        resource_id = _await(running_on, "the job to run")
        (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == resource_id]
        caplog.set_level(logging.INFO, logger="weir.jobmanager.scheduler")
        caplog.set_level(logging.INFO, logger="weir.jobmanager.task_canceller")
        stopped_at = time.monotonic()
        os.kill(victim.pid, signal.SIGSTOP)
        try:

            def recovered():
                details = gateway.job_details(job_id)
                return (
                    details.status == "RUNNING"
                    and all(t.state == "RUNNING" and t.attempt_number >= 1 for t in details.tasks)
                    and all(t.resource_id != resource_id for t in details.tasks)
                )

            _await(recovered, "the job to run again elsewhere", timeout=120)
            print(f"SIGSTOP to running again: {time.monotonic() - stopped_at:.1f} s")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim.pid, signal.SIGCONT)
        gateway.cancel_job(job_id)
        _await(lambda: gateway.job_details(job_id).status == "CANCELED", "the job to cancel")
    # No call went to the lost TaskManager: none had to time out to be given up.
    assert "not delivered" not in caplog.text
